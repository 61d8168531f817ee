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
- The client going away (``http.disconnect``) cancels the request: its upstream call is
  withdrawn, and nothing is written to a closed connection.
- The HTTP status is decided before the headers go out: for a JSON answer by
  ``status_of`` (2026-07-28: it follows the error code); a stream is always 200.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
from anyio.lowlevel import checkpoint
from starlette.types import Message, Receive, Scope, Send

from mcpx import wire

__all__ = ["LazyAnswer", "json_line", "sse_event"]

_KEEPALIVE: Final = b": keepalive\n\n"
# Emitted frames waiting for the writer; a slow client holds up the request, not memory.
_BUFFER: Final = 256


def sse_event(frame: wire.Frame) -> bytes:
    return b"event: message\ndata: " + wire.dumps(frame) + b"\n\n"


def json_line(value: wire.Frame) -> bytes:
    return wire.dumps(value) + b"\n"


class LazyAnswer:
    """An ASGI response that runs the request itself, and answers as it must.

    ``run`` is given this answer and returns the response frame (None: 202, nothing to
    say); while it runs it may ``emit`` frames that belong on the request's stream.

    The request runs in the responding task itself; one guard task beside it watches
    for the client going away and writes what has to be streamed before the answer
    (emitted frames, keep-alives). A plain JSON answer costs no more than that guard,
    which ends by itself once the answer is sent (the server then reports the exchange
    over), so nothing is cancelled on the common path.
    """

    def __init__(
        self,
        run: Callable[[LazyAnswer], Awaitable[wire.Frame | None]],
        *,
        streams_ok: bool,
        keepalive: float,
        status_of: Callable[[wire.Frame], int],
        headers: dict[str, str] | None = None,
        stream_type: str = "text/event-stream",
        encode: Callable[[wire.Frame], bytes] = sse_event,
        keepalive_bytes: bytes = _KEEPALIVE,
    ) -> None:
        self._run = run
        self._stream_type = stream_type
        self._encode = encode
        self._keepalive_bytes = keepalive_bytes
        self._streams_ok = streams_ok
        self._keepalive = keepalive
        self._status_of = status_of
        self._headers = headers or {}
        self._pending: deque[wire.Frame] = deque()
        # Set while the guard waits for the client, so that emit can wake it.
        self._wake: anyio.CancelScope | None = None
        # The answer is being written: the guard writes nothing more, emit drops.
        self._answered = False
        # Held by whoever writes once the answer is a stream (the guard, then the end).
        self._writing: anyio.Lock | None = None
        self._work = anyio.CancelScope()  # the request's own, cancelled when the client goes
        self._guard_done = False
        self.streaming = False
        self.disconnected = False
        self.dropped = 0

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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._guard, receive, send)
            with self._work:
                reply = await self._run(self)
            if self._work.cancelled_caught:
                return  # the client went away: nothing to write, the guard is done
            self._answered = True
            if self.streaming or self._pending:
                async with self._lock():
                    await self._flush(send)
                    if reply is not None:
                        await send(_body(self._encode(reply)))
                    await send(_body(b"", more=False))
            else:
                await self._send_json(send, reply)
            # The server answers the guard's receive() once the response is complete:
            # let the guard see that; only one still waiting (another server) is cancelled.
            await checkpoint()
            if not self._guard_done:
                tg.cancel_scope.cancel()

    async def _guard(self, receive: Receive, send: Send) -> None:
        try:
            while not self._answered:
                silence = self._keepalive if self._streams_ok else math.inf
                with anyio.CancelScope(deadline=anyio.current_time() + silence) as self._wake:
                    if not self._pending:
                        # The body was read already: the next message is the client
                        # going away, or the server saying the exchange is over.
                        while (await receive())["type"] != "http.disconnect":
                            pass
                        if not self._answered:
                            self.disconnected = True
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
        finally:
            self._wake = None
            self._guard_done = True

    def _lock(self) -> anyio.Lock:
        # Made only once something is streamed: a JSON answer has one writer.
        if self._writing is None:
            self._writing = anyio.Lock()
        return self._writing

    async def _flush(self, send: Send) -> None:
        await self._start_stream(send)
        while self._pending:
            await send(_body(self._encode(self._pending.popleft())))

    async def _start_stream(self, send: Send) -> None:
        if self.streaming:
            return
        self.streaming = True
        headers = {
            **self._headers,
            "content-type": self._stream_type,
            "cache-control": "no-store",
        }
        await send(_start(200, headers))

    async def _send_json(self, send: Send, frame: wire.Frame | None) -> None:
        if frame is None:
            await send(_start(202, self._headers))
            await send(_body(b"", more=False))
            return
        body = wire.dumps(frame)
        headers = {**self._headers, "content-type": "application/json"}
        headers["content-length"] = str(len(body))
        await send(_start(self._status_of(frame), headers))
        await send(_body(body, more=False))


def _start(status: int, headers: dict[str, str]) -> Message:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    return {"type": "http.response.start", "status": status, "headers": raw}


def _body(data: bytes, *, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}
