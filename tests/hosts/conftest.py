"""Fixtures for the host tests: a real daemon on the demo upstream, and what the demo itself
serves (asked directly, without mcpx), for the hosts' answers to be compared with.

The daemon is ``support.daemon.running_daemon``: every frame it sends a host is traced and
checked strictly against that revision's schema when the module's daemon stops.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon
from support.hosts import DEMO_README, ECHO_TEXT, PROMPT_ARGS, prompt_lines
from support.peers import stdio_peer

DEMO = [sys.executable, "-m", "mcpx", "demo-server"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": DEMO[0], "args": DEMO[1:]}}
    with running_daemon(tmp_path_factory.mktemp("hosts"), servers) as d:
        yield d


@pytest.fixture(scope="session")
def demo_direct() -> dict[str, Any]:
    """The demo upstream's own answers (2025-11-25, raw JSON-RPC over its stdio): the echo
    text, the ``hello`` prompt's messages (as hosts report them), the readme's contents."""
    with stdio_peer(DEMO) as peer:
        peer.initialize("2025-11-25")
        echo = peer.request(1, "tools/call", {"name": "echo", "arguments": {"text": ECHO_TEXT}})
        hello = peer.request(2, "prompts/get", {"name": "hello", "arguments": PROMPT_ARGS})
        readme = peer.request(3, "resources/read", {"uri": DEMO_README})
    for reply in (echo, hello, readme):
        assert "result" in reply, reply
    contents = readme["result"]["contents"]
    assert contents and all(c.get("text") for c in contents), readme
    return {
        "echo": "".join(c["text"] for c in echo["result"]["content"] if c["type"] == "text"),
        "prompt": prompt_lines(hello["result"]["messages"]),
        "readme": contents,
    }
