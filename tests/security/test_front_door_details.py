"""Defect 6 of issue 18 (the front door's part): the smaller things a hostile client found.

- A 405 says ``Allow``.
- A query value is read strictly by its type: ``refresh=1.0000000000000002`` is 400, not
  a silent true or false.
- ``/v1/events?since=<beyond the last event>`` replays nothing (live events only).
- ``/v1/events?server=nope`` (with or without ``uri``) is 404 unknown_server, watching
  nothing.
- A state dir that exists at 0755 is tightened to 0700.
"""

from __future__ import annotations

import json
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import Daemon, running_daemon

SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
FAST = {"transport.sseKeepAlive": "200ms"}
LIMIT = 60.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("details")
    (tmp / "state").mkdir(mode=0o755)  # as a user (or an older mcpx) may have left it
    (tmp / "state").chmod(0o755)
    with running_daemon(tmp, SERVERS, FAST) as d:
        yield d


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/servers", {"GET", "HEAD"}),
        ("GET", "/v1/call", {"POST"}),
        ("PUT", "/openapi.json", {"GET", "HEAD"}),
        ("POST", "/health", {"GET", "HEAD"}),
    ],
)
def test_a_405_says_allow(daemon: Daemon, method: str, path: str, allow: set[str]) -> None:
    with daemon.http() as api:
        r = api.request(method, path, json={} if method in ("POST", "PUT") else None)
    assert r.status_code == 405, r.text
    assert {m.strip() for m in r.headers["allow"].split(",")} == allow
    assert r.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"refresh": "1.0000000000000002"}, "refresh"),
        ({"refresh": "maybe"}, "refresh"),
        ({"refresh": ""}, "refresh"),
        ({"since": "1.5"}, "since"),
        ({"since": "1e3"}, "since"),
        ({"since": "9" * 5000}, "since"),  # past int()'s digit limit: was a 500
    ],
    ids=[
        "refresh-float",
        "refresh-word",
        "refresh-empty",
        "since-float",
        "since-exp",
        "since-long",
    ],
)
def test_query_values_are_read_strictly(daemon: Daemon, params: dict[str, str], field: str) -> None:
    path = "/v1/events" if "since" in params else "/v1/tools"
    with daemon.http() as api:
        r = api.get(path, params=params)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_input" and error["details"]["field"] == field
    assert f"{field} " in error["message"]


@pytest.mark.parametrize("value", ["true", "false", "True", "1", "0"])
def test_booleans_as_people_write_them_pass(daemon: Daemon, value: str) -> None:
    with daemon.http() as api:
        assert api.get("/v1/tools", params={"refresh": value}).status_code == 200


def test_a_timeout_that_is_not_a_finite_number_is_refused(daemon: Daemon) -> None:
    with daemon.http() as api:
        r = api.get("/v1/tasks/nope/result", params={"wait": "1e999"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["details"]["field"] == "wait"


def _call(daemon: Daemon, text: str) -> None:
    with daemon.http() as api:
        r = api.post(
            "/v1/call", json={"server": "demo", "tool": "echo", "arguments": {"text": text}}
        )
    assert r.status_code == 200, r.text


def _next_event(lines: Iterator[str]) -> dict[str, str]:
    """The fields of the next event on an open stream (keep-alives every 200 ms)."""
    deadline = time.monotonic() + LIMIT
    fields: dict[str, str] = {}
    for line in lines:
        assert time.monotonic() < deadline, "no event in time"
        if line.startswith(":"):
            continue
        if not line:  # an event ends; the blank line after a keep-alive ends nothing
            if fields:
                return fields
            continue
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    raise AssertionError("the stream ended")


def test_since_beyond_the_last_event_replays_nothing(daemon: Daemon) -> None:
    _call(daemon, "before")  # history is not empty: a replay would show it
    params = {"since": str(10**18), "kind": "call.finished"}
    with daemon.http() as api, api.stream("GET", "/v1/events", params=params) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        assert next(lines).startswith(":")  # open and subscribed
        _call(daemon, "after")
        first = _next_event(lines)
    assert "id" in first and first["event"] == "call.finished", first
    # Replayed from the start, the calls come in order: "before" (at least) comes before
    # the one the stream gave first. A replay would have given the oldest first.
    earlier = 0
    with daemon.http() as api:
        params = {"since": "0", "kind": "call.finished"}
        with api.stream("GET", "/v1/events", params=params) as r:
            lines = r.iter_lines()
            while _next_event(lines).get("id") != first["id"]:
                earlier += 1
    assert earlier >= 1


@pytest.mark.parametrize("params", [{"server": "nope", "uri": "x"}, {"server": "nope"}])
def test_events_for_an_unknown_server_are_404(daemon: Daemon, params: dict[str, str]) -> None:
    with daemon.http() as api:
        # Streamed: a stream that opened (the defect) is seen at its head, not waited out.
        with api.stream("GET", "/v1/events", params=params) as r:
            assert r.status_code == 404
            error = json.loads(r.read())["error"]
        assert error["code"] == "unknown_server" and error["details"]["known"] == ["demo"]
        servers = api.get("/v1/servers").json()["servers"]
    assert all(s["subscriptions"] == [] for s in servers)  # nothing is watched


def test_a_loose_state_dir_is_tightened(daemon: Daemon) -> None:
    assert stat.S_IMODE(daemon.state.stat().st_mode) == 0o700
    assert isinstance(daemon.state, Path)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/prompts/get", {"server": "demo", "name": "no-such-prompt"}),
        ("/v1/resources/read", {"server": "demo", "uri": "demo://no/such/resource"}),
    ],
)
def test_input_the_upstream_refuses_is_the_callers_400(
    daemon: Daemon, path: str, body: dict[str, str]
) -> None:
    with daemon.http() as api:
        r = api.post(path, json=body)
    error = r.json()["error"]
    # The upstream's -32602 is the caller's mistake: a 4xx naming the server, with the
    # upstream's own error, never a 502 as though the upstream had failed.
    assert r.status_code == 400 and error["code"] == "upstream_refused_input", error
    assert error["details"]["server"] == "demo"
    assert error["details"]["jsonrpc"]["code"] == -32602
