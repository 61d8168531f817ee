"""One trace per call, end to end, in the OpenTelemetry MCP conventions (issue 24):
host-given parent -> mcpx SERVER span -> mcpx CLIENT span -> the upstream's SERVER span
(the official Python SDK 2.3.0, which makes it from ``params._meta``), all exported over
OTLP/HTTP to a real receiver (conftest) by a daemon started with the ``OTEL_*`` variables.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon
from support.modern import modern_headers, modern_request
from support.peers import peer_python
from support.waiting import wait_until
from telemetry.otlp_receiver import CLIENT_KIND, SERVER_KIND, STATUS_ERROR, Receiver

TRACED = Path(__file__).with_name("traced_upstream.py")
ACCEPT = {"Accept": "application/json, text/event-stream"}
# The conventions' bucket advice for both operation durations.
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Daemon]:
    entry = {
        "command": str(peer_python("2.3.0")),
        "args": [str(TRACED), "--transport", "stdio"],
        "env": {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url},
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        mp.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: awaited by condition below
        mp.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
        mp.delenv("OTEL_SERVICE_NAME", raising=False)
        settings = {"mcp.passthrough": ["up"]}
        with running_daemon(tmp_path_factory.mktemp("traced"), {"up": entry}, settings) as d:
            yield d


def _parent() -> tuple[str, str, str]:
    """A host's trace id, span id, and the ``traceparent`` naming them."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def _trace(receiver: Receiver, trace_id: str) -> dict[str, dict[str, Any]]:
    """The three spans of one call, once all are exported: mcpx's SERVER and CLIENT,
    and the upstream's SERVER."""

    def whole() -> dict[str, dict[str, Any]] | None:
        spans = [s for s in receiver.span_list() if s["trace"] == trace_id]
        found: dict[str, dict[str, Any]] = {}
        for s in spans:
            if s["service"] == "mcpx" and s["kind"] == SERVER_KIND:
                found["server"] = s
            elif s["service"] == "mcpx" and s["kind"] == CLIENT_KIND:
                found["client"] = s
            elif s["service"] == "upstream" and s["kind"] == SERVER_KIND:
                found["upstream"] = s
        return found if len(found) == 3 else None

    return wait_until(whole, timeout=60, message=f"the spans of trace {trace_id}")


def _chain(spans: dict[str, dict[str, Any]], host_span: str) -> None:
    assert spans["server"]["parent"] == host_span
    assert spans["client"]["parent"] == spans["server"]["id"]
    assert spans["upstream"]["parent"] == spans["client"]["id"]


def _call_over_http(daemon: Daemon, tool: str, traceparent: str) -> str:
    """A legacy host's tools/call through /mcp; its session id."""
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        params = {"name": tool, "arguments": {"text": "hi"} if tool == "echo" else {}}
        params["_meta"] = {"traceparent": traceparent, "baggage": "userId=alice"}
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        assert mcp.post("/mcp", json=body, headers=headers).status_code == 200
        return headers["Mcp-Session-Id"]


def test_http_call_is_one_trace(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    session = _call_over_http(traced, "echo", traceparent)
    spans = _trace(receiver, trace_id)
    _chain(spans, host_span)
    server, client = spans["server"], spans["client"]
    assert server["name"] == client["name"] == "tools/call echo"
    assert server["attrs"] == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "jsonrpc.request.id": "7",
        "network.transport": "tcp",
        "mcp.protocol.version": "2025-11-25",
        "mcp.session.id": session,
    }
    assert client["attrs"]["mcp.method.name"] == "tools/call"
    assert client["attrs"]["gen_ai.tool.name"] == "echo"
    assert client["attrs"]["gen_ai.operation.name"] == "execute_tool"
    assert client["attrs"]["network.transport"] == "pipe"  # a stdio upstream
    assert client["attrs"]["mcp.protocol.version"]  # the upstream's, once negotiated
    assert "error.type" not in server["attrs"] and "error.type" not in client["attrs"]
    assert "mcpx.instance.ready" in client["events"]
    # The upstream's own span is in the conventions too, under mcpx's CLIENT span.
    assert spans["upstream"]["attrs"]["mcp.method.name"] == "tools/call"


def test_tool_error_is_error_type_tool_error(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    _call_over_http(traced, "fail", traceparent)
    spans = _trace(receiver, trace_id)
    _chain(spans, host_span)
    for side in ("server", "client", "upstream"):
        assert spans[side]["attrs"]["error.type"] == "tool_error", side
        assert spans[side]["status"] == STATUS_ERROR, side


def test_modern_request_has_no_session_id(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    params = {"name": "echo", "arguments": {"text": "m"}}
    frame = modern_request(3, "tools/call", params)
    frame["params"]["_meta"]["traceparent"] = traceparent
    headers = modern_headers("tools/call", frame["params"]) | ACCEPT
    with httpx.Client(base_url=traced.info["url"], timeout=60) as mcp:
        assert mcp.post("/mcp", json=frame, headers=headers).status_code == 200
    spans = _trace(receiver, trace_id)
    _chain(spans, host_span)
    assert spans["server"]["attrs"]["mcp.protocol.version"] == "2026-07-28"
    assert "mcp.session.id" not in spans["server"]["attrs"]


def test_stdio_host_call_is_one_trace(traced: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    init = {"protocolVersion": "2025-06-18", "capabilities": {}}
    init["clientInfo"] = {"name": "stdio-host", "version": "2"}
    call = {"name": "echo", "arguments": {"text": "s"}, "_meta": {"traceparent": traceparent}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    ]
    served = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=traced.home,
        env={k: v for k, v in traced.env().items() if not k.startswith("OTEL_")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    answers = [json.loads(x) for x in served.stdout.splitlines() if x.strip()]
    assert any(a.get("id") == 2 and "result" in a for a in answers), served
    spans = _trace(receiver, trace_id)
    _chain(spans, host_span)
    assert spans["server"]["attrs"]["network.transport"] == "pipe"
    assert spans["server"]["attrs"]["mcp.protocol.version"] == "2025-06-18"


def test_operation_durations_are_exported(traced: Daemon, receiver: Receiver) -> None:
    _call_over_http(traced, "echo", _parent()[2])

    def exported() -> list[dict[str, Any]] | None:
        points = {
            name: [
                p
                for p in receiver.histogram_points(name)
                if p["attrs"].get("gen_ai.tool.name") == "echo" and p["count"] >= 1
            ]
            for name in ("mcp.server.operation.duration", "mcp.client.operation.duration")
        }
        return None if not all(points.values()) else [p for v in points.values() for p in v]

    points = wait_until(exported, timeout=60, message="both duration histograms exported")
    for p in points:
        assert p["unit"] == "s"
        assert p["bounds"] == BUCKETS
        assert p["attrs"]["mcp.method.name"] == "tools/call"
        assert "mcp.session.id" not in p["attrs"]  # no ids on metrics
