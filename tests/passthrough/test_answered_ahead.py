"""A call sent ahead (``mcpx.server._send_ahead``) whose upstream answers a plain result
at once is answered without a task of its own (``HostSession.send_ahead``): what the
call leaves behind is what a call served by its task leaves (its record, metrics,
``call.finished`` event, the instance's count), and every other ending still goes
through its task: a result that fails its check, no answer in time (the call's timeout
applies), the host withdrawing it, the host going away. The upstream may ask the host
a question as soon as it reads the call (a 2026-07-28 one answers ``input_required``,
which the call's task takes over). Each test runs against a legacy and a 2026-07-28
upstream. Every frame the daemon sent the host is checked against its revision when
the daemon stops.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon
from support.peers import StdioPeer, stdio_peer
from support.waiting import wait_until

REV = "2025-11-25"
FAKE = Path(__file__).parents[1] / "fixtures" / "recording_fake.py"
ANSWERED_AHEAD = "answered ahead, without a task"
# What a call's record says of where it came from and how it went (not when).
RECORDED = (
    "door",
    "transport",
    "caller",
    "server",
    "method",
    "tool",
    "host_revision",
    "upstream_revision",
    "outcome",
    "error",
    "trace_id",
)


# The upstream in either era: a legacy one ("plain") reads the call as the host wrote it,
# a 2026-07-28 one ("modern") with the _meta its request restates.
@pytest.fixture(scope="module", params=["plain", "modern"], ids=["legacy", "modern"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def upstream_log(tmp_path_factory: pytest.TempPathFactory, mode: str) -> Path:
    return tmp_path_factory.mktemp(f"upstream-{mode}") / "read.log"


def _daemon(
    tmp_path_factory: pytest.TempPathFactory, upstream_log: Path, mode: str, **settings: str
) -> contextlib.AbstractContextManager[Daemon]:
    fake = {"command": sys.executable, "args": [str(FAKE), str(upstream_log), mode]}
    base = {"mcp.passthrough": ["fake"], "log.level": "debug", "transport.stdioDrain": "1s"}
    state = tmp_path_factory.mktemp("ahead")
    return running_daemon(state, {"fake": fake}, {**base, **settings})


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, upstream_log: Path, mode: str
) -> Iterator[Daemon]:
    # A call waits as long as it must for its answer without a task: which way each call
    # of this module goes does not hang on the machine's load.
    wait = {"transport.stdioAnswerWait": "60s"}
    with _daemon(tmp_path_factory, upstream_log, mode, **wait) as d:
        yield d


@pytest.fixture(scope="module")
def hasty_log(tmp_path_factory: pytest.TempPathFactory, mode: str) -> Path:
    return tmp_path_factory.mktemp(f"hasty-{mode}") / "read.log"


@pytest.fixture(scope="module")
def hasty(tmp_path_factory: pytest.TempPathFactory, hasty_log: Path, mode: str) -> Iterator[Daemon]:
    """As it is configured by default, with a short call timeout."""
    with _daemon(tmp_path_factory, hasty_log, mode, **{"pool.callTimeout": "2s"}) as d:
        yield d


def _host(daemon: Daemon) -> contextlib.AbstractContextManager[StdioPeer]:
    return stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env())


@pytest.fixture
def host(daemon: Daemon) -> Iterator[StdioPeer]:
    with _host(daemon) as peer:
        _ready(peer)
        yield peer


def _ready(peer: StdioPeer, capabilities: dict[str, Any] | None = None) -> None:
    peer.initialize(REV, capabilities)
    # Listed first: the owner of a pass-through tool is known from the catalogue.
    listed = peer.request(1, "tools/list", {}, timeout=30)["result"]["tools"]
    assert listed[0]["name"] == "echo"


def _echo(text: str, **extra: Any) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}, **extra}


def _answered_ahead(daemon: Daemon) -> int:
    return sum(ANSWERED_AHEAD in line["msg"] for line in daemon.log_lines())


def _read(upstream_log: Path) -> list[dict[str, Any]]:
    lines = upstream_log.read_bytes().split(b"\n")
    return [json.loads(line) for line in lines if line and not line.startswith(b"#")]


def _counts(daemon: Daemon) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The two operation histograms' counts for ``echo``, by label set."""
    names = (
        "mcp_server_operation_duration_seconds_count",
        "mcp_client_operation_duration_seconds_count",
    )
    return {
        key: value
        for key, value in daemon.metrics().items()
        if key[0] in names and ("gen_ai_tool_name", "echo") in key[1]
    }


def _in_flight(daemon: Daemon) -> float:
    return daemon.metrics()[("mcpx_calls_in_flight", (("mcpx_server", "fake"),))]


def _calls(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.http() as api:
        reply = api.get("/v1/log", params={"server": "fake"})
    assert reply.status_code == 200, reply.text
    calls: list[dict[str, Any]] = reply.json()["calls"]
    return calls


def _finished_events(daemon: Daemon, count: int) -> list[dict[str, Any]]:
    """The retained ``call.finished`` events of ``fake``, once there are ``count``."""
    seen: list[dict[str, Any]] = []
    params: dict[str, str | int] = {"kind": "call.finished", "since": 0}
    with daemon.http() as api, api.stream("GET", "/v1/events", params=params) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data:"):
                event = json.loads(line.removeprefix("data:"))
                if event.get("server") == "fake":
                    seen.append(event)
                if len(seen) == count:
                    return seen
    raise AssertionError(f"the event stream ended with {len(seen)} call.finished events")


def _calls_made(daemon: Daemon) -> int:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    (fake,) = [s for s in servers if s["name"] == "fake"]
    return sum(int(i["calls"]) for i in fake["instances"])


def test_a_plain_call_answered_without_its_task_is_recorded_as_one_served_by_it(
    daemon: Daemon, host: StdioPeer, mode: str
) -> None:
    ahead, counts, made = _answered_ahead(daemon), _counts(daemon), _calls_made(daemon)
    logged = len(_calls(daemon))
    events = sum(c["method"] == "tools/call" for c in _calls(daemon))  # one each
    plain = host.request(10, "tools/call", _echo("plain"), timeout=30)
    assert plain["result"]["content"] == [{"type": "text", "text": "plain"}]
    assert _answered_ahead(daemon) == ahead + 1
    # With a progress token the call goes by its task (it gives the call a token of its own).
    tasked = host.request(
        11, "tools/call", _echo("tasked", _meta={"progressToken": "p"}), timeout=30
    )
    assert tasked["result"]["content"] == [{"type": "text", "text": "tasked"}]
    assert _answered_ahead(daemon) == ahead + 1

    # The call log: one record each, alike but for when.
    records = _calls(daemon)
    assert len(records) == logged + 2
    by_task, by_itself = records[0], records[1]  # newest first
    assert {k: by_itself[k] for k in RECORDED} == {k: by_task[k] for k in RECORDED}
    assert by_itself["door"] == "passthrough" and by_itself["outcome"] == "ok"
    upstream = "2026-07-28" if mode == "modern" else REV
    assert by_itself["upstream_revision"] == upstream and by_itself["host_revision"] == REV

    # The metrics: each histogram counted both calls under one label set.
    grown = {key: value - counts.get(key, 0) for key, value in _counts(daemon).items()}
    grown = {key: value for key, value in grown.items() if value}
    assert sorted(value for value in grown.values()) == [2, 2], grown
    assert {key[0] for key in grown} == {
        "mcp_server_operation_duration_seconds_count",
        "mcp_client_operation_duration_seconds_count",
    }
    assert _in_flight(daemon) == 0

    # The events, and the instance's count of its calls.
    finished = _finished_events(daemon, events + 2)[-2:]
    assert [e["data"]["isError"] for e in finished] == [False, False]
    assert all(e["data"]["tool"] == "echo" and e["data"]["ms"] >= 0 for e in finished)
    assert _calls_made(daemon) == made + 2


@pytest.mark.parametrize("gateway", [False, True], ids=["pass-through", "mcpx_call"])
def test_the_answer_made_without_a_task_is_the_one_its_task_makes(
    daemon: Daemon, host: StdioPeer, gateway: bool
) -> None:
    def params(**extra: Any) -> dict[str, Any]:
        if not gateway:
            return _echo("same", **extra)
        args = {"server": "fake", "tool": "echo", "arguments": {"text": "same"}}
        return {"name": "mcpx_call", "arguments": args, **extra}

    ahead = _answered_ahead(daemon)
    alone = host.request(60, "tools/call", params(), timeout=30)
    assert _answered_ahead(daemon) == ahead + 1
    tasked = host.request(61, "tools/call", params(_meta={"progressToken": "q"}), timeout=30)
    assert _answered_ahead(daemon) == ahead + 1
    assert "result" in alone and alone["result"] == tasked["result"]


def test_a_result_that_fails_its_check_is_answered_by_its_task(
    daemon: Daemon, host: StdioPeer
) -> None:
    ahead = _answered_ahead(daemon)
    reply = host.request(20, "tools/call", _echo("malformed"), timeout=30)
    assert "malformed result" in reply["error"]["message"], reply
    assert _answered_ahead(daemon) == ahead
    assert _in_flight(daemon) == 0


def test_a_call_not_answered_in_time_goes_on_in_its_task_under_its_timeout(
    hasty: Daemon, hasty_log: Path
) -> None:
    with _host(hasty) as host:
        _ready(host)
        before, ahead = len(_read(hasty_log)), _answered_ahead(hasty)
        host.send({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": _echo("hold")})
        # Held upstream: counted in flight all along, sent ahead or by its task.
        assert wait_until(lambda: _in_flight(hasty) == 1, timeout=30)
        reply = host.response(30, timeout=30)
    assert "did not answer tools/call within 2s" in reply["error"]["message"], reply
    assert _answered_ahead(hasty) == ahead

    def told() -> list[Any]:
        read = _read(hasty_log)[before:]
        return [f for f in read if f.get("method") == "notifications/cancelled"]

    (cancel,) = wait_until(told, timeout=30)
    (call,) = [f for f in _read(hasty_log)[before:] if f.get("method") == "tools/call"]
    assert cancel["params"]["requestId"] == call["id"]
    assert _in_flight(hasty) == 0


def test_the_upstream_may_ask_the_host_as_soon_as_it_reads_the_call(
    daemon: Daemon, upstream_log: Path, mode: str
) -> None:
    """A legacy upstream asks mid-call; a 2026-07-28 one answers ``input_required``,
    which the call's task takes over: the host is asked, the call sent again with its
    answer, and the host answered once."""
    roots = {"roots": [{"uri": "file:///tmp/ahead", "name": "ahead"}]}
    before, ahead = len(_read(upstream_log)), _answered_ahead(daemon)
    with _host(daemon) as peer:
        _ready(peer, {"roots": {"listChanged": True}})
        reply = peer.request(40, "tools/call", _echo("ask"), timeout=30, on_request=lambda _: roots)
        told = "ask file:///tmp/ahead" if mode == "modern" else "ask"
        assert reply["result"]["content"] == [{"type": "text", "text": told}]
        assert [r["method"] for r in peer.server_requests] == ["roots/list"]
    calls = [f for f in _read(upstream_log)[before:] if f.get("method") == "tools/call"]
    assert len(calls) == (2 if mode == "modern" else 1)
    assert _answered_ahead(daemon) == ahead + (0 if mode == "modern" else 1)


def test_a_host_that_goes_away_leaves_its_call_to_its_task_which_ends_it(
    daemon: Daemon, upstream_log: Path
) -> None:
    before = len(_read(upstream_log))
    with _host(daemon) as peer:
        _ready(peer)
        peer.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": _echo("hold")})
        wait_until(
            lambda: any(f.get("method") == "tools/call" for f in _read(upstream_log)[before:])
        )
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()  # the host is gone; its call gets the drain period
        peer.wait(timeout=30)

    def cancelled() -> list[Any]:
        read = _read(upstream_log)[before:]
        return [f for f in read if f.get("method") == "notifications/cancelled"]

    (told,) = wait_until(cancelled, timeout=30)
    (call,) = [f for f in _read(upstream_log)[before:] if f.get("method") == "tools/call"]
    assert told["params"]["requestId"] == call["id"]
    assert wait_until(lambda: _in_flight(daemon) == 0, timeout=30)
    assert not [line for line in daemon.log_lines() if line["level"] == "error"]
