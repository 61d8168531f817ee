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

from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
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
        send, receive = anyio.create_memory_object_stream[tuple[bool, Any]](_BUFFER)
        self._out: MemoryObjectSendStream[tuple[bool, Any]] = send
        self._in: MemoryObjectReceiveStream[tuple[bool, Any]] = receive
        self.streaming = False
        self.disconnected = False
        self.dropped = 0

    def emit(self, frame: wire.Frame) -> None:
        """Send ``frame`` to the client now, on the request's own stream.

        Never blocks: with ``_BUFFER`` frames already waiting for a slow client, or
        after the answer, the frame is dropped (relayed progress and log lines are
        worth less than a stalled upstream reader).
        """
        try:
            self._out.send_nowait((False, frame))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.dropped += 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch, receive, tg.cancel_scope)
            tg.start_soon(self._work)
            await self._write(send)
            tg.cancel_scope.cancel()

    async def _watch(self, receive: Receive, scope: anyio.CancelScope) -> None:
        # The body was read already: the next message is the client going away.
        while (await receive())["type"] != "http.disconnect":
            pass
        self.disconnected = True
        scope.cancel()

    async def _work(self) -> None:
        async with self._out:
            reply = await self._run(self)
            await self._out.send((True, reply))

    async def _write(self, send: Send) -> None:
        async with self._in:
            while True:
                wait = self._keepalive if self._streams_ok else None
                got: tuple[bool, Any] | None = None
                with anyio.move_on_after(wait):
                    got = await self._in.receive()
                if got is None:  # silence: a stream it is, kept alive
                    await self._start_stream(send)
                    await send(_body(self._keepalive_bytes))
                    continue
                final, frame = got
                if final and not self.streaming:
                    await self._send_json(send, frame)
                    return
                await self._start_stream(send)
                if frame is not None:
                    await send(_body(self._encode(frame)))
                if final:
                    await send(_body(b"", more=False))
                    return

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
