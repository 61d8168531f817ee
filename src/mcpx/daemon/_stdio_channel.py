"""One stdio host's session: its JSON-RPC lines served exactly as a stdio MCP server would.

Job: read the host's lines (its own pipes after a hand-off, or the connection itself when
``mcpx serve`` carries them; ``_stdio_accept`` tells which), give each frame to the host's
``server.HostSession``, and write the answers back as lines. What a frame means is the
server side's business; reading, pacing and writing lines are this module's. ``mcpx
serve`` carries no MCP logic at all.

Invariants:

- One channel is one stdio host: its own ``HostSession`` on a ``Conn(transport="stdio")``,
  which can push.
- Requests run concurrently, each in a task owned by the connection (one kept from an
  earlier request when one is waiting), so a slow call does not hold up the next line;
  at most ``proto.maxConcurrentCalls`` at once (the session's slots). One more waits in line, and
  reading stops until it has its slot: backpressure, the host's pipe fills and it waits
  to write, as a pipe means (a host that pipelines a burst of requests is served, not
  refused). Except while a question is put to the host: its answer comes as a line, so
  reading goes on, and a request finding ``proto.maxConcurrentCalls`` already waiting is
  answered -429 naming the setting. A 2025-03-26 batch over ``proto.maxBatch`` messages
  is refused whole; its requests wait in line, at most ``proto.maxBatch`` per host.
  ``initialize`` and notifications are handled in line: the handshake is settled before
  anything after it is read.
- Frames leave in the order they were finished, whole lines only: answers and pushes
  never interleave. On a hand-off, a line goes straight to the host's pipe when nothing
  is waiting to be written; otherwise (or what a full pipe did not take) it goes to the
  one writer task, which joins what is waiting into one write.
- An answer that cannot be encoded (an upstream's result nested too deep) is answered
  with the error -32603 for its id instead, traced in its place; any other frame that
  cannot be is dropped, logged. The session goes on either way.
- At EOF, requests in flight get ``transport.stdioDrain`` to answer; then the connection
  closes. Listen streams (``subscriptions/listen``) end at EOF, unanswered: they only
  ever stream to a live host, and would otherwise hold the session for the drain. So do
  questions put to the host (it can answer none): each fails at once, and its upstream
  is told.
  When the daemon stops, every connection ends with the channel; when it restarts, a
  hand-off's pipes go back to its shim with the session's state (``_hand_back``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Coroutine
from contextlib import suppress
from functools import partial
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import (
    ByteReceiveStream,
    ByteSendStream,
)
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpx import wire
from mcpx.client import SentAhead
from mcpx.ops import OpContext
from mcpx.server import Conn, HostSession, release_all, subscribe, too_many_running
from mcpx.transport import PipeReceiveStream, PipeSendStream
from mcpx.wire import Kind, McpError, Throttled

from ._hand_back import restore_conn
from ._workers import Workers

__all__ = ["MAX_LINE", "Prefixed", "StdioChannel"]

log = logging.getLogger("mcpx.daemon.stdio")

# One JSON-RPC message per line; a line this long is a broken or hostile peer, and a
# line cannot be skipped without reading it, so the connection is closed instead.
MAX_LINE: Final = 64 * 1024 * 1024
_CHUNK: Final = 64 * 1024


class StdioChannel:
    """One stdio host (its own pipes, or the connection relaying them): read lines,
    dispatch them, write the answers back."""

    def __init__(
        self,
        identity: str,
        ctx: OpContext,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        mode: str = "carried",
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
        # The listen streams open (subscriptions/listen): they end at the host's EOF.
        self._listens: set[anyio.CancelScope] = set()
        # Reading paused while requests wait for a slot (cancelled by a question).
        self._pause: anyio.CancelScope | None = None
        conn = Conn(transport="stdio", push=self._push, identity=self.identity)
        self.session = HostSession.open(conn, ctx.settings)
        self.conn = conn
        # A question's answer comes as a line: while one is asked, reading goes on.
        self._ask = self.session.asker(ctx, self._emit, on_ask=self._read_on)

    async def run(self) -> None:
        log.info("stdio host connected (%s): %s", self.mode, self.identity)
        began = time.monotonic()
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
            if self.ctx.telemetry is not None and not self.handing_back:  # its session ended
                lasted = time.monotonic() - began
                self.ctx.telemetry.session_ended("stdio", self.conn.revision, lasted)
        log.info("stdio host gone: %s", self.identity)

    def _read_on(self) -> None:
        if self._pause is not None:
            self._pause.cancel()

    def configure(self, options: dict[str, Any]) -> None:
        """This host's own settings, sent by ``mcpx serve`` (``--passthrough``, ``--profile``), and
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
                    self.receive = Prefixed(unread, self.receive)
        through = options.get("passthrough")
        if isinstance(through, list):
            known = [str(s) for s in through if s in self.ctx.pool.servers]
            unknown = [str(s) for s in through if s not in self.ctx.pool.servers]
            if unknown:
                log.warning("passthrough names unknown servers, ignored: %s", unknown)
            self.conn.passthrough = tuple(known)
        profile = options.get("profile")
        if isinstance(profile, str) and profile:
            # Checked by mcpx serve against its config; one the daemon's config does not
            # know reaches no server (ops.OpContext.reach), never every server.
            self.conn.profile = profile

    def stop_reading(self) -> None:
        """Read no more lines; what is in flight drains as at EOF."""
        self._served_now(None)
        self._reading.cancel()

    def hand_back(self) -> None:
        """The daemon restarts: read no more, answer what was read, then the host goes
        back to its shim (``_handed_off``)."""
        self.handing_back = True
        self._served_now(None)
        self._reading.cancel()

    def unread(self) -> bytes:
        """What was read from the host and not served (reading has stopped): the line
        reader's buffer, then what a resumed session had not reached yet."""
        read = self._reader.buffer if self._reader is not None else b""
        return read + (self.receive.pending if isinstance(self.receive, Prefixed) else b"")

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
        try:
            data, sent = wire.dumps_answer(frame)
        except McpError as exc:  # no answer (a notification, a question): nothing to say
            log.warning("stdio: a frame could not be sent: %s", exc.message)
            return
        if sent is not frame:
            self._traced_instead(frame, sent)
        line = data + b"\n"
        # Late answers after the writer ended are dropped: nobody is reading any more.
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            if self._write_now is not None and not self._unwritten:
                line = line[self._write_now(line) :]
                if not line:
                    return
            self._out.send_nowait(line)  # the rest, when the pipe is full: the writer waits
            self._unwritten += 1

    def _traced_instead(self, was: object, sent: object) -> None:
        log.warning("stdio: an answer could not be encoded (nested too deep?): -32603 sent")
        if self.ctx.trace is None:
            return
        for frame in wire.stand_ins(was, sent):
            self.ctx.trace(self.conn.revision, frame, None)

    async def _serve_lines(self) -> None:
        reader = self._reader = BufferedByteReceiveStream(self.receive)
        for uri in self._resubscribe:  # the restarted daemon's host's subscriptions
            with suppress(Throttled):  # beyond a lowered proto.maxSubscriptions: dropped
                await subscribe(self.ctx, self.conn, uri)
        drain = float(self.ctx.settings["transport.stdioDrain"])
        async with anyio.create_task_group() as requests:
            workers = Workers(requests)
            try:
                self._served_now(workers)
                with self._reading:
                    more = True
                    while more:
                        line, more = await _read_line(reader)
                        if line.strip():
                            # A line read is served, whatever stops the reading now: a
                            # request is handed to a task at once; what is settled in
                            # line (the handshake, a notification) runs shielded.
                            settle = self._frame(line, workers)
                            if settle is not None:
                                with anyio.CancelScope(shield=True):
                                    await settle
                            if self.session.slots.waiting and not self.session.asking:
                                await self._paced()
            finally:
                self._served_now(None)
                self.session.start_waiting()  # drained with the rest
                workers.close()  # the tasks waiting for work end; the busy ones go on
            # EOF: a listen stream only ever streams to a live host, so it ends now; what
            # else is in flight gets the drain period to answer, then is cancelled. Given
            # back at a restart, the host is alive: its listens end gracefully, answered
            # (the daemon's stop ends every listen), and it opens new ones on the next.
            if not self.handing_back:
                for listen in self._listens:
                    listen.cancel()
                # Nor can a question put to the host be answered: its wait ends now.
                self.session.questions.gone()
            requests.cancel_scope.deadline = anyio.current_time() + drain

    def _frame(self, line: bytes, requests: Workers) -> Coroutine[Any, Any, None] | None:
        """Serve one line: a request goes to a task of ``requests``; what must be settled
        before the next line is read (a notification, a response, ``initialize``) is
        returned, for the caller to await."""
        try:
            decoded = wire.decode(line, batch_ok=self.session.batches)
        except McpError as exc:
            self._refuse(wire.error(exc.request_id, exc))
            return None
        if decoded.batch:
            refusal = self.session.batch_refusal(decoded, self.ctx.settings)
            if refusal is not None:
                self._refuse(wire.error(refusal.request_id, refusal))
                return None
            requests.start_soon(self._batch, decoded)
            return None
        kind, frame = decoded.messages[0]
        if kind is not Kind.REQUEST:
            return self.session.take(kind, frame, self.ctx)
        if frame.get("method") == "initialize":
            return self._request(frame)  # in line: settled before the next line is read
        self._start(frame, requests)
        return None

    def _served_now(self, workers: Workers | None) -> None:
        """Requests read while the reader waits idle are handed to ``workers`` from the
        loop's own callback (``_requests_now``), not through the reader's task; None:
        every line goes through the reader again (it stops, or the host is gone)."""
        if isinstance(self.receive, PipeReceiveStream):
            self.receive.deliver_to(
                None if workers is None else lambda chunk: self._requests_now(chunk, workers)
            )

    def _requests_now(self, chunk: bytes, workers: Workers) -> bool:
        """Serve ``chunk`` now if it is whole lines, each a request other than
        ``initialize``, with a free slot for each; else leave it to the reader (False),
        which settles the rest in line and paces: anything else is its business."""
        reader, slots = self._reader, self.session.slots
        if not chunk.endswith(b"\n") or reader is None or reader.buffer or slots.waiting:
            return False
        if chunk.find(b"\n") == len(chunk) - 1 and slots.free:  # one line, most often
            plain = wire.plain_request(chunk)
            if plain is not None and plain["method"] != "initialize":
                self._start(plain, workers)
                return True
        frames: list[wire.Frame] = []
        for line in chunk.split(b"\n")[:-1]:
            if not line.strip():
                continue
            try:
                decoded = wire.decode(line, batch_ok=self.session.batches)
            except McpError:
                return False
            kind, frame = decoded.messages[0] if not decoded.batch else (None, {})
            if kind is not Kind.REQUEST or frame.get("method") == "initialize":
                return False
            frames.append(frame)
        if len(frames) > slots.free:
            return False
        for frame in frames:
            self._start(frame, workers)
        return True

    def _start(self, frame: wire.Frame, requests: Workers) -> None:
        waiting = self.session.slots.waiting
        if waiting and waiting >= int(self.ctx.settings["proto.maxConcurrentCalls"]):
            # (Only while reading goes on for a question's answer.)
            refused = too_many_running(self.ctx.settings, waiting=True)
            self._refuse(wire.error(frame["id"], refused))
            return None
        # A plain tools/call goes upstream now, and its task runs only if it is needed.
        start = partial(requests.start_soon, self._request, frame)
        session = self.session
        if session.send_ahead(frame, self.ctx, self._emit, start, notify=self._push, ask=self._ask):
            return None
        # Registered before the task runs, so a cancel on the next line finds it.
        scope = session.in_flight.register(frame["id"])
        if frame.get("method") == "subscriptions/listen":
            self._listens.add(scope)
        requests.start_soon(self._request, frame, scope, None)
        return None

    def _refuse(self, error: wire.Frame) -> None:
        # Refused before dispatch judged it: traced here with no revision, as /mcp traces
        # its own refusals (dispatch traces what it answers).
        if self.ctx.trace is not None:
            self.ctx.trace(None, error, None)
        self._emit(error)

    async def _request(
        self,
        frame: wire.Frame,
        scope: anyio.CancelScope | None = None,
        ahead: SentAhead | None = None,
    ) -> None:
        # Given a scope: a request that runs in a slot (initialize runs in line, without).
        try:
            reply = await self.session.serve(
                frame,
                self.ctx,
                notify=self._push,
                ask=self._ask,
                scope=scope,
                slotted=scope is not None,
                ahead=ahead,
            )
        finally:
            if scope is not None:
                self._listens.discard(scope)
        if reply is not None:
            self._emit(reply)

    async def _paced(self) -> None:
        """Read no further while this host's requests wait in line for a slot, or until a
        question is put to it (``_read_on`` cancels the pause)."""
        with anyio.CancelScope() as self._pause:
            await self.session.slots.drained()
        self._pause = None

    async def _batch(self, decoded: wire.Decoded) -> None:
        # Answered as one array, once all of its requests have answered.
        replies = await self.session.batch(decoded, self.ctx, notify=self._push, ask=self._ask)
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


class Prefixed(ByteReceiveStream):
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
