"""The daemon follows its config file: servers added, changed and removed take effect
while it runs, and a connected ``mcpx serve`` host stays connected and is told.

A real daemon (``daemon.configPoll`` 0.2 s) with the bundled demo server and the official
SDK's fixture server (1.23.3) as upstreams, the real CLI, and a raw stdio host on
``mcpx serve``. Every frame the daemon sends is checked against the host's revision when it
stops (``running_daemon``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import stdio_peer
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SETTINGS = {"daemon.configPoll": "0.2s"}
LIST_CHANGED = "notifications/resources/list_changed"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(tmp_path, {"sdk": sdk_entry("1.23.3")}, SETTINGS) as d:
        _FIRST[d.config] = json.loads(d.config.read_text())
        yield d


# Each daemon's config as it started: what every rewrite starts from.
_FIRST: dict[Path, dict[str, Any]] = {}


def _write(daemon: Daemon, servers: dict[str, Any], **extra: Any) -> None:
    doc = {**_FIRST[daemon.config], "mcpServers": servers}
    doc.update(extra)
    # Written whole, then renamed: the daemon never reads half a file.
    tmp = daemon.config.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(daemon.config)


def _servers(daemon: Daemon) -> dict[str, dict[str, Any]]:
    with daemon.http() as api:
        return {s["name"]: s for s in api.get("/v1/servers").json()["servers"]}


def _logged(daemon: Daemon, words: str) -> bool:
    return any(words in line["msg"] for line in daemon.log_lines())


def test_an_added_server_answers_and_a_connected_host_is_told(daemon: Daemon) -> None:
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as host:
        caps = host.initialize("2025-11-25")["capabilities"]
        assert caps["resources"]["listChanged"] is True
        _write(daemon, {"sdk": sdk_entry("1.23.3"), "demo": DEMO})
        wait_until(lambda: "demo" in _servers(daemon), message=lambda: _servers(daemon))
        # The same host, on the same connection, reaches the new server; the change
        # was pushed when it applied, so before this answer.
        reply = host.request(
            2,
            "tools/call",
            {
                "name": "mcpx_call",
                "arguments": {"server": "demo", "tool": "echo", "arguments": {"text": "hot"}},
            },
            timeout=60,
        )
        assert reply["result"]["content"][0]["text"] == "hot", reply
        assert {"jsonrpc": "2.0", "method": LIST_CHANGED} in host.notifications
        listed = host.request(3, "resources/list", {})["result"]["resources"]
        assert any(r["uri"].startswith("mcpx://demo/") for r in listed), listed
    called = daemon.cli("call", "demo", "echo", "text=cli")
    assert called.returncode == 0 and called.stdout.strip() == "cli", called.stderr
    assert _logged(daemon, "reloaded")
    params: dict[str, str | int] = {"since": 0, "kind": "config.reloaded"}
    with daemon.http() as api, api.stream("GET", "/v1/events", params=params) as r:
        line = next(ln for ln in r.iter_lines() if ln.startswith("data:"))
    event = json.loads(line.removeprefix("data:"))
    assert event["kind"] == "config.reloaded", event
    assert event["data"]["added"] == ["demo"] and event["data"]["removed"] == [], event


def test_a_changed_entry_gets_a_new_instance_and_a_removed_one_is_unknown(daemon: Daemon) -> None:
    _write(daemon, {"sdk": sdk_entry("1.23.3"), "demo": DEMO})
    wait_until(lambda: "demo" in _servers(daemon))
    assert daemon.cli("call", "demo", "echo", "text=a").returncode == 0
    [before] = _servers(daemon)["demo"]["instances"]
    changed = {**DEMO, "env": {"MCPX_TEST_MARK": "2"}}
    _write(daemon, {"sdk": sdk_entry("1.23.3"), "demo": changed})
    wait_until(lambda: not _servers(daemon)["demo"]["instances"])  # retired
    assert daemon.cli("call", "demo", "echo", "text=b").returncode == 0
    [after] = _servers(daemon)["demo"]["instances"]
    assert after["pid"] != before["pid"]
    _write(daemon, {"demo": changed})
    wait_until(lambda: "sdk" not in _servers(daemon))
    gone = daemon.cli("call", "sdk", "echo", "text=x")
    assert gone.returncode == 4 and "sdk" in gone.stderr, gone.stderr


def test_a_busy_instance_of_a_removed_server_finishes_its_call(daemon: Daemon) -> None:
    replies: list[httpx.Response] = []

    def slow() -> None:
        with daemon.http() as api:
            body = {"server": "sdk", "tool": "slow", "arguments": {"seconds": 2}}
            replies.append(api.post("/v1/call", json=body, timeout=60))

    caller = threading.Thread(target=slow)
    caller.start()
    wait_until(lambda: any(i.get("inFlight") for i in _servers(daemon)["sdk"]["instances"]))
    _write(daemon, {"demo": DEMO})
    wait_until(lambda: "sdk" not in _servers(daemon))
    caller.join(timeout=60)
    [reply] = replies
    assert reply.status_code == 200 and reply.json()["content"][0]["text"] == "slept 2.0"


def test_a_file_that_does_not_load_changes_nothing_until_it_is_fixed(daemon: Daemon) -> None:
    daemon.config.write_text('{"mcpServers": {"demo": ')
    wait_until(lambda: _logged(daemon, "config not reloaded"))
    assert set(_servers(daemon)) == {"sdk"}
    with daemon.http() as api:  # (the CLI reads the file too, and would refuse it)
        body = {"server": "sdk", "tool": "echo", "arguments": {"text": "still"}}
        assert api.post("/v1/call", json=body).json()["content"][0]["text"] == "still"
    _write(daemon, {"sdk": {"command": "x", "url": "http://127.0.0.1:1/"}})  # refused
    wait_until(lambda: sum("config not reloaded" in ln["msg"] for ln in daemon.log_lines()) >= 2)
    assert set(_servers(daemon)) == {"sdk"}
    _write(daemon, {"sdk": sdk_entry("1.23.3"), "demo": DEMO})
    wait_until(lambda: set(_servers(daemon)) == {"sdk", "demo"})


def test_changed_settings_wait_for_a_restart_and_say_so(daemon: Daemon) -> None:
    settings = {**_FIRST[daemon.config]["settings"], "pool.max": 7}
    _write(daemon, {"sdk": sdk_entry("1.23.3"), "demo": DEMO}, settings=settings)
    wait_until(lambda: _logged(daemon, "take effect at `mcpx restart`"))
    assert any("pool.max" in ln["msg"] for ln in daemon.log_lines())
    assert "demo" in _servers(daemon)  # the servers applied all the same


# -- resource subscriptions held upstream across a change ---------------------------------

QUIET_SERVER = Path(__file__).parents[1] / "fixtures" / "quiet_server.py"
QUIET = {"command": sys.executable, "args": [str(QUIET_SERVER)]}
NOTE = "quiet://note"
WATCHED = f"mcpx://quiet/{quote(NOTE, safe='')}"


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[tuple[Daemon, list[dict[str, Any]]]]:
    """A daemon whose quiet server's note is watched (``/v1/events?uri=``) from the start;
    quiet_server acknowledges no subscription, so mcpx polls the note every 300 ms."""
    servers = {"sdk": sdk_entry("1.23.3"), "quiet": QUIET}
    settings = {**SETTINGS, "protoMessages.listMaxAge": "300ms", "transport.sseKeepAlive": "500ms"}
    with running_daemon(tmp_path, servers, settings) as d:
        _FIRST[d.config] = json.loads(d.config.read_text())
        got: list[dict[str, Any]] = []
        stop = threading.Event()
        reader = threading.Thread(target=_follow, args=(d, got, stop), daemon=True)
        reader.start()
        wait_until(lambda: _polling(d) >= 1)
        yield d, got
        stop.set()
        reader.join(timeout=30)


def _follow(daemon: Daemon, got: list[dict[str, Any]], stop: threading.Event) -> None:
    params = {"uri": WATCHED}
    with daemon.http() as api, api.stream("GET", "/v1/events", params=params) as stream:
        for line in stream.iter_lines():  # keep-alives every few seconds bound each wait
            if line.startswith("data: "):
                got.append(json.loads(line[len("data: ") :]))
            if stop.is_set():
                return


def _polling(daemon: Daemon) -> int:
    said = f"acknowledged no subscription to ['{NOTE}']"
    return sum(said in line["msg"] for line in daemon.log_lines())


def test_a_watched_resource_stays_watched_when_its_server_changes(
    watching: tuple[Daemon, list[dict[str, Any]]],
) -> None:
    daemon, got = watching
    [before] = _servers(daemon)["quiet"]["instances"]
    _write(daemon, {"sdk": sdk_entry("1.23.3"), "quiet": {**QUIET, "env": {"MARK": "2"}}})
    # The subscription moves to an instance of the new entry at once (nobody called it).
    wait_until(lambda: _polling(daemon) >= 2)
    [after] = _servers(daemon)["quiet"]["instances"]
    assert after["pid"] != before["pid"]

    def told() -> bool:
        if any(e["kind"] == "resource.updated" for e in got):
            return True
        # The new instance's first read of the note is its baseline, and nothing shows
        # when it was made: an edit before it is no change. So the note is edited again
        # (read every 300 ms) until an edit is told.
        with daemon.http() as api:
            body = {"server": "quiet", "tool": "edit_note", "arguments": {}}
            assert api.post("/v1/call", json=body, timeout=60).status_code == 200
        return False

    wait_until(told, interval=1, message=lambda: f"no resource.updated in {got}")


def test_removing_a_watched_server_leaves_the_daemon_serving(
    watching: tuple[Daemon, list[dict[str, Any]]],
) -> None:
    daemon, _ = watching
    _write(daemon, {"sdk": sdk_entry("1.23.3")})
    wait_until(lambda: "quiet" not in _servers(daemon))
    # Nothing to wait for: the daemon must NOT fail meanwhile, where the subscription's
    # guard would have tried the gone server.
    time.sleep(1.5)
    assert daemon.proc.poll() is None
    assert daemon.cli("call", "sdk", "echo", "text=alive").stdout.strip() == "alive"
