"""The daemon's stdio channel: MCP hosts reached through ``mcpx serve``, one per connection.

Job: accept raw newline-delimited JSON-RPC on ``<state>/mcpx-stdio.sock`` (mode 0600) and
serve each connection exactly as a stdio MCP server would, through ``server.dispatch``.
``mcpx serve`` only relays bytes between its own stdin/stdout and this socket, so every
bit of MCP logic stays here, in the daemon.

Invariants:

- One connection is one stdio host: its own ``Conn(transport="stdio")``, which can push,
  and identity ``stdio:<peer pid>`` (SO_PEERCRED; a counter where that is unavailable).
- Requests run concurrently, each in a task owned by the connection, so a slow call does
  not hold up the next line. ``initialize`` and notifications are handled in line: the
  handshake is settled before anything after it is read.
- Every frame leaves through one writer task, a whole line at a time, in the order the
  frames were finished: answers and pushes never interleave.
- At EOF, requests in flight get ``transport.stdioDrain`` to answer; then the connection
  closes. When the daemon stops, every connection ends with the channel.
"""

from __future__ import annotations

import itertools
import logging
import math
import socket
import struct
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpx import wire
from mcpx.ops import OpContext
from mcpx.server import Conn, dispatch
from mcpx.wire import Kind, McpError

__all__ = ["MAX_LINE", "serve_stdio_channel"]

log = logging.getLogger("mcpx.daemon.stdio")

# One JSON-RPC message per line; a line this long is a broken or hostile peer, and a
# line cannot be skipped without reading it, so the connection is closed instead.
MAX_LINE: Final = 64 * 1024 * 1024
_BATCH_REVISION: Final = "2025-03-26"  # the only revision with JSON-RPC batches
_counter = itertools.count(1)


async def serve_stdio_channel(
    path: Path,
    ctx: Callable[[], OpContext],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``path`` and serve every connection until cancelled.

    The socket is created 0600 inside the 0700 state dir, so only this user can connect.
    """
    listener = await anyio.create_unix_listener(path, mode=0o600)
    task_status.started()
    async with listener:
        await listener.serve(lambda stream: _Channel(stream, ctx()).run())


def _peer(stream: SocketStream) -> str:
    """``stdio:<pid>`` of the process on the other end (``mcpx serve``), if the OS says."""
    sock = stream.extra(SocketAttribute.raw_socket)
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is not None:
        with suppress(OSError):
            pid, _uid, _gid = struct.unpack(
                "3i", sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
            )
            if pid > 0:
                return f"stdio:{pid}"
    return f"stdio:conn-{next(_counter)}"


class _Channel:
    """One accepted connection: read lines, dispatch them, write the answers back."""

    def __init__(self, stream: SocketStream, ctx: OpContext) -> None:
        self.stream = stream
        self.ctx = ctx
        self.identity = _peer(stream)
        self._out: MemoryObjectSendStream[bytes] | None = None
        # Requests being answered, by id: notifications/cancelled cancels one.
        self._running: dict[wire.RequestId, anyio.CancelScope] = {}
        self.conn = Conn(transport="stdio", push=self._push, identity=self.identity)

    async def run(self) -> None:
        log.info("stdio host connected: %s", self.identity)
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._out = send
        async with self.stream, anyio.create_task_group() as outer:
            outer.start_soon(self._writer, receive)
            async with send:  # closed after the last answer: the writer then ends
                await self._serve_lines()
        log.info("stdio host gone: %s", self.identity)

    async def _writer(self, receive: MemoryObjectReceiveStream[bytes]) -> None:
        async with receive:
            async for line in receive:
                try:
                    await self.stream.send(line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the host went away; the remaining answers have no reader

    def _push(self, frame: dict[str, Any]) -> None:
        self._emit(frame)

    def _emit(self, frame: object) -> None:
        if self._out is None:
            return
        # Late answers after the writer ended are dropped: nobody is reading any more.
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._out.send_nowait(wire.dumps(frame) + b"\n")

    async def _serve_lines(self) -> None:
        reader = BufferedByteReceiveStream(self.stream)
        drain = float(self.ctx.settings["transport.stdioDrain"])
        async with anyio.create_task_group() as requests:
            more = True
            while more:
                line, more = await _read_line(reader)
                if line.strip():
                    await self._frame(line, requests)
            # EOF: what is in flight gets the drain period, then is cancelled.
            requests.cancel_scope.deadline = anyio.current_time() + drain

    async def _frame(self, line: bytes, requests: TaskGroup) -> None:
        try:
            decoded = wire.decode(line, batch_ok=self.conn.revision == _BATCH_REVISION)
        except McpError as exc:
            self._emit(wire.error(exc.request_id, exc))
            return
        if decoded.batch:
            requests.start_soon(self._batch, decoded)
            return
        kind, frame = decoded.messages[0]
        if kind is Kind.NOTIFICATION and frame.get("method") == "notifications/cancelled":
            self._cancel(frame.get("params") or {})
        if kind is Kind.REQUEST and frame.get("method") != "initialize":
            # Registered before the task runs, so a cancel on the next line finds it.
            scope = anyio.CancelScope()
            self._running[frame["id"]] = scope
            requests.start_soon(self._request, frame, scope)
        elif kind in (Kind.REQUEST, Kind.NOTIFICATION):
            await self._request(frame)
        # Results and errors answer server requests; none are sent unasked yet.

    async def _answer(self, frame: wire.Frame) -> wire.Frame | None:
        try:
            return await dispatch(frame, self.conn, self.ctx, settings=self.ctx.settings)
        except Exception as exc:  # dispatch answers failures itself; this is a last guard
            log.exception("stdio request failed: %s", frame.get("method"))
            if "id" not in frame:
                return None
            return wire.error(frame["id"], wire.InternalError(f"internal error: {exc}"))

    def _cancel(self, params: dict[str, Any]) -> None:
        """The host withdrew a request: its handler is cancelled (which cancels the
        upstream call in turn) and no answer is sent. Unknown ids are ignored."""
        scope = self._running.get(params.get("requestId"))  # type: ignore[arg-type]
        if scope is not None:
            scope.cancel()

    async def _request(self, frame: wire.Frame, scope: anyio.CancelScope | None = None) -> None:
        rid = frame.get("id")
        reply: wire.Frame | None = None
        scope = scope or anyio.CancelScope()
        with scope:
            try:
                reply = await self._answer(frame)
            finally:
                if rid is not None and self._running.get(rid) is scope:
                    del self._running[rid]
        if reply is not None and not scope.cancelled_caught:
            self._emit(reply)

    async def _batch(self, decoded: wire.Decoded) -> None:
        # A batch is answered as one array, once all of its requests have answered.
        replies: list[wire.Frame] = [wire.error(i, e) for i, e in decoded.errors]

        async def one(frame: wire.Frame) -> None:
            reply = await self._answer(frame)
            if reply is not None:
                replies.append(reply)

        async with anyio.create_task_group() as tg:
            for kind, frame in decoded.messages:
                if kind in (Kind.REQUEST, Kind.NOTIFICATION):
                    tg.start_soon(one, frame)
        if replies:
            self._emit(replies)


async def _read_line(reader: BufferedByteReceiveStream) -> tuple[bytes, bool]:
    """The next line, and whether more may follow (a last line without its newline counts)."""
    try:
        return await reader.receive_until(b"\n", MAX_LINE), True
    except anyio.IncompleteRead:
        return reader.buffer, False
    except anyio.DelimiterNotFound:
        log.warning("stdio host sent a line over %d bytes; closing", MAX_LINE)
        return b"", False
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return b"", False
