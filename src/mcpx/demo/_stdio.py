"""Newline-delimited JSON-RPC over a pair of byte streams: the demo server's I/O.

``serve`` reads lines, decodes each into frames with ``mcpx.wire``, runs every request in a
task of its own (so a ``notifications/cancelled`` or a ``ping`` is read and answered while
``slow`` runs), writes every frame as one whole line, and returns at end of input.

Invariants:

- Every task runs in the task group ``serve`` owns; none outlives it.
- A frame is written whole, under a lock and shielded from cancellation: a cancel stops a
  request between frames, never mid-line. Taking the lock is a checkpoint, so a request
  whose scope was cancelled writes nothing more, neither progress nor a response.
- A request's id is registered before the next line is read, so a cancel right behind the
  request always finds it. A cancel for anything else (unknown, finished, ``initialize``,
  which runs in line and is never registered) is ignored, as every revision asks.
- No input ends the loop: an unreadable line is answered -32700/-32600 with its id when one
  can be read, without one where the revision in force allows that, else only logged.
- At end of input, standing requests (listens) are ended and the rest get ``drain`` seconds
  to answer; then whatever still runs is cancelled and ``serve`` returns.
- A broken stdout ends the connection at once: nothing could be answered any more.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

import anyio
from anyio.abc import TaskGroup

from mcpx import wire

from ._server import INLINE, STANDING, Server

__all__ = ["DRAIN_SECONDS", "MAX_LINE_BYTES", "ByteSink", "ByteSource", "serve"]

log = logging.getLogger("mcpx.demo")

DRAIN_SECONDS: Final = 2.0  # at end of input: how long requests in flight may still answer
MAX_LINE_BYTES: Final = 16 * 1024 * 1024  # a longer line is skipped and answered -32700

_CLOSED: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class ByteSource(Protocol):
    """What ``serve`` reads: anyio byte streams and memory object streams both fit."""

    async def receive(self) -> bytes: ...


class ByteSink(Protocol):
    """What ``serve`` writes to."""

    async def send(self, item: bytes, /) -> None: ...


async def serve(
    stdin: ByteSource,
    stdout: ByteSink,
    *,
    drain: float = DRAIN_SECONDS,
    max_line: int = MAX_LINE_BYTES,
) -> None:
    """Serve one MCP connection: frames from ``stdin``, answers to ``stdout``, until
    ``stdin`` ends (``EndOfStream``, or the stream closed or broken) or ``stdout`` breaks."""
    async with anyio.create_task_group() as tg:
        connection = _Connection(stdout, tg)
        await connection.read(_Lines(stdin, max_line))
        await connection.drain(drain)
        tg.cancel_scope.cancel()


class _LineTooLong(Exception):
    pass


class _Lines:
    """Lines of a byte stream (LF-terminated, a CR before the LF dropped), each capped."""

    def __init__(self, source: ByteSource, limit: int) -> None:
        self._source = source
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer already known to hold no LF
        self._skipping = False  # inside a line that went past the limit
        self._ended = False

    async def next(self) -> bytes | None:
        """The next line, or None at end of input.

        Raises:
            _LineTooLong: a line went past the limit; it has been skipped to its end.
        """
        while True:
            cut = self._buffer.find(b"\n", self._scanned)
            if cut >= 0:
                line = bytes(self._buffer[:cut]).removesuffix(b"\r")
                del self._buffer[: cut + 1]
                self._scanned = 0
                return self._finished(line)
            self._scanned = len(self._buffer)
            if self._scanned > self._limit:
                # Keep nothing of an oversized line: memory stays bounded whatever the peer does.
                self._buffer.clear()
                self._scanned, self._skipping = 0, True
            if self._ended:
                rest, self._buffer = bytes(self._buffer), bytearray()
                return self._finished(rest) if rest or self._skipping else None
            try:
                self._buffer += await self._source.receive()
            except _CLOSED:
                self._ended = True

    def _finished(self, line: bytes) -> bytes:
        # Also a line that arrived whole in one read: the limit is exact, not per read.
        if self._skipping or len(line) > self._limit:
            self._skipping = False
            raise _LineTooLong(f"a line longer than {self._limit} bytes")
        return line


class _Connection:
    """The requests in flight on one connection and the one writer they share."""

    def __init__(self, stdout: ByteSink, tg: TaskGroup) -> None:
        self._stdout = stdout
        self._tg = tg
        self._server = Server(self.send)
        self._lock = anyio.Lock()
        self._inflight: dict[wire.RequestId, anyio.CancelScope] = {}
        self._standing: set[wire.RequestId] = set()
        self._idle = anyio.Event()
        self._idle.set()
        self._broken = False

    async def send(self, frame: wire.Frame | list[wire.Frame]) -> None:
        """Write one frame (or a batch answer) as one line."""
        data = wire.dumps(frame) + b"\n"
        async with self._lock:
            if self._broken:
                return
            with anyio.CancelScope(shield=True):
                try:
                    await self._stdout.send(data)
                except (OSError, *_CLOSED) as exc:
                    self._broken = True
                    log.warning("stdout is gone (%r): ending the connection", exc)
                    self._tg.cancel_scope.cancel()

    async def read(self, lines: _Lines) -> None:
        """Handle every line until end of input."""
        while True:
            try:
                line = await lines.next()
            except _LineTooLong as exc:
                await self._unreadable(wire.ParseError(str(exc)))
                continue
            if line is None:
                return
            if line.strip():  # a blank line carries nothing; skip it quietly
                await self._take(line)

    async def drain(self, grace: float) -> None:
        """End standing requests, then give the rest ``grace`` seconds to answer."""
        for rid in self._standing:
            self._inflight[rid].cancel()
        with anyio.move_on_after(grace):
            await self._idle.wait()
        if self._inflight:
            log.warning("end of input: cancelling %d request(s) still running", len(self._inflight))

    async def _take(self, line: bytes) -> None:
        try:
            decoded = wire.decode(line, batch_ok=self._server.session.batches())
        except wire.McpError as err:  # ParseError or InvalidRequest, with the id if readable
            await self._unreadable(err)
            return
        if decoded.batch:
            self._batch(decoded)
            return
        kind, frame = decoded.messages[0]
        params: dict[str, Any] = frame.get("params") or {}
        if kind is wire.Kind.NOTIFICATION:
            self._notification(frame["method"], params)
        elif kind is wire.Kind.REQUEST:
            await self._request(frame["id"], frame["method"], params)
        else:
            log.warning("ignored a response (id %r): this server asks nothing", frame.get("id"))

    async def _unreadable(self, err: wire.McpError) -> None:
        if err.request_id is not None:
            await self.send(wire.error(err.request_id, err))
        elif self._server.session.idless_errors():
            await self.send(wire.error(None, err))
        else:
            # An error must carry an id before 2025-11-25, and this input had none to echo.
            log.warning("unanswerable input: %s", err.message)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "notifications/cancelled":
            self._server.notification(method, params)
            return
        rid = params.get("requestId")
        # JSON ids are never booleans, though Python would find request 1 under True.
        if isinstance(rid, bool) or not isinstance(rid, str | int):
            return
        scope = self._inflight.get(rid)
        if scope is not None:
            log.info("request %r cancelled: %s", rid, params.get("reason", "no reason given"))
            scope.cancel()

    async def _request(self, rid: wire.RequestId, method: str, params: dict[str, Any]) -> None:
        if rid in self._inflight:
            await self.send(wire.error(rid, _id_in_use(rid)))
        elif method in INLINE:
            await self.send(await self._server.request(rid, method, params))
        else:
            self._tg.start_soon(self._run, rid, method, params, self._register(rid, method))

    async def _run(
        self, rid: wire.RequestId, method: str, params: dict[str, Any], scope: anyio.CancelScope
    ) -> None:
        try:
            with scope:
                await self.send(await self._server.request(rid, method, params))
        finally:
            self._release(rid)

    def _batch(self, decoded: wire.Decoded) -> None:
        """A 2025-03-26 batch: its requests run concurrently, answered in one array."""
        answers = [wire.error(rid, err) for rid, err in decoded.errors if rid is not None]
        if len(answers) < len(decoded.errors) and self._server.session.idless_errors():
            answers += [wire.error(None, err) for rid, err in decoded.errors if rid is None]
        runs: list[tuple[wire.RequestId, str, dict[str, Any], anyio.CancelScope]] = []
        for kind, frame in decoded.messages:
            params: dict[str, Any] = frame.get("params") or {}
            if kind is wire.Kind.NOTIFICATION:
                self._notification(frame["method"], params)
            elif kind is not wire.Kind.REQUEST:
                log.warning("ignored a response in a batch (id %r)", frame.get("id"))
            elif frame["id"] in self._inflight:
                answers.append(wire.error(frame["id"], _id_in_use(frame["id"])))
            elif frame["method"] == "initialize":
                refused = wire.InvalidRequest("initialize must not be part of a batch")
                answers.append(wire.error(frame["id"], refused))
            else:
                rid, method = frame["id"], frame["method"]
                runs.append((rid, method, params, self._register(rid, method)))
        self._tg.start_soon(self._run_batch, answers, runs)

    async def _run_batch(
        self,
        answers: list[wire.Frame],
        runs: list[tuple[wire.RequestId, str, dict[str, Any], anyio.CancelScope]],
    ) -> None:
        async def one(
            rid: wire.RequestId, method: str, params: dict[str, Any], scope: anyio.CancelScope
        ) -> None:
            try:
                with scope:  # a cancelled member is left out of the answer
                    answers.append(await self._server.request(rid, method, params))
            finally:
                self._release(rid)

        async with anyio.create_task_group() as tg:
            for run in runs:
                tg.start_soon(one, *run)
        if answers:  # a batch of notifications only is answered with nothing
            await self.send(answers)

    def _register(self, rid: wire.RequestId, method: str) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        self._inflight[rid] = scope
        if method in STANDING:
            self._standing.add(rid)
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        return scope

    def _release(self, rid: wire.RequestId) -> None:
        del self._inflight[rid]
        self._standing.discard(rid)
        if not self._inflight:
            self._idle.set()


def _id_in_use(rid: wire.RequestId) -> wire.InvalidRequest:
    return wire.InvalidRequest(f"request id {rid!r} is already in flight")
