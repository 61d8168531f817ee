"""One POST's answer: plain JSON, or a stream when it must be one.

On ``/mcp`` the stream is ``text/event-stream`` (JSON-RPC frames as events); on
``/v1/call`` it is ``application/x-ndjson`` (one JSON value per line). Both follow the
same rules.

Invariants:

- The answer is ``application/json`` unless something has to be streamed before it:
  a frame emitted while the request runs (a relayed notification or question), or
  ``transport.sseKeepAlive`` of silence while the client's ``Accept`` offered
  ``text/event-stream``. Only then do the headers go out as ``text/event-stream``
  (the switch is lazy, and made once). Events carry no ids: nothing is resumable.
- A slow answer on a stream gets a ``: keepalive`` comment every ``sseKeepAlive``, so
  proxies and clients do not time the request out; a client that did not offer event
  streams just waits.
- The client going away (``http.disconnect``) cancels a request that is still running
  ``_GUARDED_AFTER`` in (a faster one just finishes): its upstream call is withdrawn,
  and nothing is written to a closed connection. Not so with ``cancel_on_disconnect``
  off (legacy sessions, 2025-03-26 to 2025-11-25, where a disconnect is not a
  cancellation, S-HTTP-23): the request runs to its end, and its answer is dropped.
- The HTTP status is decided before the headers go out: for a JSON answer by
  ``status_of`` (2026-07-28: it follows the error code); a stream is always 200.
- An answer that cannot be encoded (``wire.dumps`` fails: nested too deep) is replaced
  by what ``fallback`` gives, found where the encoding failed; an emitted frame that
  cannot be is dropped. Nothing is encoded twice on the way.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
from starlette.types import Message, Receive, Scope, Send

from mcpx import wire
from mcpx.wire import McpError

from ._timers import Timers

__all__ = ["PostAnswer", "json_line", "sse_event"]

_KEEPALIVE: Final = b": keepalive\n\n"
# Emitted frames waiting for the writer; a slow client holds up the request, not memory.
_BUFFER: Final = 256
# A request still running after this long gets its guard (at once if it emits frames).
_GUARDED_AFTER: Final = 0.1


def sse_event(frame: wire.Frame) -> bytes:
    return b"event: message\ndata: " + wire.dumps(frame) + b"\n\n"


def json_line(value: wire.Frame) -> bytes:
    return wire.dumps(value) + b"\n"


class PostAnswer:
    """An ASGI response that runs the request itself, and answers as it must.

    ``run`` is given this answer and returns the response frame (None: 202, nothing to
    say); while it runs it may ``emit`` frames that belong on the request's stream.

    The request runs in the responding task itself. A guard task beside it watches for
    the client going away and writes what has to be streamed before the answer (emitted
    frames, keep-alives); it is started by ``later`` only for a request still running
    after ``_GUARDED_AFTER`` (or one that emits), so a fast JSON answer needs no task.
    """

    def __init__(
        self,
        run: Callable[[PostAnswer], Awaitable[wire.Frame | None]],
        *,
        later: Timers,
        streams_ok: bool,
        keepalive: float,
        status_of: Callable[[wire.Frame], int],
        headers: dict[str, str] | None = None,
        stream_type: str = "text/event-stream",
        encode: Callable[[wire.Frame], bytes] = sse_event,
        keepalive_bytes: bytes = _KEEPALIVE,
        cancel_on_disconnect: bool = True,
        fallback: Callable[[wire.Frame, McpError], wire.Frame] | None = None,
    ) -> None:
        self._run = run
        self._fallback = fallback
        self._cancel_on_disconnect = cancel_on_disconnect
        self._later = later
        self._stream_type = stream_type
        self._encode = encode
        self._keepalive_bytes = keepalive_bytes
        self._streams_ok = streams_ok
        self._keepalive = keepalive
        self._status_of = status_of
        self._headers = headers or {}
        self._pending: deque[wire.Frame] = deque()
        self._receive: Receive | None = None
        self._send: Send | None = None
        self._started_at = 0.0
        # The request's own scope, cancelled when the client goes away.
        self._work = anyio.CancelScope()
        # The guard: its scope, its end, and what it raised (re-raised by the request).
        self._guard_scope: anyio.CancelScope | None = None
        self._guard_ended: anyio.Event | None = None
        self._guard_failed: Exception | None = None
        # Set while the guard waits for the client, so that emit can wake it.
        self._wake: anyio.CancelScope | None = None
        # The answer is being written: the guard writes nothing more, emit drops.
        self._answered = False
        # Held by whoever writes once the answer is a stream (the guard, then the end).
        self._writing: anyio.Lock | None = None
        self.streaming = False
        self.disconnected = False
        self.dropped = 0

    @property
    def streamed(self) -> bool:
        """Whether the answer goes out on a stream: something was streamed, or waits to
        be. Settled once ``run`` returns (nothing emits after it)."""
        return self.streaming or bool(self._pending)

    def emit(self, frame: wire.Frame) -> None:
        """Send ``frame`` to the client now, on the request's own stream.

        Never blocks: with ``_BUFFER`` frames already waiting for a slow client, or
        after the answer, the frame is dropped (relayed progress and log lines are
        worth less than a stalled upstream reader).
        """
        if self._answered or len(self._pending) >= _BUFFER:
            self.dropped += 1
            return
        self._pending.append(frame)
        if self._wake is not None:
            self._wake.cancel()
        else:
            self._start_guard()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._receive, self._send = receive, send
        self._started_at = anyio.current_time()
        silence = self._keepalive if self._streams_ok else math.inf
        self._later.call_later(min(silence, _GUARDED_AFTER), self._start_guard)
        try:
            with self._work:
                reply = await self._run(self)
        except BaseException:
            self._answered = True
            if self._guard_scope is not None:
                self._guard_scope.cancel()  # it ends at its next step; nothing to write
            raise
        self._answered = True
        if self._guard_failed is not None:
            await self._end_guard()
            raise self._guard_failed
        if self._work.cancelled_caught:
            await self._end_guard()
            return  # the client went away: nothing to write
        if self.streaming or self._pending:
            async with self._lock():
                await self._flush(send)
                if reply is not None:
                    await send(_body(self._encoded(reply, self._encode)[0]))
                await send(_body(b"", more=False))
        else:
            await self._send_json(send, reply)
        await self._end_guard()

    def _start_guard(self) -> None:
        if self._answered or self._guard_scope is not None:
            return
        self._guard_scope = anyio.CancelScope()
        self._guard_ended = anyio.Event()
        self._later.spawn(self._guarding)

    async def _end_guard(self) -> None:
        # After the answer the guard has nothing left to do; wait for it to be gone.
        if self._guard_scope is None or self._guard_ended is None:
            return
        self._guard_scope.cancel()
        await self._guard_ended.wait()

    async def _guarding(self) -> None:
        assert self._guard_scope is not None and self._guard_ended is not None
        try:
            with self._guard_scope:
                await self._guard()
        except Exception as exc:  # handed to the request: a daemon task must not raise
            self._guard_failed = exc
            self._work.cancel()
        finally:
            self._wake = None
            self._guard_ended.set()

    async def _guard(self) -> None:
        assert self._receive is not None and self._send is not None
        receive, send = self._receive, self._send
        quiet_since = self._started_at
        while not self._answered:
            silence = self._keepalive if self._streams_ok else math.inf
            with anyio.CancelScope(deadline=quiet_since + silence) as self._wake:
                if not self._pending:
                    # The body was read already: the next message is the client going
                    # away, or the server saying the exchange is over.
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    if not self._answered:
                        self.disconnected = True
                        if self._cancel_on_disconnect:
                            self._work.cancel()
                    return
            # Woken: frames were emitted, or a stream's silence needs a keep-alive.
            self._wake = None
            async with self._lock():
                if self._answered:
                    return  # the answer writes what is left
                await self._start_stream(send)
                if self._pending:
                    await self._flush(send)
                else:
                    await send(_body(self._keepalive_bytes))
            quiet_since = anyio.current_time()

    def _lock(self) -> anyio.Lock:
        # Made only once something is streamed: a JSON answer has one writer.
        if self._writing is None:
            self._writing = anyio.Lock()
        return self._writing

    async def _flush(self, send: Send) -> None:
        await self._start_stream(send)
        while self._pending:
            try:
                data = self._encode(self._pending.popleft())
            except McpError:  # cannot be encoded (nested too deep): dropped, as when late
                self.dropped += 1
                continue
            await send(_body(data))

    async def _start_stream(self, send: Send) -> None:
        if self.streaming:
            return
        self.streaming = True
        headers = {
            **self._headers,
            "content-type": self._stream_type,
            "cache-control": "no-store",
            # A buffering reverse proxy (nginx) would hold events back until the end.
            "x-accel-buffering": "no",
        }
        await send(_start(200, headers))

    async def _send_json(self, send: Send, frame: wire.Frame | None) -> None:
        if frame is None:
            await send(_start(202, self._headers))
            await send(_body(b"", more=False))
            return
        body, frame = self._encoded(frame, wire.dumps)
        headers = {**self._headers, "content-type": "application/json"}
        headers["content-length"] = str(len(body))
        await send(_start(self._status_of(frame), headers))
        await send(_body(body, more=False))

    def _encoded(
        self, frame: wire.Frame, encode: Callable[[wire.Frame], bytes]
    ) -> tuple[bytes, wire.Frame]:
        """``frame`` encoded, or what ``fallback`` sends in its place; and which it was."""
        try:
            return encode(frame), frame
        except McpError as exc:
            if self._fallback is None:
                raise
            instead = self._fallback(frame, exc)
            return encode(instead), instead


def _start(status: int, headers: dict[str, str]) -> Message:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    return {"type": "http.response.start", "status": status, "headers": raw}


def _body(data: bytes, *, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}
