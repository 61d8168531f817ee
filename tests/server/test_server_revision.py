"""Judging a request's revision, negotiating initialize, and refusing removed methods."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.server import Conn, check_removed, judge, negotiate_initialize
from mcpx.spec import HEADERLESS, LEGACY, NEWEST, OLDEST, Policy
from mcpx.wire import HeaderMismatch, MethodNotFound, UnsupportedProtocolVersion

V = "io.modelcontextprotocol/protocolVersion"


def modern(version: str, method: str = "tools/list") -> dict[str, Any]:
    meta = {V: version, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}


def plain(method: str = "tools/list", **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


# S-LIFE-3, S-LIFE-4: the same legacy version back, else a counter-offer (never an error).
@pytest.mark.obligation("S-LIFE-3", "S-LIFE-4", "S-LIFE-5")
@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        *[(r, r) for r in LEGACY],
        ("2026-07-28", "2025-11-25"),
        ("1900-01-01", "2025-11-25"),
        ("garbage", "2025-11-25"),
        (None, "2025-11-25"),
    ],
)
def test_negotiate_initialize(requested: str | None, expected: str) -> None:
    assert negotiate_initialize(requested, Policy()) == expected


JUDGE_CASES: list[tuple[str, dict[str, Any], Conn, str, str | None, str]] = [
    # S-LIFE-25: a request with modern _meta is 2026-07-28 on any transport.
    ("modern stdio", modern(NEWEST), Conn("stdio"), "stdio", None, NEWEST),
    ("modern http", modern(NEWEST), Conn("http"), "http", NEWEST, NEWEST),
    ("modern on legacy conn", modern(NEWEST), Conn("stdio", "2025-06-18"), "stdio", None, NEWEST),
    ("initialized legacy", plain(), Conn("stdio", "2025-06-18"), "stdio", None, "2025-06-18"),
    ("session keeps", plain(), Conn("http", "2025-11-25"), "http", None, "2025-11-25"),
    ("stdio, never initialized", plain(), Conn("stdio"), "stdio", None, OLDEST),
    # S-HTTP-31: no header and nothing else known: 2025-03-26.
    ("headerless http", plain(), Conn("http"), "http", None, HEADERLESS),
    ("header legacy", plain(), Conn("http"), "http", "2025-06-18", "2025-06-18"),
    ("modern header, no _meta", plain(), Conn("http"), "http", NEWEST, NEWEST),
    (
        "initialize",
        plain("initialize", protocolVersion="2025-03-26"),
        Conn("stdio"),
        "stdio",
        None,
        "2025-03-26",
    ),
    (
        "initialize newer",
        plain("initialize", protocolVersion="2026-07-28"),
        Conn("http"),
        "http",
        None,
        "2025-11-25",
    ),
]


@pytest.mark.obligation("S-LIFE-25", "S-HTTP-31")
@pytest.mark.parametrize(
    ("frame", "conn", "transport", "header", "expected"),
    [c[1:] for c in JUDGE_CASES],
    ids=[c[0] for c in JUDGE_CASES],
)
def test_judge(
    frame: dict[str, Any], conn: Conn, transport: Any, header: str | None, expected: str
) -> None:
    assert judge(frame, conn, transport=transport, header_version=header) == expected


# S-LIFE-13, S-HTTP-34: an unimplemented version in _meta is -32022 with supported/requested.
@pytest.mark.obligation("S-LIFE-13", "S-HTTP-34")
@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25", "2024-11-05"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_judge_unsupported_modern_version(version: str, transport: Any) -> None:
    header = version if transport == "http" else None
    with pytest.raises(UnsupportedProtocolVersion) as info:
        judge(modern(version), Conn(transport), transport=transport, header_version=header)
    err = info.value
    assert err.code == -32022
    assert err.supported == ["2026-07-28"]
    assert err.requested == version
    assert version in err.message


# S-HTTP-33: header and _meta disagree (or the header is missing) -> -32020, before -32022.
@pytest.mark.obligation("S-HTTP-33")
@pytest.mark.parametrize(
    ("meta_version", "header"),
    [("2025-11-25", NEWEST), (NEWEST, "2025-11-25"), (NEWEST, None), ("1900-01-01", NEWEST)],
)
def test_judge_header_disagrees_with_meta(meta_version: str, header: str | None) -> None:
    with pytest.raises(HeaderMismatch) as info:
        judge(modern(meta_version), Conn("http"), transport="http", header_version=header)
    assert info.value.code == -32020
    assert "MCP-Protocol-Version" in info.value.message


# S-HTTP-32: a header naming no revision is a 400.
@pytest.mark.obligation("S-HTTP-32")
def test_judge_garbage_header() -> None:
    with pytest.raises(UnsupportedProtocolVersion) as info:
        judge(plain(), Conn("http"), transport="http", header_version="1900-01-01")
    assert info.value.code == -32022
    assert info.value.http_status == 400
    assert "1900-01-01" in info.value.message


REMOVED_IN_2026 = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
]


# S-HTTP-35, S-RES-5: methods 2026-07-28 removed are -32601 (HTTP 404) to a modern peer.
@pytest.mark.obligation("S-HTTP-35", "S-RES-5")
@pytest.mark.parametrize("method", REMOVED_IN_2026)
def test_removed_methods_refused_for_modern(method: str) -> None:
    with pytest.raises(MethodNotFound) as info:
        check_removed(method, NEWEST)
    assert info.value.code == -32601
    assert info.value.http_status == 404
    assert method in info.value.message


# S-LIFE-11, S-LOG-2: the same methods stay for every legacy revision.
@pytest.mark.obligation("S-LIFE-11", "S-LOG-2")
@pytest.mark.parametrize("method", REMOVED_IN_2026)
@pytest.mark.parametrize("revision", LEGACY)
def test_removed_methods_kept_for_legacy(method: str, revision: str) -> None:
    check_removed(method, revision)


@pytest.mark.parametrize(
    "method", ["tools/call", "server/discover", "subscriptions/listen", "tasks/get", "foo/bar"]
)
def test_defined_or_unknown_methods_pass(method: str) -> None:
    check_removed(method, NEWEST)
