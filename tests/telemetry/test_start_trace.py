"""A call's trace shows the upstream start it waited for and the retries made for it
(issue 24): ``mcpx.instance.start`` with its ``mcpx.era.probe`` event for the first call
to a fresh instance (never for a warm one), and ``mcpx.retry`` events on the CLIENT span,
with the reason, for a start begun again another way (a server that exits on
``server/discover``) and for a request sent again (an HTTP upstream that forgot the
session when it restarted). Exported over OTLP/HTTP to the real receiver (conftest).

The era cache is off here: every start probes, whichever start came first (the
catalogue's listing starts an instance of its own); what the cache says is in
``test_era_notes``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, bad_entry, legacy_session, running_daemon
from support.peers import free_port, running_server, sdk_server_command
from support.waiting import wait_until
from telemetry.otlp_receiver import CLIENT_KIND, SERVER_KIND, Receiver

ACCEPT = {"Accept": "application/json, text/event-stream"}
INTERNAL_KIND = 1  # Span.SpanKind
WEB = "1.23.3"  # a legacy Streamable HTTP upstream: sessions kept in its memory


@pytest.fixture(scope="module")
def web_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, receiver: Receiver, web_port: int
) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        mp.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: awaited by condition below
        mp.delenv("OTEL_SERVICE_NAME", raising=False)
        servers = {
            # One instance per legacy /mcp session: each session's first call starts one.
            "fresh": {**bad_entry("legacy"), "scope": "identity"},
            # Exits on server/discover: restarted and connected legacy-only.
            "flaky": {**bad_entry("exit-on-discover"), "scope": "identity"},
            "web": {"url": f"http://127.0.0.1:{web_port}/mcp"},
        }
        settings = {"upstream.eraCache": False}
        with running_daemon(tmp_path_factory.mktemp("start"), servers, settings) as d:
            yield d


def _parent() -> tuple[str, str]:
    trace_id = secrets.token_hex(16)
    return trace_id, f"00-{trace_id}-{secrets.token_hex(8)}-01"


def _gateway_call(mcp: httpx.Client, headers: dict[str, str], server: str, rid: int) -> str:
    """``mcpx_call`` of ``server``'s echo in the session; its trace id."""
    trace_id, traceparent = _parent()
    args = {"server": server, "tool": "echo", "arguments": {"text": "x"}}
    params = {"name": "mcpx_call", "arguments": args, "_meta": {"traceparent": traceparent}}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    answer = mcp.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "error" not in answer.json() and not answer.json()["result"].get("isError")
    return trace_id


def _spans(
    receiver: Receiver, trace_id: str, done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    def got() -> list[dict[str, Any]] | None:
        spans = [s for s in receiver.span_list() if s["trace"] == trace_id]
        return spans if done(spans) else None

    return wait_until(got, timeout=60, message=f"the spans of trace {trace_id}")


def _served_and_called(spans: list[dict[str, Any]]) -> bool:
    kinds = {s["kind"] for s in spans if s["service"] == "mcpx"}
    return {SERVER_KIND, CLIENT_KIND} <= kinds


def _with(name: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda spans: _served_and_called(spans) and any(s["name"] == name for s in spans)


def _client(spans: list[dict[str, Any]]) -> dict[str, Any]:
    [client] = [s for s in spans if s["service"] == "mcpx" and s["kind"] == CLIENT_KIND]
    return client


def _events(span: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [e for e in span["event_details"] if e["name"] == name]


def test_a_fresh_instance_shows_its_start_and_era_probe(daemon: Daemon, receiver: Receiver) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        first = _gateway_call(mcp, headers, "fresh", 2)
        spans = _spans(receiver, first, _with("mcpx.instance.start"))
        client = _client(spans)
        [start] = [s for s in spans if s["name"] == "mcpx.instance.start"]
        assert start["kind"] == INTERNAL_KIND and start["parent"] == client["id"]
        [probe] = _events(start, "mcpx.era.probe")
        # The bad server answers discover with -32601: legacy, found by probing.
        assert probe["attrs"] == {
            "mcpx.era": "legacy",
            "mcp.protocol.version": client["attrs"]["mcp.protocol.version"],
            "mcpx.era.source": "probe",
            "mcpx.era.cache": "off",
        }
        assert start["attrs"]["mcpx.era"] == "legacy"
        assert start["start"] <= probe["at"] <= start["end"] <= client["end"]
        assert not _events(client, "mcpx.retry")  # nothing was sent again

        # The session's next call finds its instance warm: no start, no probe.
        warm = _gateway_call(mcp, headers, "fresh", 3)
        later = _spans(receiver, warm, _served_and_called)
        assert not [s for s in later if s["kind"] == INTERNAL_KIND]
        assert not _events(_client(later), "mcpx.retry")


def test_a_start_begun_again_is_a_retry_event(daemon: Daemon, receiver: Receiver) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}) | ACCEPT
        trace_id = _gateway_call(mcp, headers, "flaky", 2)
    spans = _spans(receiver, trace_id, _with("mcpx.instance.start"))
    client = _client(spans)
    [start] = [s for s in spans if s["name"] == "mcpx.instance.start"]
    [retry] = _events(client, "mcpx.retry")
    assert retry["attrs"] == {"mcpx.retry.reason": "exited_during_probe"}
    # Within the start, before the era was settled by the legacy-only restart.
    [probe] = _events(start, "mcpx.era.probe")
    assert start["start"] <= retry["at"] <= probe["at"]
    assert probe["attrs"]["mcpx.era"] == "legacy"


def test_a_request_sent_again_is_a_retry_event(
    daemon: Daemon, receiver: Receiver, web_port: int
) -> None:
    argv = sdk_server_command(WEB, "streamable-http", web_port)
    body = {"server": "web", "tool": "add", "arguments": {"a": 1, "b": 2}}
    with running_server(argv, port=web_port), daemon.http() as v1:
        assert v1.post("/v1/call", json=body).status_code == 200  # the session begins
    # Restarted: the upstream forgot mcpx's session, and says so (404) to the next call.
    trace_id, traceparent = _parent()
    with running_server(argv, port=web_port), daemon.http() as v1:
        answer = v1.post("/v1/call", json=body, headers={"traceparent": traceparent})
    assert answer.status_code == 200, answer.text
    client = _client(_spans(receiver, trace_id, _served_and_called))
    [retry] = _events(client, "mcpx.retry")
    assert retry["attrs"] == {"mcp.method.name": "tools/call", "mcpx.retry.reason": "session_gone"}
    assert client["start"] <= retry["at"] <= client["end"]
    assert "error.type" not in client["attrs"]
