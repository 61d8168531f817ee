"""The daemon's stdio channel: MCP hosts reached through ``mcpx serve``, one per connection.

Job: serve each connection on ``<state>/mcpx-stdio.sock`` (mode 0600) exactly as a stdio
MCP server would, through ``server.dispatch``: newline-delimited JSON-RPC. Every bit of
MCP logic stays here, in the daemon; ``mcpx serve`` carries none. A connection is one of:

- a hand-off: its first message is ``HANDOFF`` carrying two file descriptors
  (SCM_RIGHTS), the host's pipes that are ``mcpx serve``'s stdin and stdout. The daemon
  answers ``OK`` and reads and writes those pipes itself; the connection then only says
  the shim is alive (its close ends the host's session, as an EOF would). Refused with
  ``NO <reason>`` (then closed, the descriptors with it) when they are not pipes or
  sockets, or this anyio cannot wait on a descriptor; the shim then relays instead.
- a relay: anything else. The JSON lines arrive on the connection itself (``mcpx serve``
  copying its stdin and stdout, or any client of the socket).

Invariants:

- One connection is one stdio host: its own ``Conn(transport="stdio")``, which can push,
  and identity ``stdio:<peer pid>`` (SO_PEERCRED; a counter where that is unavailable).
- A host's descriptors are the daemon's own copies: made non-blocking for the session,
  their flags put back and both closed when it ends, before the connection is.
- Requests run concurrently, each in a task owned by the connection (one kept from an
  earlier request when one is waiting), so a slow call does not hold up the next line.
  ``initialize`` and notifications are handled in line: the handshake is settled before
  anything after it is read.
- Frames leave in the order they were finished, whole lines only: answers and pushes
  never interleave. On a hand-off, a line goes straight to the host's pipe when nothing
  is waiting to be written; otherwise (or what a full pipe did not take) it goes to the
  one writer task, which joins what is waiting into one write.
- At EOF, requests in flight get ``transport.stdioDrain`` to answer; then the connection
  closes. Listen streams (``subscriptions/listen``) end at EOF, unanswered: they only
  ever stream to a live host, and would otherwise hold the session for the drain.
  When the daemon stops, every connection ends with the channel; when it restarts, a
  hand-off's pipes go back to its shim with the session's state (``_hand_back``).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import socket
import stat
import struct
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import (
    ByteReceiveStream,
    ByteSendStream,
    SocketAttribute,
    SocketStream,
    UNIXSocketStream,
)
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpx import wire
from mcpx.ops import OpContext
from mcpx.server import Conn, Questions, dispatch, release_all, subscribe
from mcpx.transport import PipeReceiveStream, PipeSendStream, can_write_descriptors
from mcpx.wire import Kind, McpError

from ._hand_back import HandBacks, conn_state, restore_conn, resume_line
from ._running import Running
from ._workers import Workers

__all__ = ["HANDOFF", "MAX_LINE", "serve_stdio_channel"]

log = logging.getLogger("mcpx.daemon.stdio")

# One JSON-RPC message per line; a line this long is a broken or hostile peer, and a
# line cannot be skipped without reading it, so the connection is closed instead.
MAX_LINE: Final = 64 * 1024 * 1024
_BATCH_REVISION: Final = "2025-03-26"  # the only revision with JSON-RPC batches
_counter = itertools.count(1)
# The first message of a hand-off, with the host's stdin and stdout attached (SCM_RIGHTS).
HANDOFF: Final = b"MCPX-STDIO-FDS 1\n"
# mcpx serve's settings for its host, as a JSON line before anything else.
OPTIONS: Final = b"MCPX-STDIO-OPTIONS "
_CHUNK: Final = 64 * 1024


async def serve_stdio_channel(
    path: Path,
    ctx: Callable[[], OpContext],
    hand_backs: HandBacks | None = None,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``path`` and serve every connection until cancelled. Hand-offs join
    ``hand_backs``, which gives their pipes back when the daemon restarts.

    The socket is created 0600 inside the 0700 state dir, so only this user can connect.
    """
    backs = hand_backs or HandBacks()
    listener = await anyio.create_unix_listener(path, mode=0o600)
    task_status.started()
    async with listener:
        await listener.serve(lambda stream: _accept(stream, ctx(), backs))


async def _accept(stream: SocketStream, ctx: OpContext, hand_backs: HandBacks) -> None:
    # A failure in one host's connection ends that connection, never the daemon.
    try:
        await _connection(stream, ctx, hand_backs)
    except Exception:
        log.exception("a stdio connection failed; it is closed")


async def _connection(stream: SocketStream, ctx: OpContext, hand_backs: HandBacks) -> None:
    """One connection: a hand-off of the host's pipes, or a relay of its lines."""
    identity = _peer(stream)
    async with stream:
        try:
            if isinstance(stream, UNIXSocketStream):
                first, fds = await stream.receive_fds(_CHUNK, 2)
            else:
                first, fds = await stream.receive(_CHUNK), []
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        except RuntimeError as exc:  # ancillary data other than descriptors
            log.warning("stdio connection refused (%s): %s", exc, identity)
            return
        for fd in fds:
            # Received descriptors are inheritable: an upstream spawned later would hold
            # the host's pipes open, and the host would never see its stdout end.
            os.set_inheritable(fd, False)
        if first.startswith(HANDOFF) and fds:
            options, _ = _options(first[len(HANDOFF) :])
            await _handed_off(stream, fds, identity, ctx, hand_backs, options)
            return
        for fd in fds:  # descriptors nobody asked for
            os.close(fd)
        options, first = _options(first)
        channel = _Channel(identity, ctx, _Prefixed(first, stream), stream)
        channel.configure(options)
        await channel.run()


def _options(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The connection's options line, if ``data`` starts with one; and the rest."""
    if not data.startswith(OPTIONS):
        return {}, data
    line, _, rest = data.partition(b"\n")
    try:
        options = json.loads(line[len(OPTIONS) :])
    except ValueError:
        log.warning("stdio options line unreadable; ignored")
        return {}, rest
    return (options if isinstance(options, dict) else {}), rest


async def _handed_off(
    stream: SocketStream,
    fds: list[int],
    identity: str,
    ctx: OpContext,
    hand_backs: HandBacks,
    options: dict[str, Any] | None = None,
) -> None:
    """Serve the host on its own pipes while ``mcpx serve`` waits on ``stream``; when
    the daemon restarts, give them back to it with what the next daemon needs."""
    refusal = _refusal(fds)
    if refusal is not None:
        for fd in fds:
            os.close(fd)
        log.info("stdio hand-off refused (%s): %s", refusal, identity)
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(b"NO " + refusal.encode() + b"\n")
        return
    receive, send = PipeReceiveStream(fds[0]), PipeSendStream(fds[1])
    try:
        try:
            await receive.start()
            send.start()
        except (OSError, ValueError) as exc:
            log.warning("stdio hand-off refused (%s): %s", exc, identity)
            receive.close()  # flags put back before the shim relays on them
            send.close()
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(b"NO " + str(exc).encode() + b"\n")
            return
        channel = _Channel(identity, ctx, receive, send, mode="hand-off")
        channel.configure(options or {})
        hand_backs.join(channel)
        try:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(b"OK\n")
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_watch_shim, stream, channel.stop_reading)
                    await channel.run()
                    tg.cancel_scope.cancel()
                if channel.handing_back:
                    unread = channel.unread() + receive.take_unread()
                    state = {**conn_state(channel.conn, unread), "daemon": os.getpid()}
                    await stream.send(resume_line(state))
                    log.info("stdio host given back for the restart: %s", identity)
        finally:
            hand_backs.leave(channel)
    finally:
        # Before the connection closes: the shim's exit then means the host's pipes are
        # no longer written by anyone. No checkpoint: this runs when cancelled, too.
        receive.close()
        send.close()


def _refusal(fds: list[int]) -> str | None:
    """Why the descriptors of a hand-off cannot be served here, or None."""
    if not can_write_descriptors():
        return "this anyio cannot wait on a descriptor"
    if len(fds) != 2:
        return f"{len(fds)} descriptors, not 2"
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            return f"descriptor: {exc}"
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return "not a pipe or a socket"
    return None


async def _watch_shim(stream: SocketStream, gone: Callable[[], None]) -> None:
    """``mcpx serve`` keeps the connection open while its host runs; it closing (the
    shim was killed, or ended) ends the session as an EOF on stdin would."""
    with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while await stream.receive():
            pass  # the shim says nothing after the hand-off
    gone()


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
    """One stdio host (its own pipes, or the connection relaying them): read lines,
    dispatch them, write the answers back."""

    def __init__(
        self,
        identity: str,
        ctx: OpContext,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        mode: str = "relay",
    ) -> None:
        self.receive = receive
        self.send = send
        self.ctx = ctx
        self.identity = identity
        self.mode = mode
        self._out: MemoryObjectSendStream[bytes] | None = None
        # Lines given to the writer and not yet written: while there are none, a line
        # may go straight to a pipe (no trip through the writer), still in order.
        self._unwritten = 0
        self._write_now = send.send_nowait if isinstance(send, PipeSendStream) else None
        # Reading the host's lines; cancelled when the shim of a hand-off is gone, or
        # when the daemon restarts and gives the host back (``handing_back``).
        self._reading = anyio.CancelScope()
        self.handing_back = False
        self._reader: BufferedByteReceiveStream | None = None
        # Resumed from a daemon that restarted: the URIs its host had subscribed to.
        self._resubscribe: list[str] = []
        # Requests being answered, by id: notifications/cancelled cancels one.
        self._running = Running()
        # The listen streams open (subscriptions/listen): they end at the host's EOF.
        self._listens: set[anyio.CancelScope] = set()
        # Questions put to the host, waiting for its answers.
        self._questions = Questions()
        self.conn = Conn(transport="stdio", push=self._push, identity=self.identity)

    async def run(self) -> None:
        log.info("stdio host connected (%s): %s", self.mode, self.identity)
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._out = send
        audience = self.ctx.audience
        if audience is not None:
            audience.join(self.conn)  # list changes and resource updates reach it
        try:
            async with anyio.create_task_group() as outer:
                outer.start_soon(self._writer, receive)
                async with send:  # closed after the last answer: the writer then ends
                    await self._serve_lines()
        finally:
            if audience is not None:
                audience.leave(self.conn)
            release_all(self.ctx, self.conn)  # its resource subscriptions end with it
        log.info("stdio host gone: %s", self.identity)

    async def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Put an upstream's question to the host on its pipe; its answer."""

        def send(request: dict[str, Any]) -> None:
            if self.ctx.trace is not None:
                self.ctx.trace(self.conn.revision, request, None)
            self._emit(request)

        timeout = float(self.ctx.settings["proto.askTimeout"])
        return await self._questions.ask(send, method, params, timeout)

    def configure(self, options: dict[str, Any]) -> None:
        """This host's own settings, sent by ``mcpx serve`` (its ``--passthrough``), and
        its session's state when it comes back from a daemon that restarted."""
        resume = options.get("resume")
        if isinstance(resume, dict):
            try:
                self._resubscribe, unread = restore_conn(self.conn, resume)
            except (ValueError, TypeError) as exc:
                log.warning("stdio resume state unreadable (%s); served afresh", exc)
            else:
                log.info("stdio host resumed (%s): %s", self.conn.revision, self.identity)
                if unread:
                    self.receive = _Prefixed(unread, self.receive)
        through = options.get("passthrough")
        if isinstance(through, list):
            known = [str(s) for s in through if s in self.ctx.pool.servers]
            unknown = [str(s) for s in through if s not in self.ctx.pool.servers]
            if unknown:
                log.warning("passthrough names unknown servers, ignored: %s", unknown)
            self.conn.passthrough = tuple(known)

    def stop_reading(self) -> None:
        """Read no more lines; what is in flight drains as at EOF."""
        self._reading.cancel()

    def hand_back(self) -> None:
        """The daemon restarts: read no more, answer what was read, then the host goes
        back to its shim (``_handed_off``)."""
        self.handing_back = True
        self._reading.cancel()

    def unread(self) -> bytes:
        """What was read from the host and not served (reading has stopped): the line
        reader's buffer, then what a resumed session had not reached yet."""
        read = self._reader.buffer if self._reader is not None else b""
        return read + (self.receive.pending if isinstance(self.receive, _Prefixed) else b"")

    async def _writer(self, receive: MemoryObjectReceiveStream[bytes]) -> None:
        async with receive:
            async for line in receive:
                # Whatever else is finished goes in the same write. After the last
                # answer the stream ends: what was collected is still written.
                lines = [line]
                with suppress(anyio.WouldBlock, anyio.EndOfStream):
                    while len(lines) < 64:
                        lines.append(receive.receive_nowait())
                try:
                    await self.send.send(b"".join(lines) if len(lines) > 1 else line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the host went away; the remaining answers have no reader
                self._unwritten -= len(lines)

    def _push(self, frame: dict[str, Any]) -> None:
        self._emit(frame)

    def _emit(self, frame: object) -> None:
        if self._out is None:
            return
        line = wire.dumps(frame) + b"\n"
        # Late answers after the writer ended are dropped: nobody is reading any more.
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            if self._write_now is not None and not self._unwritten:
                line = line[self._write_now(line) :]
                if not line:
                    return
            self._out.send_nowait(line)  # the rest, when the pipe is full: the writer waits
            self._unwritten += 1

    async def _serve_lines(self) -> None:
        reader = self._reader = BufferedByteReceiveStream(self.receive)
        for uri in self._resubscribe:  # the restarted daemon's host's subscriptions
            await subscribe(self.ctx, self.conn, uri, self.conn.revision or "")
        drain = float(self.ctx.settings["transport.stdioDrain"])
        async with anyio.create_task_group() as requests:
            workers = Workers(requests)
            try:
                with self._reading:
                    more = True
                    while more:
                        line, more = await _read_line(reader)
                        if line.strip():
                            # A line read is served, whatever stops the reading now.
                            with anyio.CancelScope(shield=True):
                                await self._frame(line, workers)
            finally:
                workers.close()  # the tasks waiting for work end; the busy ones go on
            # EOF: a listen stream only ever streams to a live host, so it ends now; what
            # else is in flight gets the drain period to answer, then is cancelled. Given
            # back at a restart, the host is alive: its listens end gracefully, answered
            # (the daemon's stop ends every listen), and it opens new ones on the next.
            if not self.handing_back:
                for listen in self._listens:
                    listen.cancel()
            requests.cancel_scope.deadline = anyio.current_time() + drain

    async def _frame(self, line: bytes, requests: Workers) -> None:
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
            self._running.cancel(frame.get("params"))
        if kind is Kind.REQUEST and frame.get("method") != "initialize":
            # Registered before the task runs, so a cancel on the next line finds it.
            scope = self._running.register(frame["id"])
            if frame.get("method") == "subscriptions/listen":
                self._listens.add(scope)
            requests.start_soon(self._request, frame, scope)
        elif kind in (Kind.REQUEST, Kind.NOTIFICATION):
            await self._request(frame)
        else:  # a result or an error: the host's answer to a question mcpx put to it
            self._questions.answered(frame)

    async def _answer(self, frame: wire.Frame) -> wire.Frame | None:
        try:
            return await dispatch(
                frame,
                self.conn,
                self.ctx,
                settings=self.ctx.settings,
                notify=self._push,
                ask=self._ask,
            )
        except Exception as exc:  # dispatch answers failures itself; this is a last guard
            log.exception("stdio request failed: %s", frame.get("method"))
            if "id" not in frame:
                return None
            return wire.error(frame["id"], wire.InternalError(f"internal error: {exc}"))

    async def _request(self, frame: wire.Frame, scope: anyio.CancelScope | None = None) -> None:
        reply: wire.Frame | None = None
        try:
            with self._running.serving(frame.get("id"), scope) as scope:
                reply = await self._answer(frame)
        finally:
            self._listens.discard(scope)
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


class _Prefixed(ByteReceiveStream):
    """``stream``, after the bytes already read from it."""

    def __init__(self, first: bytes, stream: ByteReceiveStream) -> None:
        self._first = first
        self._stream = stream

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        if self._first:
            await anyio.lowlevel.checkpoint_if_cancelled()
            chunk, self._first = self._first[:max_bytes], self._first[max_bytes:]
            await anyio.lowlevel.cancel_shielded_checkpoint()
            return chunk
        return await self._stream.receive(max_bytes)

    @property
    def pending(self) -> bytes:
        """The bytes given first that were not received yet."""
        return self._first

    async def aclose(self) -> None:
        await self._stream.aclose()
