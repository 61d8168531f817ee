"""The daemon's ``/mcp`` endpoint: MCP over Streamable HTTP, every revision, one URL.

Job: turn HTTP requests into frames for the server side (a legacy session's
``server.HostSession``, or ``server.dispatch`` for a stateless request) and its answers
back into HTTP, with the transport rules of each era around it. What a frame means is
the server's business; sessions, streams and statuses are this module's.

Invariants:

- ``Origin`` is checked on every request before anything is parsed (DNS rebinding):
  anything but loopback, the daemon's own address and ``transport.allowedOrigins`` is 403.
- A body with modern ``_meta``, or a 2026-07-28 ``MCP-Protocol-Version`` header, is
  served statelessly (``server.stateless``): it gets a fresh ``Conn`` and its headers go
  to ``dispatch``, which checks them against the body; no session is minted or echoed,
  and an error's HTTP status follows its code.
- Legacy: only ``initialize`` mints an ``Mcp-Session-Id``; every other legacy message
  names a live session (none: 400; unknown or ended: 404). A session's state lives on its
  own ``Conn`` here, never on the server, so sessions share nothing.
- GET opens a legacy session's event stream (nothing is pushed yet; comments keep it
  alive), at most ``proto.maxSessionStreams`` per session (409 beyond); DELETE ends a
  session, and its stream with it.
- What one client may hold is bounded, and each bound is refused early, naming its
  setting. Sessions (``_sessions``): ``proto.maxSessions``, idle ones ending after
  ``proto.sessionIdle``, at O(1) per request. A session's requests in flight:
  ``proto.maxConcurrentCalls``; one more is refused 429 with ``Retry-After`` (no
  waiting: a waiting request holds a connection and a task, and nothing would bound how
  many wait). A 2025-03-26 batch: ``proto.maxBatch`` messages, else refused whole (400,
  -32600); its requests wait in line for the session's slots, and a session has at most
  ``proto.maxBatch`` batched requests waiting or running (429 beyond).
- 2026-07-28 requests have no client identity to bound per client: each is one
  connection's request, bounded by what bounds its connection (the body and header
  limits, ``pool.callTimeout``), not counted here.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from mcpx import wire
from mcpx.ops import PROFILE_HEADER, OpContext, OpError, profiled
from mcpx.server import (
    Audience,
    Conn,
    HostSession,
    dispatch,
    origin_allowed,
    release_all,
    stateless,
    too_many_running,
)
from mcpx.spec import BATCHED, MODERN
from mcpx.wire import (
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    Kind,
    McpError,
    Throttled,
    field_value,
)

from ._guard import PRINCIPAL
from ._mcp_replies import (
    Held,
    always_200,
    answer_of,
    answers_reply,
    in_place,
    json_reply,
    offers_streams,
    refuse,
    status_of,
    traced,
)
from ._post_answer import PostAnswer
from ._sessions import Session, Sessions
from ._timers import Timers

__all__ = ["McpEndpoint"]

# Seconds a client refused for a bound is told to wait (Retry-After): a request in
# flight ends, or a session falls idle, within about that.
_RETRY_CALLS: Final = "1"
_RETRY_SESSIONS: Final = "5"
_NOT_FOUND: Final = "Session not found (unknown, expired or terminated): start a new one"


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``; holds the legacy sessions of one daemon."""

    def __init__(
        self,
        ctx: Callable[[], OpContext],
        *,
        own: list[str],
        later: Timers,
        audience: Audience | None = None,
    ) -> None:
        """``ctx`` gives the live context; ``own`` holds the daemon's own origin(s);
        ``later`` runs what a slow answer needs beside its request; ``audience`` hears
        of every session, so that it can push to it."""
        self._ctx = ctx
        self._own = own
        self._later = later
        self._audience = audience
        self.sessions = Sessions(self._ended, telemetry=lambda: self._ctx().telemetry)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self._handle(request)
        await response(scope, receive, send)

    async def _handle(self, request: Request) -> Response | PostAnswer | Held:
        settings = self._ctx().settings
        allowed = [str(o) for o in settings["transport.allowedOrigins"]]
        if not origin_allowed(request.headers.get("origin"), own=self._own, allowed=allowed):
            return self._refused(403, "Forbidden: Origin not allowed")
        self.sessions.prune(float(settings["proto.sessionIdle"]))
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return self._delete(request)
        return self._refused(405, f"Method not allowed: {request.method}")

    def _refused(
        self,
        status: int,
        message: str,
        request_id: wire.RequestId | None = None,
        *,
        error: McpError | None = None,
        retry_after: str | None = None,
    ) -> Response:
        refusal = refuse(status, message, request_id, error=error, retry_after=retry_after)
        return traced(self._ctx(), None, refusal)

    def close(self) -> None:
        """End every session (the daemon is stopping): their GET streams end too."""
        self.sessions.close()

    def _ended(self, session: Session) -> None:
        # The table forgot it (expired, evicted, deleted, or the daemon stops).
        if self._audience is not None:
            self._audience.leave(session.conn)
        ctx = self._ctx()
        release_all(ctx, session.conn)
        # Instances scoped to this session (servers with scope "identity") end with it.
        identity = session.conn.identity
        if identity is not None and ctx.pool.holds(identity):
            ctx.pool.spawn(ctx.pool.release, identity)

    # -- POST ------------------------------------------------------------------

    async def _post(self, request: Request) -> Response | PostAnswer | Held:
        try:
            decoded = wire.decode(await request.body(), batch_ok=self._batch_ok(request))
        except McpError as exc:
            return traced(self._ctx(), None, json_reply(wire.error(exc.request_id, exc), 400))
        if decoded.batch:
            return await self._batch(request, decoded)
        kind, frame = decoded.messages[0]
        refusal = self._unknown_profile(request, frame.get("id") if kind is Kind.REQUEST else None)
        if refusal is not None:
            return refusal
        if stateless(frame, field_value(request.headers, MCP_PROTOCOL_VERSION)):
            return self._stateless(request, kind, frame)
        return await self._legacy(request, kind, frame)

    def _unknown_profile(
        self, request: Request, request_id: wire.RequestId | None
    ) -> Response | None:
        """A 400 for a profile no server lists: never served as if it were another."""
        try:
            profiled(self._ctx(), _profile(request))
        except OpError as exc:
            error = wire.InvalidParams(exc.message, exc.details)
            return self._refused(400, exc.message, request_id, error=error)
        return None

    def _batch_ok(self, request: Request) -> bool:
        # A session negotiated at a revision with batches, and no other header.
        session = self._session(request, field_value(request.headers, MCP_SESSION_ID) or "")
        header = field_value(request.headers, MCP_PROTOCOL_VERSION)
        return session is not None and session.host.batches and header in (None, *BATCHED)

    async def _batch(self, request: Request, decoded: wire.Decoded) -> Response:
        """A 2025-03-26 batch: its requests run concurrently, at most as many at once as
        the session's slots, answered as one array."""
        ctx = self._ctx()
        session = self._session(request, field_value(request.headers, MCP_SESSION_ID) or "")
        if session is None:  # ended since _batch_ok saw it
            return self._refused(404, _NOT_FOUND)
        # Refused whole, before any of it is acted on: answering part would split it.
        refusal = session.host.batch_refusal(decoded, ctx.settings)
        if isinstance(refusal, Throttled):
            return self._refused(429, refusal.message, error=refusal, retry_after=_RETRY_CALLS)
        if refusal is not None:
            return self._refused(400, refusal.message, refusal.request_id, error=refusal)
        self.sessions.touch(session)
        self.sessions.hold(session)
        try:
            replies = await session.host.batch(decoded, ctx)
        finally:
            self.sessions.free(session)
        if not replies:
            return Response(status_code=202)  # notifications and responses only
        return answers_reply(ctx, session.conn.revision, replies)

    def _stateless(self, request: Request, kind: Kind, frame: wire.Frame) -> Response | PostAnswer:
        if kind is not Kind.REQUEST:
            return Response(status_code=202)
        ctx = self._ctx()

        async def run(answer: PostAnswer) -> wire.Frame | None:
            conn = Conn(
                transport="http", profile=_profile(request), principal=request.scope.get(PRINCIPAL)
            )
            return await dispatch(
                frame, conn, ctx, settings=ctx.settings, headers=request.headers, notify=answer.emit
            )

        return self._lazy(request, run, modern=True, rev=MODERN[-1])

    async def _legacy(
        self, request: Request, kind: Kind, frame: wire.Frame
    ) -> Response | PostAnswer | Held:
        ctx = self._ctx()
        if kind is Kind.REQUEST and frame.get("method") == "initialize":
            return await self._initialize(request, frame)
        request_id = frame.get("id") if kind is Kind.REQUEST else None
        sid = field_value(request.headers, MCP_SESSION_ID)
        if sid is None:
            return self._refused(400, "Bad Request: missing Mcp-Session-Id", request_id)
        session = self._session(request, sid)
        if session is None:
            return self._refused(404, _NOT_FOUND, request_id)
        self.sessions.touch(session)
        host = session.host
        if kind is not Kind.REQUEST:
            # An answer to a question mcpx put on one of this session's streams, or a
            # notification (a cancel stops its request).
            await host.take(kind, frame, ctx)
            return Response(status_code=202)
        # One more than proto.maxConcurrentCalls is refused now, not kept waiting.
        if not host.slots.take_nowait():
            busy = too_many_running(ctx.settings)
            return self._refused(
                429, busy.message, request_id, error=busy, retry_after=_RETRY_CALLS
            )
        self.sessions.hold(session)

        def done() -> None:  # however the answer ends (Held): the slot is free again
            host.slots.give()
            self.sessions.free(session)

        streams_ok = offers_streams(request)

        async def run(answer: PostAnswer) -> wire.Frame | None:
            # A question goes on the POST's response, which becomes an event stream; the
            # host answers with a POST of its own on the session.
            ask = host.asker(ctx, answer.emit) if streams_ok else None
            # Withdrawn by the host: None (its POST gets an empty 202).
            return await host.serve(
                frame, ctx, notify=answer.emit, ask=ask, headers=request.headers, slotted=False
            )

        return Held(self._lazy(request, run, modern=False, rev=host.conn.revision), done)

    async def _initialize(self, request: Request, frame: wire.Frame) -> Response:
        """``initialize`` mints a session, if there is room for one (``_sessions``)."""
        ctx = self._ctx()
        minted = secrets.token_urlsafe(24)
        conn = Conn(
            transport="http",
            session_id=minted,
            identity=f"http:{minted}",
            profile=_profile(request),
            principal=request.scope.get(PRINCIPAL),
        )
        opened = Session(minted, HostSession.open(conn, ctx.settings))
        # A session can always be pushed to: frames wait for its GET stream.
        conn.push = opened.deliver
        reply = await opened.host.serve(frame, ctx, headers=request.headers, slotted=False)
        if reply is None or "error" in reply:
            return answer_of(reply, modern=False)  # a failed handshake opens nothing
        if not self.sessions.room(int(ctx.settings["proto.maxSessions"])):
            most = int(ctx.settings["proto.maxSessions"])
            message = (
                f"Service Unavailable: {most} sessions are open (proto.maxSessions) and every "
                "one is busy; retry later, or end a session (DELETE) first"
            )
            return self._refused(503, message, frame["id"], retry_after=_RETRY_SESSIONS)
        self.sessions.add(opened)
        if self._audience is not None:
            self._audience.join(conn)
        return json_reply(reply, headers={MCP_SESSION_ID: minted})

    def _lazy(
        self,
        request: Request,
        run: Callable[[PostAnswer], Awaitable[wire.Frame | None]],
        *,
        modern: bool,
        rev: str | None,
    ) -> PostAnswer:
        """``rev``: the revision the answer is spelled for (what stands in for one that
        cannot be encoded is traced under it)."""
        return PostAnswer(
            run,
            later=self._later,
            streams_ok=offers_streams(request),
            keepalive=float(self._ctx().settings["transport.sseKeepAlive"]),
            status_of=status_of if modern else always_200,
            # 2026-07-28: closing the stream is cancellation (S-HTTP-24); before, a
            # disconnect is not (S-HTTP-23): the call completes.
            cancel_on_disconnect=modern,
            fallback=in_place(self._ctx(), rev),
        )

    def _session(self, request: Request, sid: str) -> Session | None:
        """The session ``sid`` names, if it is this caller's: another authenticated
        caller's session is as unknown as a made-up one."""
        session = self.sessions.get(sid)
        mine = session is not None and session.conn.principal == request.scope.get(PRINCIPAL)
        return session if mine else None

    # -- GET and DELETE --------------------------------------------------------

    def _get(self, request: Request) -> Response | Held:
        sid = field_value(request.headers, MCP_SESSION_ID)
        if field_value(request.headers, MCP_PROTOCOL_VERSION) in MODERN or sid is None:
            # 2026-07-28 has no standalone stream; without a session there is none to open.
            return self._refused(405, "Method not allowed: GET needs a legacy session")
        session = self._session(request, sid)
        if session is None:
            return self._refused(404, _NOT_FOUND)
        settings = self._ctx().settings
        most = int(settings["proto.maxSessionStreams"])
        if session.streams >= most:
            message = (
                f"Conflict: this session has {most} GET streams open "
                "(proto.maxSessionStreams); close one first"
            )
            return self._refused(409, message)
        keepalive = float(settings["transport.sseKeepAlive"])
        stream = StreamingResponse(
            self._stream(session, keepalive),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", MCP_SESSION_ID: sid},
        )
        # Counted now, not when the body starts: two GETs at once must both be seen,
        # and one whose client left before the body started must still be let go.
        session.streams += 1
        self.sessions.hold(session)

        def done() -> None:
            session.streams -= 1
            self.sessions.free(session)

        return Held(stream, done)

    async def _stream(self, session: Session, keepalive: float) -> AsyncIterator[bytes]:
        # Open until the session ends or the client goes away; a write to a closed
        # connection is how starlette notices the latter, hence the keep-alive comments.
        yield b": stream open\n\n"
        while not session.ended:
            for frame in session.pushed():
                yield b"event: message\ndata: " + wire.dumps(frame) + b"\n\n"
            if not await session.wait_pushed(keepalive) and not session.ended:
                yield b": keepalive\n\n"

    def _delete(self, request: Request) -> Response:
        sid = field_value(request.headers, MCP_SESSION_ID)
        if sid is None:
            return self._refused(400, "Bad Request: missing Mcp-Session-Id")
        if self._session(request, sid) is None or not self.sessions.end(sid):
            return self._refused(404, _NOT_FOUND)
        return Response(status_code=200)


def _profile(request: Request) -> str | None:
    """The profile a request asks for: ``?profile=`` on the URL, else ``Mcpx-Profile``."""
    return request.query_params.get("profile") or request.headers.get(PROFILE_HEADER) or None
