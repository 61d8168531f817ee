"""``GET /metrics``: Prometheus' text format, read with prometheus_client's own parser
after known traffic; behind the daemon's auth like /v1 (issue 24)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from support.daemon import Daemon, bad_entry, legacy_session, running_daemon

TOKEN = secrets.token_urlsafe(32)
SETTINGS = {"daemon.auth": "token", "daemon.tokens": ["ops=TELEMETRY_TEST_TOKEN"]}
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ACCEPT = {"Accept": "application/json, text/event-stream"}
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
MCP_CALLS, V1_CALLS = 3, 2


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TELEMETRY_TEST_TOKEN", TOKEN)
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"):
            mp.delenv(name, raising=False)  # the Prometheus side alone: always on
        servers = {"up": bad_entry("legacy")}
        with running_daemon(tmp_path_factory.mktemp("metrics"), servers, SETTINGS) as d:
            yield d


def _samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _one(samples: list[Sample], name: str, **labels: str) -> float:
    [value] = [s.value for s in samples if s.name == name and labels.items() <= s.labels.items()]
    return value


def test_metrics_count_the_calls_made(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60, headers=BEARER) as tcp:
        session = legacy_session(tcp, {}) | ACCEPT
        for n in range(MCP_CALLS):
            args = {"server": "up", "tool": "echo", "arguments": {"text": f"m{n}"}}
            params = {"name": "mcpx_call", "arguments": args}
            body = {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": params}
            assert tcp.post("/mcp", json=body, headers=session).status_code == 200
        for n in range(V1_CALLS):
            body = {"server": "up", "tool": "echo", "arguments": {"text": f"v{n}"}}
            assert tcp.post("/v1/call", json=body).status_code == 200
        answer = tcp.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(answer.text)

    # What mcpx served: the hosts' gateway tool calls, each seen once.
    served = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "mcpx_call"}
    assert _one(samples, "mcp_server_operation_duration_seconds_count", **served) == MCP_CALLS
    buckets = [
        s
        for s in samples
        if s.name == "mcp_server_operation_duration_seconds_bucket"
        and served.items() <= s.labels.items()
    ]
    bounds = [float(s.labels["le"]) for s in buckets]
    assert bounds == [*map(float, BUCKETS), float("inf")]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts) and counts[-1] == MCP_CALLS  # cumulative, all counted
    assert all(s.labels["network_transport"] == "tcp" for s in buckets)
    assert all(s.labels["mcp_protocol_version"] == "2025-11-25" for s in buckets)
    assert all(s.labels["error_type"] == "" for s in buckets)

    # What mcpx sent upstream: every door's calls (/mcp and /v1).
    sent = {"mcpx_server": "up", "gen_ai_tool_name": "echo", "network_transport": "pipe"}
    total = MCP_CALLS + V1_CALLS
    assert _one(samples, "mcp_client_operation_duration_seconds_count", **sent) == total
    assert _one(samples, "mcp_client_operation_duration_seconds_bucket", le="+Inf", **sent) == total

    # The daemon's own state.
    assert _one(samples, "mcpx_instances", mcpx_server="up", state="ready") == 1
    assert _one(samples, "mcpx_instance_starts_total", mcpx_server="up") == 1
    assert not [s for s in samples if s.name == "mcpx_instance_crashes_total"]
    assert _one(samples, "mcpx_calls_in_flight", mcpx_server="up") == 0
    assert _one(samples, "mcpx_questions_open") == 0


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer not-the-token"}], ids=["none", "wrong"]
)
def test_metrics_needs_the_token(daemon: Daemon, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as tcp:
        answer = tcp.get("/metrics", headers=headers)
    assert answer.status_code == 401
    assert "mcp_" not in answer.text


def test_metrics_on_the_unix_socket(daemon: Daemon) -> None:
    # The socket is the owner's (0600): no token there, as for /v1.
    with daemon.http() as api:
        answer = api.get("/metrics")
    assert answer.status_code == 200
    names = {f.name for f in text_string_to_metric_families(answer.text)}
    assert {"mcp_server_operation_duration_seconds", "mcpx_instances"} <= names
