"""Obligations over the daemon's /mcp (Streamable HTTP): server/discover, the
2026-07-28 cache hints, what the endpoint does not serve (the 2024-11-05 HTTP+SSE
transport), and the legacy sessions' ids.

A real daemon with real upstreams (the demo server; the official SDK's fixture server),
listing one item per page so that every list has pages. Every frame read from mcpx is
validated strictly against its revision.
"""

from __future__ import annotations

import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.modern import MODERN, modern_headers, modern_meta, modern_request
from support.schemas import FrameLog

META = modern_meta(client="t")
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
LIMIT = 60.0
# What each cacheable method's result lists, and whether it is paged.
LISTS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
README = "mcpx://demo/" + quote("demo://readme", safe="")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "legacy": sdk_entry("1.23.3"),
    }
    settings = {"mcp.pageSize": 1}
    with running_daemon(tmp_path_factory.mktemp("obl-a-http"), servers, settings) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=LIMIT) as client:
        yield client


def _modern(
    mcp: httpx.Client,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    **meta: Any,
) -> httpx.Response:
    frame = modern_request(1, method, params, {**META, **meta})
    return mcp.post("/mcp", json=frame, headers=modern_headers(method, name=name))


def _ok(r: httpx.Response, sent_frames: FrameLog, method: str) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    sent_frames.sent(r.json(), MODERN, answering=method)
    assert "result" in r.json(), r.json()
    result: dict[str, Any] = r.json()["result"]
    return result


def _pages(mcp: httpx.Client, sent_frames: FrameLog, method: str) -> list[dict[str, Any]]:
    pages, cursor = [], None
    while True:
        page = _ok(
            _modern(mcp, method, {} if cursor is None else {"cursor": cursor}), sent_frames, method
        )
        pages.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            return pages
        assert len(pages) < 50


def _hints(result: dict[str, Any]) -> tuple[Any, Any]:
    return result.get("ttlMs"), result.get("cacheScope")


# -- server/discover ------------------------------------------------------------------


@pytest.mark.obligation("S-DISC-1", "S-DISC-2", "S-DISC-3")
def test_discover_answers_with_every_field(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    r = _modern(mcp, "server/discover")
    assert "mcp-session-id" not in r.headers
    result = _ok(r, sent_frames, "server/discover")  # strict: DiscoverResult of 2026-07-28
    assert MODERN in result["supportedVersions"]
    assert isinstance(result["capabilities"], dict)
    assert result["resultType"] == "complete"
    ttl, scope = _hints(result)
    assert isinstance(ttl, int) and ttl >= 0 and scope in ("public", "private")
    assert isinstance(result["instructions"], str) and result["instructions"]
    info = result["_meta"][SERVER_INFO]
    assert info["name"] == "mcpx" and isinstance(info["version"], str)


@pytest.mark.obligation("S-DISC-4", "S-LOG-1")
def test_declared_capabilities_are_what_is_served(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    caps = _ok(_modern(mcp, "server/discover"), sent_frames, "server/discover")["capabilities"]
    works: dict[str, list[tuple[str, dict[str, Any], str | None]]] = {
        "tools": [("tools/list", {}, None), ("tools/call", _echo(), "mcpx_call")],
        "prompts": [
            ("prompts/list", {}, None),
            ("prompts/get", {"name": "demo_hello", "arguments": {"name": "Ada"}}, "demo_hello"),
        ],
        "resources": [
            ("resources/list", {}, None),
            ("resources/templates/list", {}, None),
            ("resources/read", {"uri": README}, README),
        ],
        "completions": [
            (
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "demo_hello"},
                    "argument": {"name": "name", "value": "A"},
                },
                None,
            )
        ],
    }
    assert set(works) <= set(caps), caps
    for capability, calls in works.items():
        for method, params, name in calls:
            result = _ok(_modern(mcp, method, params, name=name), sent_frames, method)
            assert result["resultType"] == "complete", (capability, method, result)
    # S-LOG-1: logging is declared, as mcpx relays upstream log lines on a request's own
    # stream to a host that names a logLevel; 2026-07-28 has no logging/setLevel (removed).
    assert caps["logging"] == {}, caps
    # What is not declared is not served: no tasks.
    assert "tasks" not in caps
    for method, params in (("logging/setLevel", {"level": "debug"}), ("tasks/list", {})):
        r = _modern(mcp, method, params)
        assert (r.status_code, r.json()["error"]["code"]) == (404, -32601), r.text
        sent_frames.sent(r.json(), MODERN)


def _echo(text: str = "hi") -> dict[str, Any]:
    args = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
    return {"name": "mcpx_call", "arguments": args}


# -- cache hints ---------------------------------------------------------------------


@pytest.mark.obligation("S-CACHE-1", "S-CACHE-2")
def test_every_cacheable_result_has_both_hints(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    results = {
        "server/discover": _ok(_modern(mcp, "server/discover"), sent_frames, "server/discover"),
        "resources/read": _ok(
            _modern(mcp, "resources/read", {"uri": README}, name=README),
            sent_frames,
            "resources/read",
        ),
    }
    for method in LISTS:
        results[method] = _ok(_modern(mcp, method), sent_frames, method)
    assert len(results) == 6
    for method, result in results.items():
        ttl, scope = _hints(result)
        assert result["resultType"] == "complete"
        assert type(ttl) is int and ttl >= 0, (method, ttl)
        assert scope in ("public", "private"), (method, scope)
    # Non-cacheable results carry none.
    call = _ok(_modern(mcp, "tools/call", _echo(), name="mcpx_call"), sent_frames, "tools/call")
    assert _hints(call) == (None, None)


@pytest.mark.obligation("S-CACHE-4")
@pytest.mark.parametrize("method", list(LISTS))
def test_every_page_of_a_list_has_the_same_scope(
    mcp: httpx.Client, sent_frames: FrameLog, method: str
) -> None:
    pages = _pages(mcp, sent_frames, method)
    assert len(pages) >= 2, pages  # one item per page here
    scopes = {p["cacheScope"] for p in pages}
    assert len(scopes) == 1, scopes
    assert all(type(p["ttlMs"]) is int and p["ttlMs"] >= 0 for p in pages)


@pytest.mark.obligation("S-CACHE-5")
def test_public_results_are_the_same_for_every_caller(
    mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    # Results marked public hold nothing of the caller's: whoever asks (another named
    # session, another client, other capabilities), the same bytes come back. What may
    # hold the caller's own things (resources) is private.
    callers: list[dict[str, Any]] = [
        {},
        {"dev.mcpx/session": "alice"},
        {
            "dev.mcpx/session": "bob",
            "io.modelcontextprotocol/clientInfo": {"name": "other", "version": "2"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
        },
    ]
    seen: dict[str, list[dict[str, Any]]] = {}
    for meta in callers:
        for method in ("server/discover", *LISTS):
            seen.setdefault(method, []).append(
                _ok(_modern(mcp, method, **meta), sent_frames, method)
            )
        read = _modern(mcp, "resources/read", {"uri": README}, name=README, **meta)
        seen.setdefault("resources/read", []).append(_ok(read, sent_frames, "resources/read"))
    for method, results in seen.items():
        scope = results[0]["cacheScope"]
        assert all(r["cacheScope"] == scope for r in results), method
        if scope == "public":
            assert all(r == results[0] for r in results), method
    assert seen["resources/list"][0]["cacheScope"] == "private"
    assert seen["resources/read"][0]["cacheScope"] == "private"


def _calls(daemon: Daemon, server: str) -> int:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return sum(i["calls"] for s in servers if s["name"] == server for i in s["instances"])


# S-CACHE-8; S-CACHE-7 (reading: one authorization context per upstream, and reads are
# never cached)
@pytest.mark.obligation("S-CACHE-8", "S-CACHE-7")
def test_reads_are_never_served_from_a_cache(
    daemon: Daemon, mcp: httpx.Client, sent_frames: FrameLog
) -> None:
    # Every read reaches the upstream, and each URI gets its own contents.
    item = "mcpx://legacy/" + quote("fixture://item/{id}", safe="")
    texts: dict[str, set[str]] = {}
    before = _calls(daemon, "legacy")
    for id_ in ("1", "2", "1"):
        uri = item.replace(quote("{id}", safe=""), id_)
        r = _modern(mcp, "resources/read", {"uri": uri}, name=uri)
        contents = _ok(r, sent_frames, "resources/read")["contents"]
        assert [c["uri"] for c in contents] == [uri]
        texts.setdefault(id_, set()).add(contents[0]["text"])
    assert texts["1"] != texts["2"]
    assert _calls(daemon, "legacy") - before == 3


# -- what /mcp does not serve, and the legacy sessions ----------------------------------


# S-SSE-5; S-SSE-1, S-SSE-2, S-SSE-3, S-SSE-4 (not offered: no HTTP+SSE server transport)
@pytest.mark.obligation("S-SSE-5", "S-SSE-1", "S-SSE-2", "S-SSE-3", "S-SSE-4")
def test_there_is_no_http_sse_endpoint_for_hosts(mcp: httpx.Client) -> None:
    # The 2024-11-05 HTTP+SSE way in (GET a stream, expect an endpoint event first) is not
    # served: /mcp is Streamable HTTP only; 2024-11-05 hosts use stdio (mcpx serve) or
    # Streamable HTTP.
    for path in ("/sse", "/mcp/sse", "/messages"):
        assert mcp.get(path, headers={"Accept": "text/event-stream"}).status_code == 404
    r = mcp.get("/mcp", headers={"Accept": "text/event-stream"})
    assert r.status_code == 405
    assert not r.headers["content-type"].startswith("text/event-stream")
    assert "event: endpoint" not in r.text


@pytest.mark.obligation("S-SEC-5")
def test_session_ids_are_unguessable(mcp: httpx.Client, sent_frames: FrameLog) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    ids = []
    for _ in range(20):
        r = mcp.post("/mcp", json=init)
        sent_frames.sent(r.json(), "2025-11-25", answering="initialize")
        ids.append(r.headers["mcp-session-id"])
    try:
        assert len(set(ids)) == len(ids)
        # At least 32 characters of a 64-letter alphabet: 192 bits, from a CSPRNG.
        assert all(re.fullmatch(r"[A-Za-z0-9_-]{32,}", i) for i in ids), ids
        # Nearby ids share no prefix a guesser could walk.
        assert len({i[:8] for i in ids}) == len(ids)
        # An id that was never handed out opens nothing.
        forged = ids[0][:-1] + ("A" if ids[0][-1] != "A" else "B")
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        r = mcp.post(
            "/mcp",
            json=ping,
            headers={"Mcp-Session-Id": forged, "MCP-Protocol-Version": "2025-11-25"},
        )
        assert r.status_code == 404
        sent_frames.sent(r.json(), "2025-11-25")
    finally:
        for sid in ids:
            mcp.delete("/mcp", headers={"Mcp-Session-Id": sid})


# S-SEC-4 (not offered: no authentication; only the owner's sockets and loopback reach it)
@pytest.mark.obligation("S-SEC-4")
def test_the_daemon_is_reachable_only_locally(daemon: Daemon, sent_frames: FrameLog) -> None:
    # Its unix sockets are the owner's alone; its TCP port is on loopback (the default
    # address: lifecycle_stdio's cold start), and a page in a browser (another
    # origin) is refused before anything is read.
    for path in (Path(daemon.info["socket"]), daemon.state / "mcpx-stdio.sock"):
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert path.stat().st_mode & 0o777 == 0o600, path
    with httpx.Client(base_url=daemon.info["url"], timeout=LIMIT) as mcp:
        _ok(_modern(mcp, "server/discover"), sent_frames, "server/discover")
        frame = modern_request(1, "server/discover", meta=META)
        headers = {**modern_headers("server/discover"), "Origin": "https://attacker.example"}
        assert mcp.post("/mcp", json=frame, headers=headers).status_code == 403
