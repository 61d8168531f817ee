"""Helpers shared by the client-transport obligation tests in this directory.

``META``, the MCP-reserved ``_meta`` prefix, and the recording Streamable HTTP fake that
stands in for an upstream: a starlette app (run by uvicorn on 127.0.0.1, in a thread, by
``serve_fake``) that records every HTTP request with its headers and body. The
``http_fake`` fixture that serves it lives in conftest.py; its tests are in test_http.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from support.asgi import loopback_socket, running_app

META = "io.modelcontextprotocol/"


# -- the recording HTTP fake --------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    headers: dict[str, str]
    body: bytes

    def frame(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpFake:
    port: int
    mode: str = "legacy"
    discover: str = "empty400"  # legacy: what a modern probe gets
    seen: list[Seen] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    probes: int = 0
    # The x-mcp-header name of echo's "region": the one tools/list shows, and the one
    # tools/call checks (mode "modern-headers" only).
    listed: str = "Region"
    checked: str = "Region"
    # How many "flaky" tool calls still get a response stream cut short, and how:
    # "end" (the stream ends) or "break" (the connection drops mid-body).
    cuts: int = 0
    cut: str = "end"
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def reset(self, mode: str, discover: str = "empty400") -> None:
        with self.lock:
            self.mode, self.discover = mode, discover
            self.seen.clear()
            self.events.clear()
            self.sessions.clear()
            self.probes = 0
            self.listed = self.checked = "Region"
            self.cuts, self.cut = 0, "end"

    def of(self, verb: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == verb]


LEGACY_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "http-fake", "version": "1"},
}
TOOLS = [
    {
        "name": "echo",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "region": {"type": "string", "x-mcp-header": "Region"},
            },
        },
    },
    {
        "name": "broken-annotation",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    },
    {"name": "slow", "inputSchema": {"type": "object"}},
]


def _json(body: Any, status: int = 200, **headers: str) -> Response:
    # Header names lower-case on purpose (C-HTTP-35).
    return Response(
        json.dumps(body).encode(),
        status_code=status,
        headers={"content-type": "application/json", **headers},
    )


def _modern(rid: Any, value: dict[str, Any]) -> dict[str, Any]:
    info = {META + "serverInfo": {"name": "http-fake", "version": "1"}}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"resultType": "complete", **value, "_meta": info},
    }


def build(fake: HttpFake) -> Starlette:  # noqa: C901 - one closure per route
    async def post(request: Request) -> Response:
        body = await request.body()
        with fake.lock:
            fake.seen.append(Seen("POST", {k.lower(): v for k, v in request.headers.items()}, body))
        frame = json.loads(body)
        if "method" not in frame or "id" not in frame:
            return Response(status_code=202)
        rid, method = frame["id"], frame["method"]
        params = frame.get("params") or {}
        if method == "tools/call" and params.get("name") == "flaky" and fake.cuts:
            with fake.lock:
                fake.cuts -= 1
            return StreamingResponse(cut_short(), media_type="text/event-stream")
        if fake.mode == "legacy":
            return legacy(request, rid, method)
        if method == "tools/call" and fake.mode == "modern-headers":
            mismatch = param_mismatch(request, rid, params)
            if mismatch is not None:
                return mismatch
        return modern(rid, method, params)

    async def cut_short() -> AsyncIterator[bytes]:
        note = {"jsonrpc": "2.0", "method": "notifications/message"}
        note["params"] = {"level": "info", "data": "working"}
        yield f"event: message\ndata: {json.dumps(note)}\n\n".encode()
        if fake.cut == "break":
            raise ConnectionAbortedError("the fake drops the connection mid-body")

    def param_mismatch(request: Request, rid: Any, params: dict[str, Any]) -> Response | None:
        region = (params.get("arguments") or {}).get("region")
        if request.headers.get(f"mcp-param-{fake.checked}") == region:
            return None
        error = {"code": -32020, "message": f"Header mismatch: Mcp-Param-{fake.checked}"}
        return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)

    def legacy(request: Request, rid: Any, method: str) -> Response:
        if method == "server/discover":
            if fake.discover == "empty400":
                return Response(status_code=400)
            if fake.discover == "legacy-32602":
                error = {"code": -32602, "message": "Unsupported protocol version"}
                return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)
            error = {"code": -32601, "message": "Method not found"}
            return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 404)
        if method == "initialize":
            sid = f"sid-{len(fake.sessions)}-secret"
            fake.sessions.add(sid)
            return _json(
                {"jsonrpc": "2.0", "id": rid, "result": LEGACY_INIT}, **{"mcp-session-id": sid}
            )
        if request.headers.get("mcp-session-id") not in fake.sessions:
            return Response(b"unknown session", status_code=404)
        if request.headers.get("mcp-protocol-version") != "2025-06-18":
            return Response(b"bad version header", status_code=400)
        if method == "tools/list":
            return _json({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:1]}})
        result = {"content": [{"type": "text", "text": "ok"}]}
        return _json({"jsonrpc": "2.0", "id": rid, "result": result})

    def modern(rid: Any, method: str, params: dict[str, Any]) -> Response:
        if method == "server/discover":
            fake.probes += 1
            if fake.discover == "32022-first" and fake.probes == 1:
                data = {"supported": ["2026-07-28"], "requested": "2026-07-28"}
                error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
                return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)
            value = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "ttlMs": 0,
                "cacheScope": "public",
            }
            return _json(_modern(rid, value))
        if method == "initialize":
            error = {"code": -32601, "message": "Method not found"}
            return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 404)
        if method == "tools/list":
            tools = json.loads(json.dumps(TOOLS))
            tools[0]["inputSchema"]["properties"]["region"]["x-mcp-header"] = fake.listed
            return _json(_modern(rid, {"tools": tools, "ttlMs": 0, "cacheScope": "public"}))
        if method == "tools/call" and params.get("name") == "slow":
            return StreamingResponse(hang(rid), media_type="text/event-stream")
        if method == "resources/read":
            uri = params["uri"]
            return _json(_modern(rid, {"contents": [{"uri": uri, "text": "t"}]}))
        if method == "prompts/get":
            return _json(_modern(rid, {"messages": []}))
        return _json(_modern(rid, {"content": [{"type": "text", "text": "ok"}]}))

    async def hang(rid: Any) -> AsyncIterator[bytes]:
        yield b": still working\n\n"
        try:
            await anyio.sleep_forever()
        finally:
            with fake.lock:
                fake.events.append(f"closed:{rid}")

    async def get(request: Request) -> Response:
        with fake.lock:
            fake.seen.append(Seen("GET", {k.lower(): v for k, v in request.headers.items()}, b""))
        if fake.mode != "legacy":
            return Response(status_code=405)

        async def stream() -> AsyncIterator[bytes]:
            ping = {"jsonrpc": "2.0", "id": "g-ping", "method": "ping"}
            yield f"event: message\ndata: {json.dumps(ping)}\n\n".encode()
            await anyio.sleep_forever()

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def delete(request: Request) -> Response:
        with fake.lock:
            fake.seen.append(
                Seen("DELETE", {k.lower(): v for k, v in request.headers.items()}, b"")
            )
        return Response(status_code=405)

    return Starlette(
        routes=[
            Route("/mcp", post, methods=["POST"]),
            Route("/mcp", get, methods=["GET"]),
            Route("/mcp", delete, methods=["DELETE"]),
        ]
    )


@contextmanager
def serve_fake() -> Iterator[HttpFake]:
    sock = loopback_socket()
    fake = HttpFake(port=sock.getsockname()[1])
    with running_app(build(fake), sock):
        yield fake
