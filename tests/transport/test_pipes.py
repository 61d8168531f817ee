"""Pipe streams: read by the loop's own reader in order with nothing lost, written whole,
each descriptor handed back as it was found. On both loops the daemon may run on."""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import threading
from collections.abc import AsyncIterator

import anyio
import pytest

from mcpx.transport._pipes import _HIGH, PipeReceiveStream, PipeSendStream
from support.waiting import await_until

pytestmark = pytest.mark.anyio


@pytest.fixture(
    params=[("asyncio", {}), ("asyncio", {"use_uvloop": True})], ids=["asyncio", "uvloop"]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    return request.param


class _Pipe:
    """A pipe whose read end is a started ``PipeReceiveStream``; we hold the write end."""

    def __init__(self) -> None:
        r, self._w = os.pipe()
        self.stream = PipeReceiveStream(r)
        self._open = True

    def write(self, data: bytes) -> None:
        os.write(self._w, data)

    def end(self) -> None:
        """Close the write end (the reader then sees EOF), once."""
        if self._open:
            self._open = False
            os.close(self._w)


@pytest.fixture
async def pipe() -> AsyncIterator[_Pipe]:
    made = _Pipe()
    await made.stream.start()
    try:
        yield made
    finally:
        made.stream.close()
        made.end()


async def _all(stream: PipeReceiveStream) -> bytes:
    got = b""
    with anyio.fail_after(10):
        while True:
            try:
                got += await stream.receive()
            except anyio.EndOfStream:
                return got


async def test_bytes_arrive_in_order_then_end_of_stream(pipe: _Pipe) -> None:
    pipe.write(b"one\n")
    with anyio.fail_after(5):
        assert await pipe.stream.receive() == b"one\n"
    pipe.write(b"two\n")
    pipe.write(b"three\n")
    pipe.end()
    assert await _all(pipe.stream) == b"two\nthree\n"
    with pytest.raises(anyio.EndOfStream):
        await pipe.stream.receive()


async def test_max_bytes_is_honoured_and_the_rest_kept(pipe: _Pipe) -> None:
    pipe.write(b"abcdefgh")
    with anyio.fail_after(5):
        first = await pipe.stream.receive(3)
    pipe.end()
    assert first == b"abc"
    assert await _all(pipe.stream) == b"defgh"


async def test_a_cancelled_receive_loses_nothing(pipe: _Pipe) -> None:
    with anyio.move_on_after(0.05) as scope:
        await pipe.stream.receive()
    assert scope.cancelled_caught
    pipe.write(b"after the cancel\n")
    pipe.end()
    assert await _all(pipe.stream) == b"after the cancel\n"


async def test_close_puts_the_flags_back_and_closes_the_descriptor() -> None:
    r, w = os.pipe()
    other = os.dup(r)  # the shim's copy: it shares the file description
    try:
        before = fcntl.fcntl(other, fcntl.F_GETFL)
        assert not before & os.O_NONBLOCK
        stream = PipeReceiveStream(r)
        await stream.start()
        assert fcntl.fcntl(other, fcntl.F_GETFL) & os.O_NONBLOCK  # the loop's doing
        stream.close()
        assert fcntl.fcntl(other, fcntl.F_GETFL) == before
        with pytest.raises(OSError) as exc:
            os.fstat(r)
        assert exc.value.errno == errno.EBADF
        with pytest.raises(anyio.ClosedResourceError):
            await stream.receive()
        # Nobody reads the pipe any more: the copy still can, and gets what is written.
        os.write(w, b"x")
        assert os.read(other, 1) == b"x"
    finally:
        os.close(other)
        os.close(w)


async def test_close_wakes_a_waiting_receive(pipe: _Pipe) -> None:
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_expect_closed, pipe.stream)
            await await_until(lambda: pipe.stream._waiter is not None)  # it is waiting
            pipe.stream.close()


async def _expect_closed(stream: PipeReceiveStream) -> None:
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


async def test_a_writer_faster_than_the_reader_is_held_back_not_lost() -> None:
    # Over _HIGH unread bytes the loop stops reading; the writer blocks, then finishes.
    r, w = os.pipe()
    stream = PipeReceiveStream(r)
    await stream.start()
    total = 3 * _HIGH
    chunk = bytes(range(256)) * 256

    def write() -> None:
        sent = 0
        while sent < total:
            sent += os.write(w, chunk[: total - sent])
        os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        await await_until(lambda: stream._paused)  # the writer got ahead: reading paused
        assert stream._size <= _HIGH + len(chunk)  # paused, not buffering all of it
        got = await _all(stream)
        assert len(got) == total
        assert got == (chunk * (total // len(chunk) + 1))[:total]
    finally:
        writer.join(10)
        stream.close()


async def test_a_socket_works_as_a_pipe_does() -> None:
    a, b = socket.socketpair()
    stream = PipeReceiveStream(os.dup(a.fileno()))
    a.close()
    await stream.start()
    try:
        b.sendall(b"over a socket\n")
        b.close()
        assert await _all(stream) == b"over a socket\n"
    finally:
        stream.close()


async def test_send_writes_everything_even_past_a_full_pipe() -> None:
    r, w = os.pipe()
    stream = PipeSendStream(w)
    stream.start()
    payload = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe holds
    got = bytearray()

    def read() -> None:
        while chunk := os.read(r, 65536):
            got.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        with anyio.fail_after(10):
            await stream.send(payload)
    finally:
        stream.close()
        reader.join(10)
        os.close(r)
    assert bytes(got) == payload


async def test_send_to_a_gone_reader_is_a_broken_resource_and_flags_go_back() -> None:
    r, w = os.pipe()
    other = os.dup(w)
    before = fcntl.fcntl(other, fcntl.F_GETFL)
    stream = PipeSendStream(w)
    stream.start()
    os.close(r)
    try:
        with pytest.raises(anyio.BrokenResourceError):
            await stream.send(b"nobody reads this\n")
    finally:
        stream.close()
    assert fcntl.fcntl(other, fcntl.F_GETFL) == before
    os.close(other)
    with pytest.raises(anyio.ClosedResourceError):
        await stream.send(b"x")
