"""One HTTP exchange's mechanics: starting it, and reading its answer into frames.

``start_request`` runs a request as a task and returns once its body is sent.

A ``BodyReader`` serves one exchange: the POST that carried a request (or none, for the
standalone GET stream). It puts every frame it reads into the transport's inbox, notes
whether the answer to its request went by, and, for SSE, follows the stream across
reconnections (GET with ``Last-Event-ID``) when the server cut the connection after
giving event ids.

Invariants:

- Frames are delivered in the order the body carries them, each as soon as it is read.
- No body is ever buffered past ``max_frame`` bytes (plus a little SSE field overhead):
  a larger frame ends the exchange with ``ExchangeFailed``.
- Reading stops once the answer is delivered: the server SHOULD end the stream there, and
  one that does not must not keep a connection forever. What follows is drained for a
  moment only so that the connection can go back to the pool.
- Reconnection waits the server's ``retry`` (capped) and gives up after
  ``MAX_IDLE_RECONNECTS`` reconnections in a row that brought no event.
- Every error message is built with the exchange's ``Redactor``: URLs as it shows them,
  and whatever is quoted from elsewhere (an httpx exception, the server's body) through
  ``Redactor.text``, since either may repeat a credential.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from mcpx.config import Redactor, redact_url
from mcpx.wire import RequestId

from ._base import HttpStatusError, TransportError
from ._frames import BadFrame, answers, is_response, parse_frames, snippet
from ._inbox import Inbox
from ._sse import EventTooLarge, SseEvent, SseParser

__all__ = [
    "MAX_IDLE_RECONNECTS",
    "BodyReader",
    "ExchangeFailed",
    "OpenGet",
    "Started",
    "connection_failed",
    "content_type",
    "error_body_frames",
    "quoted",
    "read_capped",
    "start_request",
    "status_error",
    "status_error_with",
]

MAX_IDLE_RECONNECTS: Final = 5
_DEFAULT_RETRY_MS: Final = 1000  # when the server never said (the standard leaves it to us)
_MAX_RETRY_MS: Final = 60_000  # a server cannot park a stream for longer than this
_SSE_OVERHEAD: Final = 4096  # field names and line ends around one frame's data
_DRAIN_SECONDS: Final = 0.5
_DRAIN_BYTES: Final = 65536
_ERROR_BODY_MAX: Final = 65536  # an error page is quoted, never a whole large body
# What of a body is searched for credentials before the start of it is quoted: far more
# than is quoted, so no secret is cut in two at the edge and half of it shown.
_QUOTED_WINDOW: Final = 4096

# httpcore trace events after which the request body has left (or failed to leave).
_BODY_SENT: Final = ("send_request_body.complete", "send_request_body.failed")

Frame = dict[str, Any]

# Opens ``GET url`` with ``Last-Event-ID: <id>`` (when the id is not empty) as a stream.
OpenGet = Callable[[str], AbstractAsyncContextManager[httpx.Response]]


class AuthFailed(TransportError):
    """The request's ``httpx.Auth`` (the upstream's OAuth) failed; ``error`` is its own
    exception (``mcpx.oauth.LoginNeeded`` when a person must sign in)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class ExchangeFailed(TransportError):
    """One exchange could not deliver its answer; carried by ``RequestFailed``."""


def content_type(response: httpx.Response) -> str:
    """The media type of ``response``, lowercased, without parameters."""
    value: str = response.headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower()


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The whole body of ``response``, refusing to hold more than ``limit`` bytes.

    Raises:
        ExchangeFailed: the body is longer than ``limit``.
        httpx.HTTPError: the connection broke while reading.
    """
    declared: str = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ExchangeFailed(f"response body of {declared} bytes is over {limit} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise ExchangeFailed(f"response body is over {limit} bytes")
    return bytes(body)


def quoted(data: bytes | str, redactor: Redactor) -> str:
    """The start of ``data`` for an error message, its credentials hidden."""
    head = data[:_QUOTED_WINDOW]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return snippet(redactor.text(text) + ("..." if len(head) < len(data) else ""))


async def status_error(response: httpx.Response, redactor: Redactor) -> HttpStatusError:
    """An ``HttpStatusError`` for ``response``, with the start of its body.

    Raises:
        httpx.HTTPError: the connection broke while reading.
    """
    try:
        body = await read_capped(response, _ERROR_BODY_MAX)
    except ExchangeFailed:
        body = b""  # too long to quote; the status says enough
    return status_error_with(response, body, redactor)


def status_error_with(response: httpx.Response, body: bytes, redactor: Redactor) -> HttpStatusError:
    """An ``HttpStatusError`` for ``response`` whose body was already read."""
    shown = redactor.text(body[:_QUOTED_WINDOW].decode("utf-8", "replace"))
    return HttpStatusError(response.status_code, body, dict(response.headers.items()), shown=shown)


def connection_failed(
    method: str, url: str | httpx.URL, exc: httpx.HTTPError, redactor: Redactor
) -> ExchangeFailed:
    """The error for an exchange that broke at the connection level; ``exc`` is chained.

    httpx's own text may quote what the request carried (h11 quotes a header value it
    refuses), so it is shown through ``redactor`` as the URL is.
    """
    shown = redactor.text(f"{type(exc).__name__}: {exc}")
    error = ExchangeFailed(f"{method} {redact_url(str(url))} failed: {shown}")
    error.__cause__ = exc
    return error


def error_body_frames(body: bytes, request_id: RequestId | None) -> list[Frame] | None:
    """The frames of an HTTP error body when they answer ``request_id``, else None.

    An id-less (or null-id) error is the server's answer to the one request the exchange
    carried, the only one it can be about: it gets that request's id so that the session
    can match it. Frames answering some other request are not this exchange's answer.
    """
    try:
        frames = parse_frames(body)
    except BadFrame:
        return None
    if request_id is None or not all(is_response(frame) for frame in frames):
        return None
    if len(frames) == 1 and frames[0].get("id") is None and "error" in frames[0]:
        return [{**frames[0], "id": request_id}]
    return frames if any(answers(frame, request_id) for frame in frames) else None


class Started:
    """Lets a request job tell ``start_request``'s caller that it may go on.

    Pass ``trace`` as the request's ``trace`` extension: httpcore calls it as the body
    leaves. Call ``release()`` yourself once the request has been answered or has failed,
    before delivering anything: a caller waiting on a full inbox would never return.
    """

    def __init__(self, task_status: TaskStatus[None]) -> None:
        self._task_status = task_status
        self._released = False

    def release(self) -> None:
        """Let the caller go on (idempotent)."""
        if not self._released:
            self._released = True
            self._task_status.started()

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        """The httpcore trace hook."""
        if name.endswith(_BODY_SENT):
            self.release()


async def start_request(task_group: TaskGroup, job: Callable[[Started], Awaitable[None]]) -> None:
    """Run ``job`` in ``task_group``; return once its request body is sent or it ended.

    So requests started one after another reach the server in that order, and the caller
    does not wait for the answer (see ``Started`` for what ``job`` must do).
    """

    async def run(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = Started(task_status)
        try:
            await job(started)
        finally:
            started.release()

    await task_group.start(run)


class BodyReader:
    """Reads the response bodies of one exchange into ``inbox``."""

    def __init__(
        self, inbox: Inbox, max_frame: int, request_id: RequestId | None, redactor: Redactor
    ) -> None:
        self._inbox = inbox
        self._max_frame = max_frame
        self._redactor = redactor
        self.request_id = request_id
        self.answered = False
        self.events = 0  # message events read, over every connection
        self.last_event_id = ""
        self.retry_ms: int | None = None

    async def read_json(self, response: httpx.Response) -> None:
        """Deliver the frame (or batch) of an ``application/json`` body; empty is nothing.

        Raises:
            ExchangeFailed: the body is too large or is not JSON-RPC.
            httpx.HTTPError: the connection broke while reading.
        """
        body = await read_capped(response, self._max_frame)
        if body.strip():
            await self._deliver(body)

    async def read_sse(self, response: httpx.Response) -> None:
        """Deliver each ``message`` event of an SSE body until it ends or answers us.

        Raises:
            ExchangeFailed: an event is too large or its data is not JSON-RPC.
            httpx.HTTPError: the connection broke while reading.
        """
        parser = SseParser(self._max_frame + _SSE_OVERHEAD, last_event_id=self.last_event_id)
        chunks = response.aiter_bytes()
        try:
            async for chunk in chunks:
                try:
                    events = parser.feed(chunk)
                except EventTooLarge as exc:
                    await self._deliver_events(exc.events)
                    raise ExchangeFailed(str(exc)) from None
                await self._deliver_events(events)
                if self.answered:
                    break
            if self.answered:
                await _drain(chunks)
        finally:
            self.last_event_id = parser.last_event_id
            if parser.retry is not None:
                self.retry_ms = parser.retry

    async def follow(self, open_get: OpenGet) -> None:
        """Resume the SSE stream by GET with ``Last-Event-ID`` until answered or given up.

        Only a stream that gave event ids can be resumed: without one (2026-07-28 servers
        never send ids) this returns at once. A request reader keeps going until answered;
        the listen reader (``request_id`` None) until reconnecting stops bringing events.

        Raises:
            HttpStatusError: a reconnection was refused (any HTTP error, 405 included).
            ExchangeFailed: a reconnection's body is not SSE, or an event broke the stream.
            httpx.HTTPError: a reconnection could not connect or broke while reading.
        """
        idle = 0
        while not self.answered and idle < MAX_IDLE_RECONNECTS:
            if self.request_id is not None and not self.last_event_id:
                return
            await anyio.sleep(min(self.retry_ms or _DEFAULT_RETRY_MS, _MAX_RETRY_MS) / 1000)
            before = self.events
            async with open_get(self.last_event_id) as response:
                if response.status_code >= 400:
                    raise await status_error(response, self._redactor)
                if content_type(response) != "text/event-stream":
                    raise ExchangeFailed(f"resuming the stream gave {content_type(response)!r}")
                await self.read_sse(response)
            idle = 0 if self.events > before else idle + 1

    async def _deliver_events(self, events: list[SseEvent]) -> None:
        for event in events:
            # Only ``message`` events carry frames; an empty one is a priming event.
            if event.event != "message" or not event.data.strip():
                continue
            self.events += 1
            if len(event.data) > self._max_frame:
                raise ExchangeFailed(f"a server-sent frame is over {self._max_frame} bytes")
            await self._deliver(event.data)

    async def _deliver(self, text: bytes | str) -> None:
        try:
            frames = parse_frames(text)
        except BadFrame as exc:
            shown = quoted(text, self._redactor)
            raise ExchangeFailed(f"the server sent {shown}, not JSON-RPC: {exc}") from exc
        for frame in frames:
            if self.request_id is not None and answers(frame, self.request_id):
                self.answered = True
            await self._inbox.put(frame)


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    # The answer is in; reading the end of the body lets the connection be reused.
    seen = 0
    with anyio.move_on_after(_DRAIN_SECONDS), contextlib.suppress(httpx.HTTPError):
        async for chunk in chunks:
            seen += len(chunk)
            if seen > _DRAIN_BYTES:
                break
