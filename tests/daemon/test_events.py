"""/v1/events on a real daemon: the stream over the unix socket, filters, resumes, gaps,
keep-alives, the end when the daemon stops.

Upstreams: the demo (its ``slow`` tool logs when done, as ``message``; every call ends in
``call.finished``) and a server whose calls write "boom" to stderr and exit (``server.log``).
Which events a filtered stream must carry is judged against an unfiltered stream open at
the same time: every stream sees events in seq order.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from support.daemon import Daemon, bad_entry, running_daemon

SERVERS = {
    "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    "crash": bad_entry("exit"),
}
FAST = {"transport.sseKeepAlive": "200ms"}
LIMIT = 60.0  # seconds any one wait may take before the test fails


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("events"), SERVERS, FAST) as d:
        yield d


class Sse:
    """The events of one open /v1/events response, read line by line (keep-alives
    every 200 ms bound each wait)."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        self._lines = response.iter_lines()
        self.comments: list[str] = []

    def next(self) -> dict[str, Any]:
        """The next event: its fields (id absent on a gap) and its data, parsed."""
        deadline = time.monotonic() + LIMIT
        fields: dict[str, str] = {}
        for line in self._lines:
            assert time.monotonic() < deadline, "no event in time"
            if line.startswith(":"):
                self.comments.append(line)
            elif line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
            elif fields:
                return {**fields, "data": json.loads(fields["data"])}
        raise AssertionError("the stream ended")

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Events up to and including the first ``wanted`` one (the data of each)."""
        seen = [self.next()["data"]]
        while not wanted(seen[-1]):
            seen.append(self.next()["data"])
        return seen


def _is(kind: str, server: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["kind"] == kind and e.get("server") == server


def _call(client: httpx.Client, server: str, tool: str, **arguments: Any) -> httpx.Response:
    return client.post("/v1/call", json={"server": server, "tool": tool, "arguments": arguments})


def _crash_and_log(client: httpx.Client, everything: Sse) -> list[dict[str, Any]]:
    """One boom on stderr and one log message from the demo, in that order."""
    assert _call(client, "crash", "echo", text="x").status_code == 502
    seen = everything.until(_is("server.log", "crash"))
    assert _call(client, "demo", "slow", seconds=0, steps=1).status_code == 200
    return seen + everything.until(_is("message", "demo"))


def test_streams_are_filtered_by_kind_and_server(daemon: Daemon) -> None:
    filters = {
        "kind": ({"kind": "message,server.log"}, lambda e: e["kind"] in ("message", "server.log")),
        "server": ({"server": "crash"}, lambda e: e.get("server") == "crash"),
        "both": ({"kind": "call.finished", "server": "demo"}, _is("call.finished", "demo")),
    }
    with ExitStack() as stack:
        client = stack.enter_context(daemon.http())
        everything = Sse(stack.enter_context(client.stream("GET", "/v1/events")))
        filtered = {
            name: Sse(stack.enter_context(client.stream("GET", "/v1/events", params=params)))
            for name, (params, _) in filters.items()
        }
        seen = _crash_and_log(client, everything)
        seen += everything.until(_is("call.finished", "demo"))
        boom = next(e for e in seen if _is("server.log", "crash")(e))
        assert boom["data"] == {"source": "stderr", "message": "boom"}
        message = next(e for e in seen if _is("message", "demo")(e))
        assert message["data"]["data"] == "slow: slept 0 s in 1 step"
        for name, (_, wanted) in filters.items():
            expected = [e["seq"] for e in seen if wanted(e)]
            got = [filtered[name].next()["data"]["seq"] for _ in expected]
            assert got == expected, name


def test_each_event_has_id_kind_and_json(daemon: Daemon) -> None:
    with (
        daemon.http() as client,
        client.stream("GET", "/v1/events", params={"kind": "call.finished"}) as r,
    ):
        stream = Sse(r)
        assert _call(client, "demo", "echo", text="hi").status_code == 200
        event = stream.next()
    data = event["data"]
    assert event["id"] == str(data["seq"]) and event["event"] == data["kind"] == "call.finished"
    assert data["server"] == "demo" and isinstance(data["ts"], float)
    assert data["data"]["tool"] == "echo" and data["data"]["isError"] is False
    assert stream.comments[0].startswith(": ")  # the stream opens with a comment


def test_resume_with_since_and_last_event_id(daemon: Daemon) -> None:
    with daemon.http() as client:
        with client.stream("GET", "/v1/events", params={"kind": "call.finished"}) as r:
            live = Sse(r)
            for text in ("a", "b", "c"):
                assert _call(client, "demo", "echo", text=text).status_code == 200
            seqs = [live.next()["data"]["seq"] for _ in range(3)]
        with client.stream("GET", "/v1/events", params={"since": 0}) as r:
            assert Sse(r).next()["data"]["seq"] == 1  # all retained: from the first
        last_id = {"Last-Event-ID": str(seqs[0])}
        with client.stream("GET", "/v1/events", headers=last_id) as r:
            stream = Sse(r)
            replayed = [stream.next()["data"]["seq"] for _ in range(2)]
        assert replayed == [seqs[0] + 1, seqs[0] + 2]
        params = {"since": 0, "kind": "call.finished"}
        # A reconnecting client's Last-Event-ID wins over the URL's since.
        with client.stream("GET", "/v1/events", params=params, headers=last_id) as r:
            assert Sse(r).next()["data"]["seq"] == seqs[1]


def test_keepalive_comments_while_nothing_happens(daemon: Daemon) -> None:
    keepalives = 0
    with (
        daemon.http() as client,
        client.stream("GET", "/v1/events", params={"kind": "no.such.kind"}) as r,
    ):
        for line in r.iter_lines():
            keepalives += line == ": keepalive"
            if keepalives == 2:
                break
    assert keepalives == 2


@pytest.mark.parametrize(
    ("params", "headers", "field"),
    [
        ({"since": "abc"}, {}, "since"),
        ({"since": -1}, {}, "since"),
        ({"bogus": 1}, {}, "bogus"),
        ({}, {"Last-Event-ID": "x"}, "Last-Event-ID"),
    ],
)
def test_bad_input_is_refused_in_the_error_shape(
    daemon: Daemon, params: dict[str, Any], headers: dict[str, str], field: str
) -> None:
    with daemon.http() as client:
        r = client.get("/v1/events", params=params, headers=headers)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "invalid_input" and error["details"]["field"] == field


def test_openapi_describes_the_stream(daemon: Daemon) -> None:
    with daemon.http() as client:
        doc = client.get("/openapi.json").json()
    validate(doc)
    op = doc["paths"]["/v1/events"]["get"]
    assert set(op["responses"]["200"]["content"]) == {"text/event-stream"}
    where = {p["name"]: p["in"] for p in op["parameters"]}
    assert where == {
        "kind": "query",
        "server": "query",
        "uri": "query",
        "since": "query",
        "Last-Event-ID": "header",
    }


def test_a_resume_older_than_the_history_gets_a_gap(tmp_path: Path) -> None:
    with (
        running_daemon(tmp_path, SERVERS, {**FAST, "events.history": 2}) as d,
        d.http() as client,
    ):
        for text in ("a", "b", "c", "d"):  # 4 events or more, 2 retained
            assert _call(client, "demo", "echo", text=text).status_code == 200
        with client.stream("GET", "/v1/events", params={"since": 0}) as r:
            stream = Sse(r)
            gap, first = stream.next(), stream.next()
        assert "id" not in gap and gap["event"] == "gap" and "seq" not in gap["data"]
        assert first["id"] == str(first["data"]["seq"])
        last = first["data"]["seq"] + 1
        assert gap["data"]["data"] == {"from": 1, "to": last - 2, "reason": "history"}
        with client.stream("GET", "/v1/events", headers={"Last-Event-ID": "1"}) as r:
            stream = Sse(r)
            gap, first = stream.next(), stream.next()
        assert gap["data"]["data"] == {"from": 2, "to": last - 2, "reason": "history"}
        assert first["data"]["seq"] == last - 1
        with client.stream("GET", "/v1/events", params={"since": last - 2}) as r:
            assert Sse(r).next()["data"]["seq"] == last - 1  # retained: no gap


def test_streams_end_when_the_daemon_stops(tmp_path: Path) -> None:
    with running_daemon(tmp_path, SERVERS, FAST) as d, d.http() as client:
        with client.stream("GET", "/v1/events") as r:
            lines = r.iter_lines()
            assert next(lines).startswith(":")  # open, subscribed
            d.proc.send_signal(signal.SIGTERM)
            for _ in lines:  # ends: the daemon closed the stream
                pass
        d.proc.wait(timeout=LIMIT)
        # Ended by the daemon, not by uvicorn giving up on it after its graceful wait.
        assert not [x for x in d.log_lines() if "graceful" in x["msg"]]
