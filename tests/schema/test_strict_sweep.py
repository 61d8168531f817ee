"""The strict schema sweep: it rejects what a revision never defined and accepts a
valid example of every message kind in every revision."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.spec import REVISIONS, at_or_after
from support.modern import modern_meta
from support.schemas import FrameLog, errors, frame_errors, methods, strict_schema

MODERN_META = modern_meta(client="t")


def _params(rev: str, params: dict[str, Any]) -> dict[str, Any]:
    if rev == "2026-07-28":
        return {**params, "_meta": MODERN_META}
    return params


def _result(rev: str, result: dict[str, Any], *, cacheable: bool = False) -> dict[str, Any]:
    if rev != "2026-07-28":
        return result
    extra: dict[str, Any] = {"resultType": "complete"}
    if cacheable:
        extra |= {"ttlMs": 60000, "cacheScope": "public"}
    return {**result, **extra}


TOOL = {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}
TEXT = {"type": "text", "text": "hi"}


def client_requests(rev: str) -> list[dict[str, Any]]:
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": _params(rev, {"name": "echo", "arguments": {"x": 1}}),
        },
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": _params(rev, {})},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "resources/read",
            "params": _params(rev, {"uri": "test://a"}),
        },
    ]
    if rev == "2026-07-28":
        frames.append(
            {"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": _params(rev, {})}
        )
    else:
        frames.append(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "initialize",
                "params": {
                    "protocolVersion": rev,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
    return frames


def server_results(rev: str) -> list[tuple[str, dict[str, Any]]]:
    """(method answered, result) pairs, each valid in ``rev``."""
    caps = {"tools": {"listChanged": False}}
    out: list[tuple[str, dict[str, Any]]] = [
        ("tools/call", _result(rev, {"content": [TEXT], "isError": False})),
        ("tools/list", _result(rev, {"tools": [TOOL]}, cacheable=True)),
        (
            "resources/templates/list",
            _result(
                rev,
                {"resourceTemplates": [{"uriTemplate": "test://{x}", "name": "x"}]},
                cacheable=True,
            ),
        ),
        ("prompts/get", _result(rev, {"messages": [{"role": "user", "content": TEXT}]})),
        ("completion/complete", _result(rev, {"completion": {"values": ["a"]}})),
    ]
    if rev == "2026-07-28":
        discover = {"supportedVersions": [rev], "capabilities": caps}
        out.append(("server/discover", _result(rev, discover, cacheable=True)))
        out.append(
            (
                "tools/call",
                {
                    "resultType": "input_required",
                    "inputRequests": {
                        "q": {"method": "roots/list", "params": {}},
                    },
                    "requestState": "opaque",
                },
            )
        )
    else:
        init = {
            "protocolVersion": rev,
            "capabilities": caps,
            "serverInfo": {"name": "mcpx", "version": "0.1.0"},
        }
        out.append(("initialize", init))
        out.append(("ping", {}))
    if at_or_after(rev, "2025-06-18"):
        out.append(("tools/call", _result(rev, {"content": [TEXT], "structuredContent": {"x": 1}})))
    return out


def server_notifications(rev: str) -> list[dict[str, Any]]:
    progress = {"progressToken": "p", "progress": 1, "total": 2}
    return [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress},
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "hello"},
        },
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
    ]


@pytest.mark.parametrize("rev", REVISIONS)
def test_accepts_valid_examples_of_every_kind(rev: str, sent_frames: FrameLog) -> None:
    for frame in client_requests(rev):
        sent_frames.sent(frame, rev, sender="client")
    for i, (method, result) in enumerate(server_results(rev)):
        sent_frames.sent({"jsonrpc": "2.0", "id": i, "result": result}, rev, answering=method)
    for frame in server_notifications(rev):
        sent_frames.sent(frame, rev)
    error = {"code": -32601, "message": "Method not found"}
    sent_frames.sent({"jsonrpc": "2.0", "id": 9, "error": error}, rev)
    if rev != "2026-07-28":
        roots = {"jsonrpc": "2.0", "id": -1, "method": "roots/list"}
        sent_frames.sent(roots, rev, sender="server")
    # The fixture validates at teardown; check here too so a failure names this test.
    assert sent_frames.problems() == []
    assert len(sent_frames.frames) >= 10


def _call_result(rev: str, result: dict[str, Any]) -> list[str]:
    frame = {"jsonrpc": "2.0", "id": 1, "result": result}
    return frame_errors(frame, rev, sender="server", answering="tools/call")


def test_rejects_structured_content_to_2025_03_26() -> None:
    problems = _call_result("2025-03-26", {"content": [TEXT], "structuredContent": {"x": 1}})
    assert any("structuredContent" in p for p in problems)
    assert _call_result("2025-06-18", {"content": [TEXT], "structuredContent": {"x": 1}}) == []


def test_rejects_result_type_to_2025_11_25() -> None:
    problems = _call_result("2025-11-25", {"content": [TEXT], "resultType": "complete"})
    assert any("resultType" in p for p in problems)
    assert _call_result("2026-07-28", {"content": [TEXT], "resultType": "complete"}) == []


def test_rejects_extensions_in_2025_11_25_server_capabilities() -> None:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "serverInfo": {"name": "mcpx", "version": "0.1.0"},
    }
    frame = {"jsonrpc": "2.0", "id": 1, "result": init}
    problems = frame_errors(frame, "2025-11-25", sender="server", answering="initialize")
    assert any("extensions" in p for p in problems)


@pytest.mark.parametrize("rev", REVISIONS)
def test_rejects_uri_where_templates_need_uri_template(rev: str) -> None:
    bad = _result(rev, {"resourceTemplates": [{"uri": "test://{x}", "name": "x"}]}, cacheable=True)
    frame = {"jsonrpc": "2.0", "id": 1, "result": bad}
    problems = frame_errors(frame, rev, sender="server", answering="resources/templates/list")
    assert any("uri" in p for p in problems)
    assert any("uriTemplate" in p for p in problems)


@pytest.mark.parametrize("rev", REVISIONS)
def test_open_maps_stay_open(rev: str) -> None:
    """Vendor keys in _meta and arbitrary tool arguments are not errors."""
    params = {"name": "echo", "arguments": {"anything": {"deep": [1]}}}
    meta = {"com.example/trace": "x"}
    if rev == "2026-07-28":
        meta |= MODERN_META
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": meta}}
    assert frame_errors(frame, rev, sender="client") == []


def test_a_method_the_revision_lacks_is_an_error() -> None:
    listen = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {}}
    assert frame_errors(listen, "2025-11-25", sender="client") == [
        "2025-11-25 defines no request 'subscriptions/listen' sent by a client"
    ]
    assert "initialize" not in methods("2026-07-28", "request", "client")


def test_strict_mode_closes_defined_types_only() -> None:
    defs = strict_schema("2025-11-25")["$defs"]
    assert defs["CallToolResult"]["additionalProperties"] is False
    assert defs["Tool"]["additionalProperties"] is False
    # Open maps keep their openness.
    assert "additionalProperties" not in defs["Tool"]["properties"]["inputSchema"]
    assert errors({"content": [], "_meta": {"x/y": 1}}, "2025-11-25", "CallToolResult") == []
