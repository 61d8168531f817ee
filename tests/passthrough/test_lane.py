"""What a stdio host's calls sent ahead are judged by is kept from one call to the next
(``server._send_ahead.Lane``, ``ops.Route``), and judged again once anything it was
judged from changes: the session (its log level), the servers configured (a filter
added by a reload) and the catalogue (``Catalogue.version``). A real daemon, the bundled
demo server as a pass-through upstream in either era, a raw stdio host on ``mcpx serve``;
every frame the daemon sends is checked against the host's revision when it stops.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx.server import Conn
from support.daemon import Daemon, running_daemon
from support.peers import StdioPeer, stdio_peer
from support.waiting import wait_until

REV = "2025-11-25"
DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SETTINGS = {"mcp.passthrough": ["demo"], "log.level": "debug", "daemon.configPoll": "0.2s"}

_ids = iter(range(1, 100000))


# The upstream in either era: a legacy one takes the call as the host wrote it, a
# 2026-07-28 one with the _meta its request restates.
@pytest.fixture(params=["force-initialize", "force-discover"], ids=["legacy", "modern"])
def demo(request: pytest.FixtureRequest) -> dict[str, Any]:
    return {**DEMO, "protocol": request.param}


@pytest.fixture
def daemon(tmp_path: Path, demo: dict[str, Any]) -> Iterator[Daemon]:
    with running_daemon(tmp_path, {"demo": demo}, SETTINGS) as d:
        yield d


@pytest.fixture
def host(daemon: Daemon) -> Iterator[StdioPeer]:
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer:
        peer.initialize(REV)
        # Listed first: the owner of a pass-through tool is known from the catalogue.
        names = [t["name"] for t in _request(peer, "tools/list")["result"]["tools"]]
        assert "slow" in names and "echo" in names, names
        yield peer


def _request(peer: StdioPeer, method: str, params: dict[str, Any] | None = None) -> Any:
    return peer.request(next(_ids), method, params or {}, timeout=60)


def _call(peer: StdioPeer, name: str, arguments: dict[str, Any]) -> Any:
    return _request(peer, "tools/call", {"name": name, "arguments": arguments})


def _sent_ahead(daemon: Daemon) -> int:
    return sum("sent ahead" in line["msg"] for line in daemon.log_lines())


def _logs(peer: StdioPeer) -> list[str]:
    return [
        str(n["params"]["data"])
        for n in peer.notifications
        if n["method"] == "notifications/message"
    ]


def test_a_log_level_set_between_calls_governs_the_calls_after_it(
    daemon: Daemon, host: StdioPeer
) -> None:
    slow = {"seconds": 0.001, "steps": 1}
    assert _request(host, "logging/setLevel", {"level": "info"})["result"] == {}
    before = _sent_ahead(daemon)
    assert _call(host, "slow", slow)["result"]["content"][0]["text"].startswith("slept")
    wait_until(lambda: any("slow: slept" in m for m in _logs(host)), message=lambda: _logs(host))
    # Above info now: the next call's info line is not the host's to hear.
    assert _request(host, "logging/setLevel", {"level": "error"})["result"] == {}
    heard = len(_logs(host))
    assert _call(host, "slow", slow)["result"]["content"][0]["text"].startswith("slept")
    assert _request(host, "logging/setLevel", {"level": "info"})["result"] == {}
    assert _call(host, "slow", slow)["result"]["content"][0]["text"].startswith("slept")
    wait_until(lambda: len(_logs(host)) == heard + 1, message=lambda: _logs(host))
    assert _sent_ahead(daemon) == before + 3  # each went ahead, under the level of its time


def test_a_filter_added_by_a_reload_refuses_the_next_call_of_the_same_session(
    daemon: Daemon, host: StdioPeer, demo: dict[str, Any]
) -> None:
    before = _sent_ahead(daemon)
    assert _call(host, "echo", {"text": "one"})["result"]["content"][0]["text"] == "one"
    assert _sent_ahead(daemon) == before + 1
    doc = json.loads(daemon.config.read_text())
    doc["mcpServers"]["demo"] = {**demo, "mcpx": {"excludeTools": ["echo"]}}
    tmp = daemon.config.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(daemon.config)  # whole, then renamed: never read half written

    def hidden() -> bool:
        with daemon.http() as api:
            servers = api.get("/v1/servers").json()["servers"]
        return any(s["name"] == "demo" and s.get("filters") for s in servers)

    wait_until(hidden)
    refused = _call(host, "echo", {"text": "two"})
    assert "error" in refused and "echo" in refused["error"]["message"], refused
    assert _sent_ahead(daemon) == before + 1  # judged again: nothing went upstream
    assert _call(host, "add", {"a": 1, "b": 2})["result"]["content"][0]["text"] == "3"
    assert _sent_ahead(daemon) == before + 2  # what the filter leaves still goes ahead


def test_a_connection_counts_every_change_made_to_it() -> None:
    conn = Conn(transport="stdio")
    made = conn.changes
    conn.log_level = "info"
    assert conn.changes == made + 1
    conn.initialize(REV, {"capabilities": {}, "clientInfo": {"name": "h", "version": "1"}})
    assert conn.changes > made + 1
    assert Conn(transport="stdio").changes == made  # counted per connection
