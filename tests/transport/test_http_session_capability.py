"""Which transports keep an HTTP session, asked through the protocol: ``http_session()``.

Only Streamable HTTP keeps one (the session id, the headers on every request, the GET
stream); stdio and the legacy HTTP+SSE transport answer None. The client session learns
it this way, typed as ``HttpSession``, never by probing a transport's attributes.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.transport import (
    HttpSession,
    Transport,
    open_legacy_sse,
    open_stdio,
    open_streamable_http,
)
from mcpx.wire import MCP_PROTOCOL_VERSION
from transport.exchange import receive, request, result
from transport.http_server import TestServer

pytestmark = pytest.mark.anyio


async def test_stdio_and_http_sse_keep_no_http_session(
    http: TestServer, client: Any, script: Any
) -> None:
    command, args = script("echo_server")
    async with open_stdio(command, args, on_stderr=lambda line: None) as stdio:
        assert stdio.http_session() is None
    async with open_legacy_sse(f"{http.base}/sse", client=client) as sse:
        assert sse.http_session() is None


async def test_streamable_http_hands_over_its_session(http: TestServer, client: Any) -> None:
    async with open_streamable_http(http.url, client=client) as t:
        transport: Transport = t
        session: HttpSession | None = transport.http_session()
        assert session is t
        await t.send(request(1, "initialize"))
        assert await receive(t) == result(1, "initialize")
        sid = session.session_id
        assert sid is not None and sid in http.sessions
        # What the session above sets through the capability reaches the wire.
        session.session_headers = {MCP_PROTOCOL_VERSION: "2025-06-18"}
        assert await session.open_listen_stream() is True
        session.session_id = None  # the server forgot it: the next request carries none
        await t.send(request(2, "initialize"))
        # The GET stream pushes one frame; the answer comes before or after it.
        frames = [await receive(t), await receive(t)]
        assert result(2, "initialize") in frames
        assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in frames
    [get] = [r for r in http.requests if r.method == "GET"]
    assert get.headers["mcp-session-id"] == sid
    assert get.headers["mcp-protocol-version"] == "2025-06-18"
    first, second = http.posts()
    assert first.headers.get("mcp-session-id") is None
    assert second.headers.get("mcp-session-id") is None
    assert second.headers["mcp-protocol-version"] == "2025-06-18"
