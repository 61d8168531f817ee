"""Fixtures for the client-transport obligation tests (C-LC, C-STDIO, C-HTTP, C-MSG, C-ERR):
what mcpx owes the upstream servers it is a client of, proven against real processes and
sockets.

Two recording fakes stand in for upstreams: a stdio server (``FAKE_STDIO`` below, written
to a file and run as a process) that appends every raw line mcpx writes to its stdin to a
log, and a Streamable HTTP server (starlette + uvicorn on 127.0.0.1, in a thread; built in
helpers.py) that records every HTTP request with its headers and body. Both are set up
once for the whole directory (package scope). Every frame mcpx sends is also validated
strictly against its revision (the ``sent_frames`` fixture, in tests/conftest.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpx.config import ServerConfig
from obligations.client_transport.helpers import HttpFake, serve_fake
from support.upstream import stdio_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the recording stdio fake ---------------------------------------------------------------

FAKE_STDIO = (Path(__file__).parents[2] / "fixtures" / "recording_fake.py").read_text()


@pytest.fixture(scope="package")
def fake_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fake") / "fake_stdio.py"
    path.write_text(FAKE_STDIO)
    return path


@dataclass
class Fake:
    """One run of the stdio fake: its config and the raw stdin log."""

    server: ServerConfig
    log: Path

    def raw_lines(self) -> list[bytes]:
        data = self.log.read_bytes() if self.log.exists() else b""
        return [line for line in data.split(b"\n") if line and not line.startswith(b"#")]

    def frames(self) -> list[Any]:
        return [json.loads(line) for line in self.raw_lines()]

    def methods(self) -> list[str]:
        return [f["method"] for f in self.frames() if "method" in f]


@pytest.fixture
def fake(fake_script: Path, tmp_path: Path) -> Any:
    count = 0

    def make(mode: str, arg: str = "") -> Fake:
        nonlocal count
        count += 1
        log = tmp_path / f"stdin-{count}.log"
        argv = [sys.executable, "-u", str(fake_script), str(log), mode, arg]
        return Fake(stdio_server(f"fake-{mode}", argv), log)

    return make


# -- the recording HTTP fake --------------------------------------------------------------------


@pytest.fixture(scope="package")
def http_fake() -> Iterator[HttpFake]:
    with serve_fake() as running:
        yield running
