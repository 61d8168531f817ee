"""Per-connection state: push, capabilities declared, and the per-request 2026 view."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.server import META_CAPABILITIES, META_VERSION, Conn, Subscriptions
from mcpx.spec import Era


def sink(frame: dict[str, Any]) -> None:
    pass


def modern_params(caps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: caps, **extra}}


def test_can_push_is_per_connection() -> None:
    assert Conn("stdio", push=sink).can_push
    assert not Conn("http", "2025-03-26").can_push  # legacy POST outside a session
    session = Conn("http", "2025-11-25", session_id="s")
    assert not session.can_push
    session.push = sink  # its GET stream opened
    assert session.can_push


def test_modern_request_pushes_only_on_a_listen_stream() -> None:
    conn = Conn("stdio", push=sink)
    assert not conn.for_request(modern_params({})).can_push
    assert conn.for_request(modern_params({}), listen=sink).can_push


def test_initialize_records_the_handshake() -> None:
    conn = Conn("stdio")
    assert conn.era is None
    conn.initialize("2025-06-18", {"capabilities": {"roots": {}}, "clientInfo": {"name": "c"}})
    assert conn.revision == "2025-06-18"
    assert conn.declared("roots")
    assert Conn("stdio", conn.revision).era is Era.LEGACY
    assert conn.declared("roots")
    assert conn.client_info == {"name": "c"}


# S-LIFE-14: capabilities come from this request's _meta, never from an earlier one.
@pytest.mark.obligation("S-LIFE-14")
def test_for_request_never_infers_from_earlier_requests() -> None:
    conn = Conn("http")
    first = conn.for_request(modern_params({"elicitation": {}}))
    second = conn.for_request(modern_params({}))
    assert first.declared("elicitation.form")
    assert not second.declared("elicitation")
    assert conn.capabilities == {}
    assert second.era is Era.MODERN


# S-LOG-4: no logLevel in _meta, no log messages for that request.
@pytest.mark.obligation("S-LOG-4")
def test_for_request_log_level_and_client_info() -> None:
    view = Conn("http").for_request(
        modern_params(
            {},
            **{
                "io.modelcontextprotocol/logLevel": "info",
                "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
            },
        )
    )
    assert view.log_level == "info"
    assert view.client_info == {"name": "x", "version": "1"}
    assert Conn("http").for_request(modern_params({})).log_level is None


def test_for_request_without_modern_meta_is_the_connection() -> None:
    conn = Conn("stdio", "2025-11-25")
    assert conn.for_request({"name": "t"}) is conn


DECLARED: list[tuple[str, dict[str, Any], str, bool]] = [
    ("2025-11-25", {"elicitation": {}}, "elicitation.form", True),
    ("2025-11-25", {"elicitation": {}}, "elicitation.url", False),
    ("2025-11-25", {"elicitation": {"url": {}}}, "elicitation.form", False),
    ("2025-11-25", {"elicitation": {"url": {}}}, "elicitation.url", True),
    ("2025-11-25", {"elicitation": {"form": {}, "url": {}}}, "elicitation.form", True),
    ("2025-06-18", {"elicitation": {}}, "elicitation.form", True),
    ("2025-06-18", {"elicitation": {"url": {}}}, "elicitation.url", False),
    ("2025-03-26", {"elicitation": {}}, "elicitation", False),
    ("2026-07-28", {"elicitation": {}}, "elicitation.form", True),
    ("2025-11-25", {"sampling": {"tools": {}}}, "sampling.tools", True),
    ("2025-11-25", {"sampling": {}}, "sampling.tools", False),
    ("2025-06-18", {"sampling": {"tools": {}}}, "sampling.tools", False),
    ("2024-11-05", {"sampling": {}}, "sampling", True),
    ("2024-11-05", {"sampling": None}, "sampling", False),
    ("2025-11-25", {"roots": {"listChanged": True}}, "roots.listChanged", True),
    ("2026-07-28", {"roots": {"listChanged": True}}, "roots.listChanged", False),
    ("2025-11-25", {"tasks": {}}, "tasks", True),
    ("2026-07-28", {"tasks": {}}, "tasks", False),
    (
        "2026-07-28",
        {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "extensions.io.modelcontextprotocol/tasks",
        True,
    ),
    ("2026-07-28", {"extensions": {}}, "extensions.io.modelcontextprotocol/tasks", False),
    ("2024-11-05", {}, "roots", False),
]


@pytest.mark.parametrize(("revision", "caps", "path", "expected"), DECLARED)
def test_declared(revision: str, caps: dict[str, Any], path: str, expected: bool) -> None:
    assert Conn("stdio", revision, caps).declared(path) is expected


def test_subscriptions_filter() -> None:
    subs = Subscriptions({"file:///a"}, {"tools"})
    assert subs.wants_updated("file:///a") and not subs.wants_updated("file:///b")
    assert subs.wants_list_changed("tools") and not subs.wants_list_changed("prompts")
    assert Subscriptions.everything().wants_list_changed("resources")
    assert Conn("stdio").subscriptions is not Conn("stdio").subscriptions
