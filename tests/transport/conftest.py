"""Fixtures for the transport tests: the anyio backend, scripts, and a live HTTP server.

Everything is real: child processes for stdio, a uvicorn server on 127.0.0.1 (ephemeral
port, background thread) for HTTP. Waits are bounded with ``anyio.fail_after``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from mcpx.transport import http_client
from transport.http_server import TestServer, serve

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def script() -> ScriptCommand:
    return ScriptCommand()


class ScriptCommand:
    """``script("echo_server")`` → (command, args) running that script unbuffered."""

    def __call__(self, name: str, *args: str) -> tuple[str, list[str]]:
        return sys.executable, ["-u", str(SCRIPTS / f"{name}.py"), *args]


@pytest.fixture(scope="module")
def server() -> Iterator[TestServer]:
    with serve() as running:
        yield running


@pytest.fixture
def http(server: TestServer) -> Iterator[TestServer]:
    """The module's server, with its records and switches reset for this test."""
    server.reset()
    yield server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """A client from the production factory, closed after the test."""
    async with http_client() as c:
        yield c
