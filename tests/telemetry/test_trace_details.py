"""Where a slow call's time went, and the ids that tie its spans to the wire (issue 24):
``mcpx.instance.start`` when the pool started an upstream for the call and
``mcpx.question.wait`` for an upstream's question, as children of the CLIENT span;
``jsonrpc.request.id`` (and, to a legacy HTTP upstream, ``mcp.session.id``) on the
CLIENT span; a /v1 call's SERVER span, whose trace has the shape of a ``/mcp`` call's.
All exported over OTLP/HTTP to the real receiver (conftest).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon
from support.peers import free_port, peer_python, running_server, sdk_server_command
from support.waiting import wait_until
from telemetry.otlp_receiver import CLIENT_KIND, SERVER_KIND, Receiver

TRACED = Path(__file__).with_name("traced_upstream.py")
TASKS = Path(__file__).parents[1] / "fixtures" / "upstream_task_server.py"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INTERNAL_KIND = 1  # Span.SpanKind


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Daemon]:
    stdio = {
        "command": str(peer_python("2.3.0")),
        "args": [str(TRACED), "--transport", "stdio"],
        "env": {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url},
    }
    port = free_port()
    argv = sdk_server_command("2.3.0", "streamable-http", port)
    with (
        running_server(argv, port=port),
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        mp.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: awaited by condition below
        mp.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
        mp.delenv("OTEL_SERVICE_NAME", raising=False)
        frames = tmp_path_factory.mktemp("task-frames") / "frames.jsonl"
        servers = {
            "up": stdio,
            # A tool that runs only as a task (2026-07-28 extension, polled every 100 ms).
            "tasks": {"command": sys.executable, "args": [str(TASKS), str(frames), "--modern"]},
            # One instance per legacy session: its first call starts it.
            "mine": {**stdio, "scope": "identity"},
            # Legacy Streamable HTTP: the upstream gives mcpx an Mcp-Session-Id.
            "web": {"url": f"http://127.0.0.1:{port}/mcp", "protocol": "prefer-initialize"},
        }
        settings = {"mcp.passthrough": ["mine"]}
        with running_daemon(tmp_path_factory.mktemp("details"), servers, settings) as d:
            yield d


def _parent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def _spans(
    receiver: Receiver, trace_id: str, done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """The spans of one trace, once ``done`` says all that is awaited came."""

    def got() -> list[dict[str, Any]] | None:
        spans = [s for s in receiver.span_list() if s["trace"] == trace_id]
        return spans if done(spans) else None

    return wait_until(got, timeout=60, message=f"the spans of trace {trace_id}")


def _one(spans: list[dict[str, Any]], service: str, kind: int) -> dict[str, Any]:
    found = [s for s in spans if s["service"] == service and s["kind"] == kind]
    assert len(found) == 1, spans
    return found[0]


def _has(service: str, kind: int, name: str | None = None) -> Callable[[dict[str, Any]], bool]:
    return lambda s: s["service"] == service and s["kind"] == kind and name in (None, s["name"])


def _call_in_session(mcp: httpx.Client, headers: dict[str, str], tool: str, rid: int) -> str:
    """A tools/call of ``mine``'s ``tool`` in the session; its trace id."""
    trace_id, _, traceparent = _parent()
    params: dict[str, Any] = {"name": tool, "arguments": {"text": "x"} if tool == "echo" else {}}
    params["_meta"] = {"traceparent": traceparent}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    answer = mcp.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return trace_id


def _complete(spans: list[dict[str, Any]], *names: str) -> bool:
    """mcpx's SERVER and CLIENT spans and the upstream's are there, and ``names``."""
    kinds = {("mcpx", SERVER_KIND), ("mcpx", CLIENT_KIND), ("upstream", SERVER_KIND)}
    have = {(s["service"], s["kind"]) for s in spans}
    return kinds <= have and all(any(s["name"] == n for s in spans) for n in names)


def test_first_call_shows_the_instance_start(traced: Daemon, receiver: Receiver) -> None:
    with httpx.Client(base_url=traced.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        first = _call_in_session(mcp, headers, "echo", 2)
        spans = _spans(receiver, first, lambda s: _complete(s, "mcpx.instance.start"))
        client = _one(spans, "mcpx", CLIENT_KIND)
        start = _one(spans, "mcpx", INTERNAL_KIND)
        assert start["name"] == "mcpx.instance.start"
        assert start["parent"] == client["id"]
        assert start["attrs"]["mcpx.server"] == "mine"
        assert start["attrs"]["mcpx.era"] in ("legacy", "modern")
        assert start["attrs"]["mcp.protocol.version"] == client["attrs"]["mcp.protocol.version"]
        # The instance is there for the session's next call: nothing started for it.
        second = _call_in_session(mcp, headers, "echo", 3)
        later = _spans(receiver, second, _complete)
        assert not [s for s in later if s["name"] == "mcpx.instance.start"]


def test_client_span_has_the_request_id(traced: Daemon, receiver: Receiver) -> None:
    with httpx.Client(base_url=traced.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        trace_id = _call_in_session(mcp, headers, "echo", 4)
    client = _one(_spans(receiver, trace_id, _complete), "mcpx", CLIENT_KIND)
    # The id mcpx gave its request upstream (its own numbering, not the host's 4).
    rid = client["attrs"]["jsonrpc.request.id"]
    assert isinstance(rid, str) and rid
    assert "mcp.session.id" not in client["attrs"]  # a stdio upstream has no session


def test_question_wait_is_a_child_span(traced: Daemon, receiver: Receiver) -> None:
    # A host without roots: mcpx answers the upstream's roots/list itself.
    with httpx.Client(base_url=traced.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        trace_id = _call_in_session(mcp, headers, "roots", 5)
    spans = _spans(receiver, trace_id, lambda s: _complete(s, "mcpx.question.wait"))
    client = _one(spans, "mcpx", CLIENT_KIND)
    wait = next(s for s in spans if s["name"] == "mcpx.question.wait")
    assert wait["parent"] == client["id"]
    assert wait["attrs"] == {
        "mcpx.server": "mine",
        "mcp.method.name": "roots/list",
        "mcpx.question.answered_by": "mcpx",
        "mcpx.question.outcome": "answered",
    }


def test_v1_call_is_one_trace(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    body = {"server": "up", "tool": "echo", "arguments": {"text": "v1"}}
    with traced.http() as v1:  # the unix socket
        answer = v1.post("/v1/call", json=body, headers={"traceparent": traceparent})
    assert answer.status_code == 200, answer.text
    spans = _spans(receiver, trace_id, _complete)
    server = _one(spans, "mcpx", SERVER_KIND)
    client = _one(spans, "mcpx", CLIENT_KIND)
    upstream = _one(spans, "upstream", SERVER_KIND)
    assert server["parent"] == host_span
    assert client["parent"] == server["id"]
    assert upstream["parent"] == client["id"]
    assert server["name"] == client["name"] == "tools/call echo"
    assert server["attrs"]["mcp.method.name"] == "tools/call"
    assert server["attrs"]["gen_ai.tool.name"] == "echo"
    assert server["attrs"]["network.transport"] == "unix"
    assert "error.type" not in server["attrs"]


def test_v1_failure_is_error_type(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    body = {"server": "up", "tool": "no-such-tool", "arguments": {}}
    with traced.http() as v1:
        answer = v1.post("/v1/call", json=body, headers={"traceparent": traceparent})
    assert answer.status_code >= 400
    code = answer.json()["error"]["code"]

    def served(spans: list[dict[str, Any]]) -> bool:
        return any(_has("mcpx", SERVER_KIND)(s) for s in spans)

    server = _one(_spans(receiver, trace_id, served), "mcpx", SERVER_KIND)
    assert server["parent"] == host_span
    assert server["attrs"]["error.type"] == code


def test_legacy_http_upstream_session_id(traced: Daemon, receiver: Receiver) -> None:
    trace_id, _, traceparent = _parent()
    body = {"server": "web", "tool": "echo", "arguments": {"text": "w"}}
    with traced.http() as v1:
        answer = v1.post("/v1/call", json=body, headers={"traceparent": traceparent})
    assert answer.status_code == 200, answer.text

    def called(spans: list[dict[str, Any]]) -> bool:
        return any(_has("mcpx", CLIENT_KIND)(s) for s in spans)

    client = _one(_spans(receiver, trace_id, called), "mcpx", CLIENT_KIND)
    assert client["attrs"]["mcp.protocol.version"] != "2026-07-28"
    assert client["attrs"]["mcp.session.id"]  # the Mcp-Session-Id the upstream gave
    assert client["attrs"]["network.transport"] == "tcp"
    assert client["attrs"]["server.address"] == "127.0.0.1"
    assert client["attrs"]["jsonrpc.request.id"]


def test_task_polls_are_events(traced: Daemon, receiver: Receiver) -> None:
    trace_id, _, traceparent = _parent()
    body = {"server": "tasks", "tool": "slow", "arguments": {"ms": 400}}
    with traced.http() as v1:
        answer = v1.post("/v1/call", json=body, headers={"traceparent": traceparent})
    assert answer.status_code == 200, answer.text

    def called(spans: list[dict[str, Any]]) -> bool:
        return any(_has("mcpx", CLIENT_KIND)(s) for s in spans)

    client = _one(_spans(receiver, trace_id, called), "mcpx", CLIENT_KIND)
    # Working 400 ms, polled every 100 ms: tasks/get more than once.
    assert client["events"].count("mcpx.task.poll") >= 2, client["events"]
    assert client["attrs"]["jsonrpc.request.id"]  # the tools/call that made the task


def test_session_duration_is_exported(traced: Daemon, receiver: Receiver) -> None:
    with httpx.Client(base_url=traced.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}, "2025-06-18")
        assert mcp.delete("/mcp", headers=headers).status_code in (200, 204)

    def exported() -> list[dict[str, Any]] | None:
        points = [
            p
            for p in receiver.histogram_points("mcp.server.session.duration")
            if p["attrs"].get("mcp.protocol.version") == "2025-06-18" and p["count"] >= 1
        ]
        return points or None

    points = wait_until(exported, timeout=60, message="mcp.server.session.duration exported")
    assert all(p["unit"] == "s" for p in points)
    assert all(p["attrs"]["network.transport"] == "tcp" for p in points)
    assert all("mcp.session.id" not in p["attrs"] for p in points)  # no ids on metrics
