"""The daemon's ``/mcp`` endpoint: MCP over Streamable HTTP, every revision, one URL.

Job: turn HTTP requests into frames for ``server.dispatch`` and its answers back into
HTTP, with the transport rules of each era around it.

Invariants:

- ``Origin`` is checked on every request before anything is parsed (DNS rebinding):
  anything but loopback, the daemon's own address and ``transport.allowedOrigins`` is 403.
- A body with modern ``_meta``, or a 2026-07-28 ``MCP-Protocol-Version`` header, is
  served statelessly: its headers must agree with its body, it gets a fresh ``Conn``, no
  session is minted or echoed, and an error's HTTP status follows its code.
- Legacy: only ``initialize`` mints an ``Mcp-Session-Id``; every other legacy message
  names a live session (none: 400; unknown or ended: 404). A session's state lives on its
  own ``Conn`` here, never on the server, so sessions share nothing.
- GET opens a legacy session's event stream (nothing is pushed yet; comments keep it
  alive); DELETE ends a session, and its stream with it.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from mcpx import wire
from mcpx.ops import OpContext
from mcpx.server import (
    META_VERSION,
    Audience,
    Conn,
    Questions,
    check_headers,
    check_meta,
    dispatch,
    origin_allowed,
    release_all,
    tool_schema,
)
from mcpx.spec import HEADERLESS, MODERN
from mcpx.wire import (
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    InvalidRequest,
    Kind,
    McpError,
)

from ._later import Later
from ._mcp_answer import LazyAnswer
from ._running import Running

__all__ = ["McpEndpoint"]

_JSON: Final = "application/json"


# Frames waiting for a session's GET stream; beyond this the oldest are dropped (they
# are change hints, and a client that never opens the stream never reads them).
_OUTBOX: Final = 256


@dataclass
class _Session:
    """One legacy session: its connection state, when it was last used, its end, and
    what waits for its GET stream."""

    conn: Conn
    used: float = field(default_factory=time.monotonic)
    streams: int = 0
    ended: anyio.Event = field(default_factory=anyio.Event)
    outbox: deque[wire.Frame] = field(default_factory=lambda: deque(maxlen=_OUTBOX))
    waiting: anyio.Event = field(default_factory=anyio.Event)

    # Questions put to the client on its POSTs' streams, waiting for its answers.
    questions: Questions = field(default_factory=Questions)
    # Its requests being answered: a notifications/cancelled POST stops one.
    running: Running = field(default_factory=Running)

    def deliver(self, frame: dict[str, Any]) -> None:
        """The session's push: queued for its GET stream (sync, never blocks)."""
        self.outbox.append(frame)
        self.waiting.set()


def _reply(body: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(wire.dumps(body), status_code=status, media_type=_JSON, headers=headers)


def _refuse(status: int, message: str, request_id: wire.RequestId | None = None) -> Response:
    # An HTTP-level refusal still carries a JSON-RPC error, so a client can show why.
    return _reply(wire.error(request_id, InvalidRequest(message)), status)


def _traced(ctx: OpContext, rev: str | None, response: Response) -> Response:
    # Refusals made before dispatch ran still reach log.frames (dispatch traces its own).
    if ctx.trace is not None and response.body:
        frame = wire.loads(bytes(response.body))
        if isinstance(frame, Mapping):
            ctx.trace(rev, frame, None)
    return response


def _modern_meta(frame: Mapping[str, Any]) -> bool:
    params = frame.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return isinstance(meta, Mapping) and META_VERSION in meta


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``; holds the legacy sessions of one daemon."""

    def __init__(
        self,
        ctx: Callable[[], OpContext],
        *,
        own: list[str],
        later: Later,
        audience: Audience | None = None,
    ) -> None:
        """``ctx`` gives the live context; ``own`` holds the daemon's own origin(s);
        ``later`` runs what a slow answer needs beside its request; ``audience`` hears
        of every session, so that it can push to it."""
        self._ctx = ctx
        self._own = own
        self._later = later
        self._audience = audience
        self.sessions: dict[str, _Session] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self._handle(request)
        await response(scope, receive, send)

    async def _handle(self, request: Request) -> Response | LazyAnswer:
        settings = self._ctx().settings
        allowed = [str(o) for o in settings["transport.allowedOrigins"]]
        if not origin_allowed(request.headers.get("origin"), own=self._own, allowed=allowed):
            return self._refused(403, "Forbidden: Origin not allowed")
        self._prune(float(settings["proto.sessionIdle"]))
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return self._delete(request)
        return self._refused(405, f"Method not allowed: {request.method}")

    def _refused(
        self, status: int, message: str, request_id: wire.RequestId | None = None
    ) -> Response:
        return _traced(self._ctx(), None, _refuse(status, message, request_id))

    def close(self) -> None:
        """End every session (the daemon is stopping): their GET streams end too."""
        for sid in list(self.sessions):
            self._end(sid)

    def _prune(self, idle: float) -> None:
        # Idle sessions are dropped lazily, on the next request; one with an open stream
        # is in use even when silent.
        limit = time.monotonic() - idle
        for sid, session in list(self.sessions.items()):
            if session.used < limit and not session.streams:
                self._end(sid)

    def _end(self, sid: str) -> bool:
        session = self.sessions.pop(sid, None)
        if session is None:
            return False
        session.ended.set()
        session.waiting.set()
        if self._audience is not None:
            self._audience.leave(session.conn)
        release_all(self._ctx(), session.conn)
        # Instances scoped to this session (servers with scope "identity") end with it.
        if session.conn.identity is not None:
            pool = self._ctx().pool
            pool.spawn(pool.release, session.conn.identity)
        return True

    # -- POST ------------------------------------------------------------------

    async def _post(self, request: Request) -> Response | LazyAnswer:
        try:
            decoded = wire.decode(await request.body(), batch_ok=self._batch_ok(request))
        except McpError as exc:
            return _traced(self._ctx(), None, _reply(wire.error(exc.request_id, exc), 400))
        if decoded.batch:
            return await self._batch(request, decoded)
        kind, frame = decoded.messages[0]
        header_version = request.headers.get(MCP_PROTOCOL_VERSION)
        if _modern_meta(frame) or header_version in MODERN:
            return await self._modern(request, kind, frame, header_version)
        return await self._legacy(request, kind, frame, header_version)

    def _batch_ok(self, request: Request) -> bool:
        # Only 2025-03-26 has batches: a session negotiated at it, no other header.
        session = self.sessions.get(request.headers.get(MCP_SESSION_ID) or "")
        header = request.headers.get(MCP_PROTOCOL_VERSION)
        return (
            session is not None
            and session.conn.revision == HEADERLESS
            and header in (None, HEADERLESS)
        )

    async def _batch(self, request: Request, decoded: wire.Decoded) -> Response:
        """A 2025-03-26 batch: its requests run concurrently, answered as one array."""
        sid = request.headers[MCP_SESSION_ID]
        session = self.sessions[sid]
        session.used = time.monotonic()
        ctx = self._ctx()
        # Elements that were no message get their error; dispatch traces the rest.
        replies: list[wire.Frame] = [wire.error(i, exc) for i, exc in decoded.errors]
        for reply in replies:
            if ctx.trace is not None:
                ctx.trace(HEADERLESS, reply, None)
        for kind, frame in decoded.messages:
            if kind in (Kind.RESULT, Kind.ERROR):
                session.questions.answered(frame)  # answers to questions mcpx put to it
            elif kind is Kind.NOTIFICATION:
                await self._notified(session, frame)
        requests = [f for kind, f in decoded.messages if kind is Kind.REQUEST]
        init = next((f for f in requests if f.get("method") == "initialize"), None)
        if init is not None:
            error = InvalidRequest("initialize must not be part of a batch")
            return _traced(ctx, HEADERLESS, _reply(wire.error(init["id"], error), 400))
        answers: dict[int, wire.Frame] = {}

        async def one(i: int, frame: wire.Frame) -> None:
            with session.running.serving(frame["id"]) as scope:
                reply = await dispatch(frame, session.conn, ctx, settings=ctx.settings)
            if reply is not None and not scope.cancelled_caught:
                answers[i] = reply

        async with anyio.create_task_group() as tg:
            for i, frame in enumerate(requests):
                tg.start_soon(one, i, frame)
        replies += [answers[i] for i in sorted(answers)]
        if not replies:
            return Response(status_code=202)  # notifications and responses only
        return _reply(replies)

    async def _modern(
        self, request: Request, kind: Kind, frame: wire.Frame, header_version: str | None
    ) -> Response | LazyAnswer:
        if kind is not Kind.REQUEST:
            return Response(status_code=202)
        params = frame.get("params")
        name = params.get("name") if isinstance(params, Mapping) else None
        schema = await tool_schema(self._ctx(), name) if frame["method"] == "tools/call" else None
        try:
            # _meta first: a request without it is -32602 whatever its headers say.
            check_meta(frame.get("params"))
            # A pass-through tool's x-mcp-header marks ask for Mcp-Param-* headers.
            check_headers(request.headers, frame, tool_input_schema=schema)
        except McpError as exc:
            error = _reply(wire.error(frame["id"], exc), exc.http_status)
            return _traced(self._ctx(), MODERN[0], error)
        ctx = self._ctx()

        async def run(answer: LazyAnswer) -> wire.Frame | None:
            conn = Conn(transport="http")
            return await dispatch(
                frame,
                conn,
                ctx,
                settings=ctx.settings,
                header_version=header_version,
                notify=answer.emit,
            )

        return self._lazy(request, run, modern=True)

    async def _legacy(
        self, request: Request, kind: Kind, frame: wire.Frame, header_version: str | None
    ) -> Response | LazyAnswer:
        ctx = self._ctx()
        if kind is Kind.REQUEST and frame.get("method") == "initialize":
            minted = secrets.token_urlsafe(24)
            conn = Conn(transport="http", session_id=minted, identity=f"http:{minted}")
            opened = _Session(conn)
            # A session can always be pushed to: frames wait for its GET stream.
            conn.push = opened.deliver
            reply = await dispatch(frame, conn, ctx, settings=ctx.settings)
            if reply is None or "error" in reply:
                return _answer(reply, modern=False)  # a failed handshake opens nothing
            self.sessions[minted] = opened
            if self._audience is not None:
                self._audience.join(conn)
            return _reply(reply, headers={MCP_SESSION_ID: minted})
        request_id = frame.get("id") if kind is Kind.REQUEST else None
        sid = request.headers.get(MCP_SESSION_ID)
        if sid is None:
            return self._refused(400, "Bad Request: missing Mcp-Session-Id", request_id)
        session = self.sessions.get(sid)
        if session is None:
            return self._refused(404, "Session not found (unknown or terminated)", request_id)
        session.used = time.monotonic()
        if kind in (Kind.RESULT, Kind.ERROR):
            # The answer to a question mcpx put on one of this session's streams.
            session.questions.answered(frame)
            return Response(status_code=202)
        if kind is not Kind.REQUEST:
            await self._notified(session, frame)
            return Response(status_code=202)
        streams_ok = _offers_streams(request)
        ask_timeout = float(ctx.settings["proto.askTimeout"])

        async def run(answer: LazyAnswer) -> wire.Frame | None:
            async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
                # The POST's response becomes an event stream carrying the question; the
                # host answers with a POST of its own on the session.
                def send(request: dict[str, Any]) -> None:
                    if ctx.trace is not None:
                        ctx.trace(session.conn.revision, request, None)
                    answer.emit(request)

                return await session.questions.ask(send, method, params, ask_timeout)

            with session.running.serving(frame["id"]) as scope:
                reply = await dispatch(
                    frame,
                    session.conn,
                    ctx,
                    settings=ctx.settings,
                    header_version=header_version,
                    notify=answer.emit,
                    ask=ask if streams_ok else None,
                )
            # Withdrawn by the host: no answer (its POST gets an empty 202).
            return None if scope.cancelled_caught else reply

        return self._lazy(request, run, modern=False)

    async def _notified(self, session: _Session, frame: wire.Frame) -> None:
        """A legacy session's notification: a cancel stops its request; the rest
        (``initialized``) is recorded on the connection."""
        if frame.get("method") == "notifications/cancelled":
            session.running.cancel(frame.get("params"))
        ctx = self._ctx()
        await dispatch(frame, session.conn, ctx, settings=ctx.settings)

    def _lazy(
        self,
        request: Request,
        run: Callable[[LazyAnswer], Awaitable[wire.Frame | None]],
        *,
        modern: bool,
    ) -> LazyAnswer:
        return LazyAnswer(
            run,
            later=self._later,
            streams_ok=_offers_streams(request),
            keepalive=float(self._ctx().settings["transport.sseKeepAlive"]),
            status_of=_status_of if modern else _always_200,
            # 2026-07-28: closing the stream is cancellation (S-HTTP-24); before, a
            # disconnect is not (S-HTTP-23): the call completes.
            cancel_on_disconnect=modern,
        )

    # -- GET and DELETE --------------------------------------------------------

    def _get(self, request: Request) -> Response:
        sid = request.headers.get(MCP_SESSION_ID)
        if request.headers.get(MCP_PROTOCOL_VERSION) in MODERN or sid is None:
            # 2026-07-28 has no standalone stream; without a session there is none to open.
            return self._refused(405, "Method not allowed: GET needs a legacy session")
        session = self.sessions.get(sid)
        if session is None:
            return self._refused(404, "Session not found (unknown or terminated)")
        keepalive = float(self._ctx().settings["transport.sseKeepAlive"])
        return StreamingResponse(
            self._stream(session, keepalive),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", MCP_SESSION_ID: sid},
        )

    async def _stream(self, session: _Session, keepalive: float) -> AsyncIterator[bytes]:
        # Open until the session ends or the client goes away; a write to a closed
        # connection is how starlette notices the latter, hence the keep-alive comments.
        session.streams += 1
        try:
            yield b": stream open\n\n"
            while not session.ended.is_set():
                while session.outbox:
                    frame = session.outbox.popleft()
                    yield b"event: message\ndata: " + wire.dumps(frame) + b"\n\n"
                session.waiting = anyio.Event()
                if session.outbox:
                    continue  # delivered between the drain and the new event
                with anyio.move_on_after(keepalive) as idle:
                    await session.waiting.wait()
                session.used = time.monotonic()
                if idle.cancelled_caught and not session.ended.is_set():
                    yield b": keepalive\n\n"
        finally:
            session.streams -= 1

    def _delete(self, request: Request) -> Response:
        sid = request.headers.get(MCP_SESSION_ID)
        if sid is None:
            return self._refused(400, "Bad Request: missing Mcp-Session-Id")
        if not self._end(sid):
            return self._refused(404, "Session not found (unknown or terminated)")
        return Response(status_code=200)


def _offers_streams(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/event-stream" in accept or "*/*" in accept


def _status_of(reply: wire.Frame) -> int:
    # 2026-07-28: the status is a function of the error code (S-HTTP).
    error = reply.get("error")
    return wire.http_status(int(error["code"])) if isinstance(error, Mapping) else 200


def _always_200(reply: wire.Frame) -> int:
    return 200


def _answer(reply: wire.Frame | None, *, modern: bool) -> Response:
    if reply is None:
        return Response(status_code=202)
    error = reply.get("error")
    if modern and isinstance(error, Mapping):
        # 2026-07-28: the status is a function of the error code (S-HTTP).
        return _reply(reply, wire.http_status(int(error["code"])))
    return _reply(reply)
