"""The shared client factory: bounded connects and pool waits, unbounded stream reads,
and a request sent again when a kept-alive connection closes under it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import httpx
import pytest
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpx.transport import http_client

pytestmark = pytest.mark.anyio


async def test_defaults() -> None:
    async with http_client(headers={"User-Agent": "mcpx-test"}) as client:
        assert client.timeout == httpx.Timeout(connect=10.0, read=None, write=30.0, pool=30.0)
        assert client.follow_redirects is True
        assert client.headers["user-agent"] == "mcpx-test"


async def test_limits_are_passed_on() -> None:
    async with http_client(max_connections=4, max_keepalive=10, connect_timeout=1) as client:
        pool = client._transport._inner._pool  # type: ignore[attr-defined]
        assert pool._max_connections == 4
        assert pool._max_keepalive_connections == 4  # never more idle than allowed open
        assert client.timeout.connect == 1


def test_nonsense_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_connections must be positive"):
        http_client(max_connections=0)


@dataclass
class KeepAliveServer:
    """HTTP/1.1 on 127.0.0.1 that keeps connections alive and, on the connection numbers
    in ``drop``, reads the request at ``drop[n]`` (its index on that connection) and
    closes without answering: a keep-alive timeout firing as the request came (``at`` 1),
    or a server that failed mid-request on a connection made for it (``at`` 0)."""

    drop: dict[int, int] = field(default_factory=dict)
    answered: list[bytes] = field(default_factory=list)
    dropped: list[tuple[int, bytes]] = field(default_factory=list)
    connections: int = 0

    async def serve(self, stream: SocketStream) -> None:
        number, self.connections = self.connections, self.connections + 1
        reader = BufferedByteReceiveStream(stream)
        async with stream:
            for index in range(100):
                try:
                    head = await reader.receive_until(b"\r\n\r\n", 65536)
                except (anyio.EndOfStream, anyio.IncompleteRead):
                    return
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = await reader.receive_exactly(length)
                if self.drop.get(number) == index:
                    self.dropped.append((number, body))
                    return  # closed, unanswered
                self.answered.append(body)
                await stream.send(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )


@asynccontextmanager
async def keep_alive_server(**knobs: dict[int, int]) -> AsyncIterator[tuple[str, KeepAliveServer]]:
    server = KeepAliveServer(**knobs)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, server.serve)
        yield f"http://127.0.0.1:{port}/mcp", server
        group.cancel_scope.cancel()


async def test_a_request_a_kept_alive_connection_dropped_is_sent_again() -> None:
    async with keep_alive_server(drop={0: 1}) as (url, server), http_client() as client:
        first = await client.post(url, content=b'{"n":1}')
        second = await client.post(url, content=b'{"n":2}')
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.content == b'{"n":2}'
    assert server.dropped == [(0, b'{"n":2}')]  # the old connection closed under it
    assert server.answered == [b'{"n":1}', b'{"n":2}']  # each acted on once
    assert server.connections == 2


async def test_a_request_dropped_on_a_connection_of_its_own_is_not_sent_again() -> None:
    async with keep_alive_server(drop={0: 0}) as (url, server), http_client() as client:
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await client.post(url, content=b'{"n":1}')
    assert server.dropped == [(0, b'{"n":1}')]  # the server may have acted: once only
    assert server.answered == [] and server.connections == 1
