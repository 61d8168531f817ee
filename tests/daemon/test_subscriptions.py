"""Resource subscriptions end to end: hosts of both eras, server-everything upstream.

server-everything sends ``notifications/resources/updated`` every 5 s for the URIs its
session subscribed, once ``toggle-subscriber-updates`` is called. A legacy host (an HTTP
session, updates on its GET stream) and a 2026-07-28 host (a listen stream) watch the
same resource: one upstream subscription, both hear of it under their own names.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.modern import modern_headers, modern_meta, modern_request
from support.peers import everything_server_command
from support.waiting import wait_until

META = modern_meta(client=None)
DOC = "demo://resource/static/document/architecture.md"
WATCHED = f"mcpx://everything/{quote(DOC, safe='')}"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    argv = everything_server_command("stdio")
    servers = {
        "everything": {"command": argv[0], "args": argv[1:]},
        "fixture": sdk_entry("1.23.3"),  # declares no resources.subscribe
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    }
    with running_daemon(tmp_path_factory.mktemp("subs"), servers) as d:
        yield d


_TOGGLED: set[int] = set()


def _updates_on(daemon: Daemon) -> None:
    """Turn server-everything's simulated updates on, once: the tool toggles them."""
    if id(daemon) in _TOGGLED:
        return
    done = daemon.cli("call", "everything", "toggle-subscriber-updates")
    assert done.returncode == 0, done.stderr
    _TOGGLED.add(id(daemon))


def _legacy_session(mcp: httpx.Client, rev: str = "2025-11-25") -> dict[str, str]:
    init: dict[str, Any] = {"protocolVersion": rev, "capabilities": {}}
    init["clientInfo"] = {"name": "t", "version": "1"}
    frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
    r = mcp.post("/mcp", json=frame)
    return {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": rev}


def _subscribe(mcp: httpx.Client, headers: dict[str, str], uri: str = WATCHED) -> Any:
    frame = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}
    return mcp.post("/mcp", json=frame, headers=headers).json()


def _subscriptions(daemon: Daemon) -> dict[str, list[str]]:
    with daemon.http() as api:
        return {s["name"]: s["subscriptions"] for s in api.get("/v1/servers").json()["servers"]}


def _collect(lines: Iterator[str], got: list[dict[str, Any]], want: int) -> None:
    for line in lines:
        if line.startswith("data: "):
            got.append(json.loads(line[len("data: ") :]))
            if len(got) >= want:
                return


@pytest.mark.obligation("S-SUB-3", "S-SUB-4")
def test_both_eras_hear_updates_through_one_upstream_subscription(daemon: Daemon) -> None:
    url = daemon.info["url"]
    init: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {}}
    init["clientInfo"] = {"name": "t", "version": "1"}
    legacy_got: list[dict[str, Any]] = []
    modern_got: list[dict[str, Any]] = []
    unowned = "mcpx://fixture/fixture%3A%2F%2Fstatic"
    with httpx.Client(base_url=url, timeout=30) as mcp:
        r = mcp.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        )
        sid = r.headers["mcp-session-id"]
        headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        sub = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/subscribe",
            "params": {"uri": WATCHED},
        }
        assert mcp.post("/mcp", json=sub, headers=headers).json()["result"] == {}
        # A URI whose server cannot deliver updates: still agreed (a standing interest).
        sub_unowned = {**sub, "id": 3, "params": {"uri": unowned}}
        assert mcp.post("/mcp", json=sub_unowned, headers=headers).json()["result"] == {}
        assert _subscriptions(daemon)["everything"] == [DOC]
        assert _subscriptions(daemon)["fixture"] == []

        wanted = {"notifications": {"resourceSubscriptions": [WATCHED, unowned]}}
        listen = modern_request(9, "subscriptions/listen", wanted, META)
        listen_headers = modern_headers("subscriptions/listen", accept=BOTH)
        with (
            httpx.Client(base_url=url, timeout=30) as other,
            other.stream("POST", "/mcp", json=listen, headers=listen_headers) as modern,
            mcp.stream("GET", "/mcp", headers={**headers, "Accept": "text/event-stream"}) as legacy,
        ):
            modern_lines = modern.iter_lines()
            _collect(modern_lines, modern_got, 1)
            ack = modern_got[0]["params"]
            # Only the URI whose updates will arrive is acknowledged.
            assert ack["notifications"] == {"resourceSubscriptions": [WATCHED]}
            assert _subscriptions(daemon)["everything"] == [DOC]  # still one upstream
            _updates_on(daemon)
            readers = [
                threading.Thread(target=_collect, args=(modern_lines, modern_got, 2), daemon=True),
                threading.Thread(
                    target=_collect, args=(legacy.iter_lines(), legacy_got, 1), daemon=True
                ),
            ]
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join(timeout=20)
        # The listen stream ended: its watch is released; the legacy one holds on.
        assert modern_got[1]["method"] == "notifications/resources/updated"
        assert modern_got[1]["params"]["uri"] == WATCHED
        assert modern_got[1]["params"]["_meta"][SUB_ID] == 9
        assert legacy_got[0] == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": WATCHED},
        }
        unsub = {**sub, "id": 4, "method": "resources/unsubscribe"}
        assert mcp.post("/mcp", json=unsub, headers=headers).json()["result"] == {}
        wait_until(lambda: _subscriptions(daemon)["everything"] == [])
        # The warning said why the other URI gets nothing.
        warned = [
            line for line in daemon.log_lines() if "no updates will be delivered" in line["msg"]
        ]
        assert any("fixture did not declare resources.subscribe" in w["msg"] for w in warned)


def test_a_session_that_ends_releases_its_subscriptions(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = _legacy_session(mcp, "2025-06-18")
        _subscribe(mcp, headers)
        assert _subscriptions(daemon)["everything"] == [DOC]
        assert mcp.delete("/mcp", headers=headers).status_code == 200
        wait_until(lambda: _subscriptions(daemon)["everything"] == [])


@pytest.mark.obligation("C-LC-11")
def test_an_events_stream_naming_a_uri_watches_it_for_its_life(daemon: Daemon) -> None:
    got: list[dict[str, Any]] = []
    transport = httpx.HTTPTransport(uds=daemon.info["socket"])
    with (
        httpx.Client(transport=transport, base_url="http://mcpx", timeout=30) as api,
        api.stream("GET", "/v1/events", params={"uri": WATCHED}) as stream,
    ):
        lines = stream.iter_lines()
        _collect(lines, got, 1)
        watching = got[0]
        assert watching["kind"] == "resource.watching"
        assert watching["data"] == {"uri": WATCHED, "subscribed": True, "reason": None}
        assert _subscriptions(daemon)["everything"] == [DOC]
        _updates_on(daemon)
        reader = threading.Thread(target=_collect, args=(lines, got, 2), daemon=True)
        reader.start()
        reader.join(timeout=20)
    assert got[1]["kind"] == "resource.updated" and got[1]["uri"] == DOC
    # The stream closed: the subscription is released.
    wait_until(lambda: _subscriptions(daemon)["everything"] == [])
    # A URI nobody can deliver updates for says why, first.
    with (
        daemon.http() as api,
        api.stream(
            "GET", "/v1/events", params={"uri": "mcpx://fixture/fixture%3A%2F%2Fstatic"}
        ) as stream,
    ):
        got = []
        _collect(stream.iter_lines(), got, 1)
    assert got[0]["data"]["subscribed"] is False
    assert "did not declare resources.subscribe" in got[0]["data"]["reason"]


def test_an_instance_that_dies_holding_subscriptions_is_replaced(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = _legacy_session(mcp)
        _subscribe(mcp, headers)

        def pids() -> list[int]:
            with daemon.http() as api:
                servers = api.get("/v1/servers").json()["servers"]
            found = next(s for s in servers if s["name"] == "everything")["instances"]
            return [i["pid"] for i in found if i["state"] == "ready" and i["pid"]]

        [before] = pids()
        # The upstream process the daemon started for this test's daemon: ended by its PID.
        os.kill(before, signal.SIGKILL)
        wait_until(lambda: bool(pids()) and pids()[0] != before)
        assert _subscriptions(daemon)["everything"] == [DOC]
        # The new instance was given the subscription: its updates reach the session.
        done = daemon.cli("call", "everything", "toggle-subscriber-updates")
        assert done.returncode == 0, done.stderr
        got: list[dict[str, Any]] = []
        with mcp.stream(
            "GET", "/mcp", headers={**headers, "Accept": "text/event-stream"}
        ) as stream:
            reader = threading.Thread(
                target=_collect, args=(stream.iter_lines(), got, 1), daemon=True
            )
            reader.start()
            reader.join(timeout=20)
        assert got and got[0]["params"]["uri"] == WATCHED
        mcp.delete("/mcp", headers=headers)
