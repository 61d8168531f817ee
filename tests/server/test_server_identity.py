"""Who a request is from, per connection."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.server import SESSION_META, Conn, identity_for
from mcpx.wire import InvalidParams

CASES: list[tuple[str, dict[str, Any] | None, Conn, str | None]] = [
    ("named wins on stdio", {SESSION_META: "ws-1"}, Conn("stdio", "2025-06-18"), "named:ws-1"),
    ("named wins on modern", {SESSION_META: "ws-1"}, Conn("http", "2026-07-28"), "named:ws-1"),
    ("stdio process", None, Conn("stdio", "2025-11-25"), "stdio:4242"),
    ("stdio never initialized", {}, Conn("stdio"), "stdio:4242"),
    ("legacy session", None, Conn("http", "2025-06-18", session_id="abc"), "http:abc"),
    ("legacy POST outside a session", None, Conn("http", "2025-03-26"), None),
    # S-LIFE-14: a 2026-07-28 request gets its own scope, even on stdio.
    ("modern stdio", {}, Conn("stdio", "2026-07-28"), None),
    ("modern http", {}, Conn("http", "2026-07-28", session_id="ignored"), None),
]


@pytest.mark.obligation("S-LIFE-14", "S-SEC-6")
@pytest.mark.parametrize(
    ("meta", "conn", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_identity_for(meta: dict[str, Any] | None, conn: Conn, expected: str | None) -> None:
    assert identity_for(meta, conn, process="stdio:4242") == expected


@pytest.mark.parametrize("value", ["", 3, None, {"a": 1}])
def test_named_session_must_be_a_string(value: object) -> None:
    with pytest.raises(InvalidParams) as info:
        identity_for({SESSION_META: value}, Conn("stdio"), process="stdio:1")
    assert info.value.code == -32602
    assert SESSION_META in info.value.message


def test_named_session_cannot_pose_as_a_transport_scope() -> None:
    got = identity_for({SESSION_META: "http:abc"}, Conn("http"), process="stdio:1")
    assert got != "http:abc"
