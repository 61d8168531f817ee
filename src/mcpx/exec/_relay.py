"""A run's own socket: the only door from a script to the daemon, and only for tool calls.

The script's client speaks HTTP/1.1 to ``$MCPX_RUN_SOCKET``; each request is parsed here
(h11), judged against ``SCRIPT_ROUTES`` and, when allowed, forwarded to the daemon's main
unix socket with the answer streamed back.

Invariants:
- Only ``SCRIPT_ROUTES`` pass; anything else is answered 403 naming what scripts may do.
- Every forwarded request carries ``X-Mcpx-Run: <the run's id>``, whatever the script sent,
  and only the headers in ``_PASSED`` besides (never a profile, never credentials).
- A body is at most ``MAX_BODY`` bytes (413 beyond, before it is read further).
- Connections are served concurrently; leaving ``open_relay`` cancels every request still
  in flight and closes the socket.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Final

import anyio
import h11
import httpx
from anyio.abc import SocketStream

from ._runtime import RUN_HEADER

MAX_BODY: Final = 4 * 1024 * 1024
_MAX_HEAD: Final = 64 * 1024
_CHUNK: Final = 64 * 1024
SCRIPT_ROUTES: Final = (
    ("POST", "/v1/call"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/tools/{server}/{tool}"),
    ("GET", "/v1/servers"),
    ("POST", "/v1/prompts/get"),
    ("POST", "/v1/resources/read"),
    ("GET", "/health"),
)
_MATCHERS: Final = tuple(
    (method, re.compile("^" + re.sub(r"\{\w+\}", "[^/]+", path) + "$"))
    for method, path in SCRIPT_ROUTES
)
_PASSED: Final = frozenset(
    {"content-type", "accept", "user-agent", "traceparent", "tracestate", "x-mcpx-log-level"}
)
# The daemon's answer loses only what belongs to its own connection.
_HOP: Final = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})


def script_may(method: str, target: str) -> bool:
    """Whether a script may send ``method`` ``target`` (a path, perhaps with a query)."""
    path = target.split("?", 1)[0]
    return any(m == method and pattern.match(path) for m, pattern in _MATCHERS)


def _refusal(status: int, code: str, message: str) -> tuple[h11.Response, bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    return h11.Response(status_code=status, headers=headers), body


def _forbidden(method: str, target: str) -> tuple[h11.Response, bytes]:
    may = ", ".join(f"{m} {p}" for m, p in SCRIPT_ROUTES)
    message = f"a script may only call tools and read listings ({may}); not {method} {target}"
    return _refusal(403, "forbidden", message)


class _Exchange:
    """One connection's h11 state with its stream: read a request, send an answer."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)

    async def next_event(self) -> h11.Event | type[h11.PAUSED]:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]  # h11's sentinels are classes
            try:
                data = await self.stream.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                data = b""
            self.conn.receive_data(data)

    async def send(self, *events: h11.Event) -> None:
        for event in events:
            data = self.conn.send(event)
            if data:
                await self.stream.send(data)

    async def send_whole(self, answer: tuple[h11.Response, bytes]) -> None:
        await self.send(answer[0], h11.Data(data=answer[1]), h11.EndOfMessage())

    async def read_body(self) -> bytes | None:
        """The request's body, or None once it outgrew ``MAX_BODY``."""
        body = bytearray()
        while True:
            event = await self.next_event()
            if isinstance(event, h11.EndOfMessage):
                return bytes(body)
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY:
                    return None


def _declared_length(request: h11.Request) -> int:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return 0


async def _forward(
    ex: _Exchange, client: httpx.AsyncClient, run_id: str, request: h11.Request, body: bytes
) -> None:
    headers = [(k.decode(), v.decode()) for k, v in request.headers if k.decode() in _PASSED]
    headers.append((RUN_HEADER.lower(), run_id))
    method, target = request.method.decode(), request.target.decode()
    try:
        async with client.stream(method, target, content=body, headers=headers) as answer:
            kept = [(k, v) for k, v in answer.headers.raw if k.decode().lower() not in _HOP]
            await ex.send(h11.Response(status_code=answer.status_code, headers=kept))
            async for chunk in answer.aiter_raw():
                await ex.send(h11.Data(data=chunk))
            await ex.send(h11.EndOfMessage())
    except httpx.TransportError as exc:
        if ex.conn.our_state is h11.SEND_RESPONSE:
            message = f"the daemon could not be reached for this run's call: {exc}"
            await ex.send_whole(_refusal(502, "daemon_unreachable", message))
        else:  # the answer was cut half-way: the script sees the connection end
            raise anyio.BrokenResourceError from exc


async def _answer_one(ex: _Exchange, client: httpx.AsyncClient, run_id: str) -> bool:
    """Serve one request; whether the connection may carry another."""
    event = await ex.next_event()
    if not isinstance(event, h11.Request):
        return False  # the script closed the connection (or paused it: nothing more to read)
    method, target = event.method.decode(), event.target.decode()
    too_large = f"a request body from a script is at most {MAX_BODY} bytes"
    if _declared_length(event) > MAX_BODY:
        await ex.send_whole(_refusal(413, "too_large", too_large))
        return False
    # The body is read even for a refusal, so the connection stays clean for the next one.
    body = await ex.read_body()
    if body is None:
        await ex.send_whole(_refusal(413, "too_large", too_large))
        return False
    if script_may(method, target):
        await _forward(ex, client, run_id, event, body)
    else:
        await ex.send_whole(_forbidden(method, target))
    if ex.conn.our_state is not h11.DONE or ex.conn.their_state is not h11.DONE:
        return False
    ex.conn.start_next_cycle()
    return True


async def _serve_connection(client: httpx.AsyncClient, run_id: str, stream: SocketStream) -> None:
    ex = _Exchange(stream)
    async with stream:
        try:
            while await _answer_one(ex, client, run_id):
                pass
        except h11.RemoteProtocolError as exc:
            if ex.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                bad = _refusal(exc.error_status_hint, "bad_request", f"not HTTP/1.1: {exc}")
                await ex.send_whole(bad)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
            pass  # the script went away mid-answer: nothing to tell it


@asynccontextmanager
async def open_relay(
    path: Path, *, run_id: str, daemon_socket: Path, headers: Mapping[str, str] | None = None
) -> AsyncIterator[None]:
    """Listen on ``path`` for the run ``run_id``, forwarding to ``daemon_socket``, until the
    block ends; then every request still in flight is cancelled. ``headers`` go with every
    forwarded request (the run starter's profile: the script reaches what it may)."""
    transport = httpx.AsyncHTTPTransport(uds=str(daemon_socket))
    listener = await anyio.create_unix_listener(path)
    forced = dict(headers or {})
    async with (
        listener,
        httpx.AsyncClient(
            transport=transport, base_url="http://mcpx", timeout=None, headers=forced
        ) as client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(
            partial(listener.serve, task_group=tg), partial(_serve_connection, client, run_id)
        )
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
