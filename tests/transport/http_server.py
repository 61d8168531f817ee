"""A live MCP-ish HTTP server for the transport tests (starlette, uvicorn, 127.0.0.1).

It knows just enough MCP to exercise the transports, and records what it receives:

``POST /mcp``
    ``initialize`` mints an ``Mcp-Session-Id``; an unknown session id gets 404; a header
    named by ``X-Test-Require`` that is missing gets 400 with a JSON-RPC error body
    (id-less unless ``X-Test-Error-Id`` is set). Notifications and responses get 202.
    Requests are answered as JSON, or as SSE when ``X-Test-Response: sse``; the method
    picks the SSE script (see ``_sse_script``).
``GET /mcp``
    The standalone stream, by ``get_mode``: "sse" (push one notification, then stay
    open), "405", or "drop" (push, ask ``retry: 20`` and end; a reconnection with
    ``Last-Event-ID`` gets the next notification). A ``Last-Event-ID`` of a resumable
    POST stream replays its response.
``DELETE /mcp``
    Recorded; 200, or 405 when ``delete_mode`` says so.
``/moved``, ``/away``
    307 to ``/mcp``, on this origin and on another (``localhost`` for ``127.0.0.1``).
``GET /sse`` + ``POST /messages?session=…``
    The 2024-11-05 HTTP+SSE pair; ``/sse-offorigin`` names an endpoint on another
    origin, ``/sse-silent`` never names one, ``/sse-short`` ends right after naming it.

With ``hold_unrequested`` set, a POST of a frame that is not a request (a notification,
an answer) is answered only once another POST arrives, or after ``_HOLD`` seconds;
"overlap" is an event when another did arrive meanwhile: what a server that reads
concurrent POSTs in any order might read first.

The server runs in a thread on its own event loop, so every record goes through a lock
and tests wait for server-side facts with ``until`` (bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from support.asgi import loopback_socket, running_app

# How long a held answer waits for another POST (``hold_unrequested``): long enough for a
# client that sends on without waiting to have sent its next frame.
_HOLD = 1.0


@dataclass
class Record:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    port: int

    def frame(self) -> Any:
        return json.loads(self.body)


@dataclass
class TestServer:
    __test__ = False  # not a pytest test class

    port: int
    requests: list[Record] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    get_mode: str = "sse"
    delete_mode: str = "ok"
    resumable: dict[str, Any] = field(default_factory=dict)
    legacy_queues: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    hold_unrequested: bool = False
    arrived: asyncio.Event | None = None  # set by the next POST while one is held
    lock: threading.Condition = field(default_factory=threading.Condition)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.events.clear()
            self.sessions.clear()
            self.resumable.clear()
            self.get_mode = "sse"
            self.delete_mode = "ok"
            self.hold_unrequested = False

    def record(self, request: Request, body: bytes) -> None:
        client = request.scope.get("client") or ("", 0)
        entry = Record(
            request.method,
            request.url.path,
            {k.lower(): v for k, v in request.headers.items()},
            body,
            client[1],
        )
        with self.lock:
            self.requests.append(entry)
            self.lock.notify_all()
        if request.method == "POST" and self.arrived is not None:
            self.arrived.set()

    async def held(self, frame: dict[str, Any]) -> None:
        """Hold the answer to a POST of ``frame`` when ``hold_unrequested`` says so."""
        if not self.hold_unrequested or ("method" in frame and "id" in frame):
            return
        arrived = self.arrived = asyncio.Event()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), _HOLD)
        finally:
            self.arrived = None
        if arrived.is_set():
            self.event("overlap")

    def event(self, text: str) -> None:
        with self.lock:
            self.events.append(text)
            self.lock.notify_all()

    def posts(self) -> list[Record]:
        with self.lock:
            return [r for r in self.requests if r.method == "POST"]

    def ports(self) -> set[int]:
        with self.lock:
            return {r.port for r in self.requests}

    async def until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait (bounded) until ``predicate`` holds for the server's records."""

        def wait() -> bool:
            with self.lock:
                return self.lock.wait_for(predicate, timeout)

        assert await anyio.to_thread.run_sync(wait), "server never saw what the test expected"


def _sse(frame: Any, *, event: str = "message", eid: str | None = None) -> bytes:
    head = f"id: {eid}\n" if eid is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(frame)}\n\n".encode()


def _result(frame: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": frame["id"],
        "result": {"method": frame["method"], "params": frame.get("params", {})},
    }


def build_app(server: TestServer) -> Starlette:  # noqa: C901 - one closure per route
    async def mcp_post(request: Request) -> Response:
        body = await request.body()
        server.record(request, body)
        sid = request.headers.get("mcp-session-id")
        if sid is not None and sid not in server.sessions:
            return PlainTextResponse("unknown session", status_code=404)
        frame = json.loads(body)
        await server.held(frame)
        required = request.headers.get("x-test-require")
        if required and required.lower() not in {k.lower() for k in request.headers}:
            error: dict[str, Any] = {"jsonrpc": "2.0"}
            if request.headers.get("x-test-error-id"):
                error["id"] = frame.get("id")
            error["error"] = {"code": -32020, "message": f"missing header {required}"}
            return JSONResponse(error, status_code=400)
        if "method" not in frame or "id" not in frame:
            return Response(status_code=202)
        headers: dict[str, str] = {}
        if frame["method"] == "initialize":
            sid = uuid.uuid4().hex
            with server.lock:
                server.sessions.add(sid)
            headers["Mcp-Session-Id"] = sid
        elif sid is not None:
            headers["Mcp-Session-Id"] = sid  # an echo, as real servers do
        return _answer(server, frame, request.headers.get("x-test-response", "json"), headers)

    async def mcp_get(request: Request) -> Response:
        server.record(request, b"")
        last = request.headers.get("last-event-id")
        if last and last in server.resumable:
            frame = server.resumable[last]
            return _stream([_sse(_result(frame), eid=f"{last}-final")])
        if server.get_mode == "405":
            return Response(status_code=405)
        if server.get_mode == "drop" and not last:
            note = {"jsonrpc": "2.0", "method": "notifications/first"}
            return _stream([b"retry: 20\n", _sse(note, eid="g-1")])
        method = "notifications/after-resume" if last else "notifications/tools/list_changed"
        return _stream([_sse({"jsonrpc": "2.0", "method": method}, eid="g-2")], hang="get")

    async def mcp_delete(request: Request) -> Response:
        server.record(request, b"")
        server.event(f"delete:{request.headers.get('mcp-session-id')}")
        return Response(status_code=405 if server.delete_mode == "405" else 200)

    async def legacy_get(request: Request) -> Response:
        server.record(request, b"")
        key = uuid.uuid4().hex
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        server.legacy_queues[key] = queue

        async def body() -> AsyncIterator[bytes]:
            yield f"event: endpoint\ndata: /messages?session={key}\n\n".encode()
            try:
                while True:
                    yield _sse(await queue.get())
            finally:
                server.legacy_queues.pop(key, None)
                server.event("legacy-disconnect")

        return StreamingResponse(body(), media_type="text/event-stream")

    async def legacy_post(request: Request) -> Response:
        body = await request.body()
        server.record(request, body)
        queue = server.legacy_queues.get(request.query_params.get("session", ""))
        if queue is None:
            return PlainTextResponse("no such session", status_code=404)
        frame = json.loads(body)
        await server.held(frame)
        if "method" in frame and "id" in frame:
            if frame["method"] == "fail":
                error = {"code": -32603, "message": "rejected"}
                return JSONResponse({"jsonrpc": "2.0", "error": error}, status_code=400)
            if frame["method"] == "stream":
                await queue.put({"jsonrpc": "2.0", "method": "notifications/progress"})
            await queue.put(_result(frame))
        return PlainTextResponse("Accepted", status_code=202)

    async def off_origin(request: Request) -> Response:
        return _stream([b"event: endpoint\ndata: http://evil.example:8080/messages\n\n"], hang="x")

    async def silent(request: Request) -> Response:
        return _stream([b": nothing to see\n\n"], hang="x")

    async def short(request: Request) -> Response:
        return _stream([b"event: endpoint\ndata: /messages?session=none\n\n"])

    async def moved(request: Request) -> Response:
        return RedirectResponse("/mcp", status_code=307)

    async def away(request: Request) -> Response:
        return RedirectResponse(f"http://localhost:{server.port}/mcp", status_code=307)

    def _stream(chunks: list[bytes], hang: str | None = None) -> Response:
        async def body() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk
            if hang is not None:
                try:
                    await anyio.sleep_forever()
                finally:
                    server.event(f"{hang}-disconnect")

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/mcp", mcp_post, methods=["POST"]),
            Route("/mcp", mcp_get, methods=["GET"]),
            Route("/mcp", mcp_delete, methods=["DELETE"]),
            Route("/sse", legacy_get, methods=["GET"]),
            Route("/messages", legacy_post, methods=["POST"]),
            Route("/sse-offorigin", off_origin, methods=["GET"]),
            Route("/sse-silent", silent, methods=["GET"]),
            Route("/sse-short", short, methods=["GET"]),
            Route("/moved", moved, methods=["GET", "POST"]),
            Route("/away", away, methods=["GET", "POST"]),
        ]
    )


def _answer(
    server: TestServer, frame: dict[str, Any], mode: str, headers: dict[str, str]
) -> Response:
    method = frame["method"]
    params = frame.get("params") or {}
    if method == "fail/500":
        return PlainTextResponse("internal trouble", status_code=500)
    if method == "fail/not-json":
        return Response(b"<html>oops</html>", media_type="application/json")
    if method == "fail/big400":
        return PlainTextResponse("e" * params["size"], status_code=400)
    if method == "fail/text":
        return PlainTextResponse("plain words", status_code=200)
    if method == "fail/empty":
        return Response(status_code=202)
    if method == "big":
        big = {"jsonrpc": "2.0", "id": frame["id"], "result": {"blob": "b" * params["size"]}}
        if mode == "sse":
            return StreamingResponse(iter([_sse(big)]), media_type="text/event-stream")
        return JSONResponse(big)
    if mode == "json":
        if method == "batch":
            note = {"jsonrpc": "2.0", "method": "notifications/message"}
            return JSONResponse([note, _result(frame)], headers=headers)
        return JSONResponse(_result(frame), headers=headers)
    return StreamingResponse(
        _sse_script(server, frame), media_type="text/event-stream", headers=headers
    )


async def _sse_script(server: TestServer, frame: dict[str, Any]) -> AsyncIterator[bytes]:
    """``hang``: a notification, then nothing until the client goes. ``cut``: a
    notification and the end. ``resumable``: a priming event, a notification with an id
    and ``retry``, then the end (the answer waits for a GET with ``Last-Event-ID``).
    Anything else: a notification, a server request, then the answer."""
    rid, method = frame["id"], frame["method"]
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"of": rid}}
    if method == "resumable":
        stream = f"r{rid}"
        server.resumable[f"{stream}-1"] = frame
        yield f"id: {stream}-0\ndata:\n\n".encode()
        yield b"retry: 20\n" + _sse(progress, eid=f"{stream}-1")
        return
    yield b": keep-alive comment\n\n"
    yield _sse(progress)
    if method == "hang":
        try:
            await anyio.sleep_forever()
        finally:
            server.event(f"disconnect:{rid}")
    if method == "cut":
        return
    ask = {"jsonrpc": "2.0", "id": f"s-{rid}", "method": "roots/list"}
    yield _sse(ask)
    yield _sse(_result(frame))


@contextmanager
def serve() -> Iterator[TestServer]:
    """Run the app on an ephemeral 127.0.0.1 port in a thread for the ``with`` block.

    The socket is bound and listening before the thread starts, so clients may connect at
    once: the kernel queues them until uvicorn accepts. No waiting for startup is needed.
    """
    sock = loopback_socket()
    server = TestServer(port=sock.getsockname()[1])
    with running_app(build_app(server), sock):
        yield server
