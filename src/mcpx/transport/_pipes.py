"""A pipe's (or a socket's) two ends as anyio byte streams, for descriptors mcpx owns:
a stdio host's stdin and stdout (handed over by ``mcpx serve``).

Reading: the event loop's own reader watches the descriptor for as long as it is read,
and ``receive`` takes what has arrived. ``anyio.wait_readable`` then ``os.read`` would
register the descriptor with the loop and remove it again on every read, and a stdio
peer sends one line per message, so registering was most of what reading one cost.

Writing: ``os.write`` at once, waiting for the descriptor only when the pipe is full.

Invariants:

- A descriptor passed in is owned from then on. ``close`` stops the loop using it, puts
  its file status flags back (the file description may be shared with another process,
  which expects them as they were) and closes it, all at once, without a checkpoint, so
  it also runs under cancellation.
- Bytes read are delivered in order and never dropped: a ``receive`` cancelled while it
  waits leaves what arrives for the next one. A ``send`` writes all of ``item`` or raises.
  A sink (``deliver_to``) is offered a chunk only when none waits for ``receive``.
- At most ``_HIGH`` bytes wait unread: beyond that the loop stops reading the pipe (the
  writer then blocks) until ``receive`` has taken them below ``_LOW``.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from typing import Final

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["PipeReceiveStream", "PipeSendStream", "can_write_descriptors"]

_HIGH: Final = 1024 * 1024
_LOW: Final = 256 * 1024
# Waiting on an arbitrary descriptor came with anyio 4.7.
_wait_writable = getattr(anyio, "wait_writable", None)
_notify_closing = getattr(anyio, "notify_closing", None)


def can_write_descriptors() -> bool:
    """Whether this anyio can wait on a descriptor (``PipeSendStream`` needs it)."""
    return _wait_writable is not None and _notify_closing is not None


class PipeReceiveStream(ByteReceiveStream):
    """The read end ``fd``: ``start`` it, ``close`` it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False
        self._flags: int | None = None
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._error: BaseException | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._sink: Callable[[bytes], bool] | None = None

    async def start(self) -> None:
        """Have the loop read the descriptor.

        Raises:
            OSError, ValueError: the loop cannot read it (nothing is left registered).
        """
        self._flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(os.dup(self.fd), "rb", buffering=0)
        try:
            self._transport, _ = await loop.connect_read_pipe(lambda: _Feed(self), pipe)
        except BaseException:
            pipe.close()
            raise

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._chunks:
            # Already here: a cancellation point, not a trip through the loop.
            await anyio.lowlevel.checkpoint_if_cancelled()
        else:
            if self.closed:
                raise anyio.ClosedResourceError
            if not self._ended:
                waiter = self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await waiter
                finally:
                    self._waiter = None
        if self._chunks:
            return self._take(max_bytes)
        if self.closed:
            raise anyio.ClosedResourceError
        if self._error is not None:
            raise anyio.BrokenResourceError from self._error
        raise anyio.EndOfStream

    def _take(self, max_bytes: int) -> bytes:
        data = self._chunks.popleft()
        while self._chunks and len(data) + len(self._chunks[0]) <= max_bytes:
            data += self._chunks.popleft()
        if len(data) > max_bytes:
            self._chunks.appendleft(data[max_bytes:])
            data = data[:max_bytes]
        self._size -= len(data)
        if self._paused and self._size < _LOW and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data

    def deliver_to(self, sink: Callable[[bytes], bool] | None) -> None:
        """Offer each chunk to ``sink`` in the loop's own callback, as it is read, while
        nothing waits unread (so the order holds): taken (True), it never reaches
        ``receive``; declined, it is queued as usual. None: queue everything again."""
        self._sink = sink

    def take_unread(self) -> bytes:
        """Stop reading the descriptor, for good; what was read and not yet received.
        (The daemon gives the pipe back: these bytes travel with it.)"""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()
            self._paused = True
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return data

    def _fed(self, data: bytes) -> None:
        if self._sink is not None and not self._chunks and self._sink(data):
            return
        self._chunks.append(data)
        self._size += len(data)
        if self._size > _HIGH and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def _end(self, error: BaseException | None) -> None:
        self._ended = True
        self._error = self._error or error
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._transport is not None:
            self._transport.close()  # stops reading now; the duplicate closes with it
        if self._flags is not None:
            with suppress(OSError):
                fcntl.fcntl(self.fd, fcntl.F_SETFL, self._flags)
        os.close(self.fd)
        self._wake()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class PipeSendStream(ByteSendStream):
    """The write end ``fd``: non-blocking once started, written directly."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False
        self._flags: int | None = None

    def start(self) -> None:
        self._flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        fcntl.fcntl(self.fd, fcntl.F_SETFL, self._flags | os.O_NONBLOCK)

    async def send(self, item: bytes) -> None:
        assert _wait_writable is not None
        await anyio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(item)
        while view:
            if self.closed:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                await _wait_writable(self.fd)
            except OSError as exc:  # EPIPE: the reader is gone
                raise anyio.BrokenResourceError from exc
        # No yield after a write done at once: a writer loop yields where it waits.

    def send_nowait(self, item: bytes) -> int:
        """Write what the pipe takes now, without waiting: how many bytes that was.

        Raises:
            anyio.ClosedResourceError: closed here.
            anyio.BrokenResourceError: the reader is gone.
        """
        if self.closed:
            raise anyio.ClosedResourceError
        try:
            return os.write(self.fd, item)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if _notify_closing is not None:
            _notify_closing(self.fd)
        if self._flags is not None:
            with suppress(OSError):
                fcntl.fcntl(self.fd, fcntl.F_SETFL, self._flags)
        os.close(self.fd)

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class _Feed(asyncio.Protocol):
    """The loop's side: hands what it reads to the stream."""

    def __init__(self, stream: PipeReceiveStream) -> None:
        self._stream = stream

    def data_received(self, data: bytes) -> None:
        self._stream._fed(data)

    def eof_received(self) -> bool:
        self._stream._end(None)
        return False  # nothing more to read: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._stream._end(exc)
