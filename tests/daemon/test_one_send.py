"""The daemon's HTTP protocol: one send per loop step, bytes whole and in order."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import uvicorn

from mcpx.daemon._one_send import OneSendProtocol, _OneSend
from support.asgi import loopback_socket


class _Recording:
    """A transport that records each write it is given (the sends the kernel sees)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


@pytest.mark.anyio
async def test_the_writes_of_one_step_leave_as_one_send_in_order() -> None:
    inner = _Recording()
    transport = _OneSend(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b'{"a":1}')
    assert inner.writes == []  # held until the step ends
    await anyio.lowlevel.checkpoint()
    assert inner.writes == [b'HTTP/1.1 200 OK\r\n\r\n{"a":1}']
    transport.write(b"later")
    await anyio.lowlevel.checkpoint()
    assert inner.writes[1:] == [b"later"]  # another step, another send
    assert transport.get_extra_info("peername", "x") == "x"  # the rest is the transport's


@pytest.mark.anyio
async def test_close_sends_what_is_pending_first_and_nothing_after() -> None:
    inner = _Recording()
    transport = _OneSend(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    transport.close()
    assert inner.writes == [b"HTTP/1.1 400 Bad Request\r\n\r\n"] and inner.closed
    transport.write(b"too late")
    await anyio.lowlevel.checkpoint()
    assert inner.writes == [b"HTTP/1.1 400 Bad Request\r\n\r\n"]


App = Callable[[Any, Any, Any], Awaitable[None]]


def _app(chunk0_read: threading.Event) -> App:
    """The test's ASGI app; its ``/stream`` writes the rest only once ``chunk0_read``."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/stream":
            # The first chunk must reach the client on its own: the rest is written only
            # once the client has it (bounded: a chunk held back fails the test's read).
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for i in range(3):
                chunk = b"chunk%d\n" % i
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if i == 0:
                    await asyncio.to_thread(chunk0_read.wait, 20)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        body = b'{"ok":true}'
        headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


@contextmanager
def _serving(app: App) -> Iterator[int]:
    sock = loopback_socket()
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, http=OneSendProtocol, ws="none", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _read_until(conn: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_answers_streams_and_refusals_arrive_whole_over_a_real_socket() -> None:
    chunk0_read = threading.Event()
    app = _app(chunk0_read)
    with _serving(app) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        for _ in range(3):  # keep-alive: one answer after another on one connection
            conn.sendall(b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = _read_until(conn, b'{"ok":true}')
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b'{"ok":true}')
        conn.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        first = _read_until(conn, b"chunk0\n\r\n")  # chunked: the chunk, then CRLF
        assert b"chunk1" not in first  # streamed as written, not held for the end
        chunk0_read.set()
        assert b"chunk2\n" in _read_until(conn, b"0\r\n\r\n")
    with _serving(app) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        refused = _read_until(conn, b"\r\n\r\nInvalid HTTP request received.")
        assert refused.startswith(b"HTTP/1.1 400 Bad Request")
