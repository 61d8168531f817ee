"""Fixtures for the Streamable HTTP obligation tests (S-HTTP) of the daemon's /mcp endpoint.

One real daemon for the whole package (``daemon``, package-scoped, so it starts once for
``test_http_messages.py`` and ``test_http_streams.py`` alike): the demo upstream (``slow`` reports
progress per step and logs when done) and the conformance fixture as a pass-through upstream
(its ``test_trigger_tool_change`` makes mcpx push ``tools/list_changed`` to legacy sessions'
GET streams). ``transport.sseKeepAlive`` is 200 ms, so a slow answer becomes a stream
quickly. The daemon's own trace of every frame it sent is checked at teardown.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest

from obligations.streamable_http.helpers import JSON_ONLY
from support.daemon import Daemon, running_daemon
from support.peers import FIXTURES, peer_python


@pytest.fixture(scope="package")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "conformance": {
            "command": str(peer_python("2.3.0")),
            "args": [str(FIXTURES / "conformance_server.py"), "--transport", "stdio"],
            "protocol": "force-initialize",
        },
    }
    settings = {"transport.sseKeepAlive": "200ms", "mcp.passthrough": ["conformance"]}
    with running_daemon(tmp_path_factory.mktemp("obl-http"), servers, settings) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    # JSON unless a test asks for streams: a slow reply to "*/*" may become a stream.
    with httpx.Client(base_url=daemon.info["url"], timeout=60, headers=JSON_ONLY) as client:
        yield client
