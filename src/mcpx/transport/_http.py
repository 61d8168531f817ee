"""The Streamable HTTP transport (2025-03-26 to 2026-07-28): one POST per frame.

``open_streamable_http`` yields a ``StreamableHttpTransport`` whose task group owns every
exchange. ``send`` starts a POST as a task and returns once its body is on the wire, so
POSTs reach the server in the order they were sent; answers (JSON or SSE) arrive through
``receive()``. The session above decides the per-frame headers; this module adds only
``Content-Type``, ``Accept``, the configured headers and the session id.

Invariants:

- One exchange failing (refused connection, HTTP error without a JSON-RPC body, a stream
  cut before the answer, an oversized frame) yields ``RequestFailed`` for its request and
  never ends the transport. Only closing it does. A JSON or SSE answer cut short is a
  ``ResponseStreamBroken``: the request is lost and may be sent again.
- Every request gets exactly one outcome through ``receive()``: its response frame or a
  ``RequestFailed``, unless the session aborted it (then nothing more comes for it).
- A session id is adopted only from a response to a request sent without one (the
  ``initialize`` exchange): a late response from a dead session cannot bring its id back.
  A 404 to a request that carried the current id clears it.
- Closing cancels every exchange, then sends ``DELETE`` with the session id (bounded in
  time, any answer ignored); the ``httpx.AsyncClient`` belongs to the caller.
- The URL and headers may carry credentials: ``url``, ``describe()`` and every error
  message show them as the transport's ``Redactor`` does (``mcpx.config``).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import httpx
from anyio.abc import TaskGroup

from mcpx.config import Redactor, redact_url
from mcpx.wire import MCP_SESSION_ID, RequestId, dumps

from ._base import (
    MAX_FRAME_BYTES,
    HttpSession,
    Inbound,
    RequestFailed,
    ResponseStreamBroken,
    TransportClosed,
    TransportError,
)
from ._frames import request_id_of
from ._http_listen import ListenStream
from ._http_stream import (
    AuthFailed,
    BodyReader,
    ExchangeFailed,
    Started,
    connection_failed,
    content_type,
    error_body_frames,
    read_capped,
    start_request,
    status_error,
    status_error_with,
)
from ._inbox import Inbox

__all__ = ["StreamableHttpTransport", "open_streamable_http"]

_ACCEPT_POST: Final = "application/json, text/event-stream"
_ACCEPT_SSE: Final = "text/event-stream"
_LAST_EVENT_ID: Final = "Last-Event-ID"
_SESSION_ID_FORM: Final = re.compile(r"[\x21-\x7e]+")  # visible ASCII, as the spec requires
_STATUSES_KEPT: Final = 1024
_DELETE_SECONDS: Final = 5.0
_RESPONSE_CLOSE_SECONDS: Final = 5.0
_OTHER_BODY_MAX: Final = 65536  # a body that is neither JSON nor SSE is only quoted


@dataclass
class _Exchange:
    scope: anyio.CancelScope
    reader: BodyReader


class StreamableHttpTransport:
    """A ``Transport`` to one Streamable HTTP MCP endpoint."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        client: httpx.AsyncClient,
        max_frame: int,
        task_group: TaskGroup,
        auth: httpx.Auth | None = None,
    ) -> None:
        self._url = url
        # The upstream's OAuth (mcpx.oauth), on every request; none: the client's default.
        self._auth: httpx.Auth | httpx._client.UseClientDefault = auth or httpx.USE_CLIENT_DEFAULT
        self._redactor = Redactor(url, headers)
        self._requests = 0  # HTTP requests sent: /v1/servers shows it, the bench checks it
        self._headers = dict(headers)
        self._client = client
        self._max_frame = max_frame
        self._tg = task_group
        self._inbox = Inbox()
        self._session_id: str | None = None
        self._session_headers: dict[str, str] = {}
        self._exchanges: dict[RequestId, _Exchange] = {}
        self._statuses: OrderedDict[RequestId, int] = OrderedDict()
        self._listen = ListenStream(url, self._inbox, max_frame, self._open_get, self._redactor)

    @property
    def url(self) -> str:
        """The MCP endpoint as it may be shown: its credentials hidden (``redact_url``)."""
        return self._redactor.url

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` sent on every request; set by the server or the session."""
        return self._session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        self._session_id = value

    @property
    def session_headers(self) -> dict[str, str]:
        """Headers for every request this transport makes, its own GET and DELETE included.

        The session sets them (``MCP-Protocol-Version`` once negotiated); per-frame headers
        given to ``send`` override them.
        """
        return dict(self._session_headers)

    @session_headers.setter
    def session_headers(self, value: Mapping[str, str]) -> None:
        self._session_headers = dict(value)

    @property
    def listening(self) -> bool:
        """The standalone GET stream is open (or reconnecting)."""
        return self._listen.is_open

    def last_status(self, request_id: RequestId) -> int | None:
        """The HTTP status of the response that carried ``request_id`` (recent ones only)."""
        return self._statuses.get(request_id)

    async def send(self, frame: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """POST ``frame``; returns once its body is sent (or the exchange already ended),
        or, for a frame that is not a request (a notification, an answer to the server),
        once the server has answered the POST: a server reads concurrent POSTs in any
        order, and what follows a ``notifications/initialized`` or an answer must not be
        read before it.

        Raises:
            TransportClosed: the transport is closed, or the borrowed client is.
            mcpx.wire.InternalError: ``frame`` holds something JSON cannot carry.
            ValueError: a header value is not ASCII (the session must encode it).
        """
        if self._inbox.reason is not None:
            raise self._inbox.closed_error()
        if self._client.is_closed:
            raise TransportClosed(f"{self._redactor.url}: the HTTP client is closed")
        body = dumps(frame)
        request_headers = self._headers_for(_ACCEPT_POST, headers)
        request_headers["Content-Type"] = "application/json"
        request_id = request_id_of(frame)
        await start_request(
            self._tg, functools.partial(self._exchange, body, request_id, request_headers)
        )

    async def receive(self) -> Inbound:
        """The next frame or failed request from any exchange.

        Raises:
            TransportClosed: the transport is closed.
        """
        return await self._inbox.get()

    def route(self, route: Callable[[Inbound], None]) -> None:
        """Hand each frame to ``route`` as it arrives (see ``Transport.route``)."""
        self._inbox.route_to(route)

    async def abort(self, request_id: RequestId) -> bool:
        """Close the response stream of ``request_id``: True if it was still open.

        Nothing more is delivered for that request, not even a ``RequestFailed``.
        """
        exchange = self._exchanges.get(request_id)
        if exchange is None or exchange.reader.answered:
            return False
        exchange.scope.cancel()
        return True

    async def open_listen_stream(self) -> bool:
        """Open the standalone GET stream (legacy revisions); its frames come via ``receive``.

        A stream already open is replaced. When it drops it is resumed with
        ``Last-Event-ID``, honouring ``retry``, until reconnecting stops bringing events.

        Returns:
            True when the stream is open; False when the server offers none (405).

        Raises:
            TransportClosed: the transport is closed.
            HttpStatusError: the server refused the GET with another status.
            ExchangeFailed: the GET could not connect, or its answer was not SSE.
        """
        if self._inbox.reason is not None:
            raise self._inbox.closed_error()
        return await self._listen.open(self._tg)

    def describe(self) -> dict[str, Any]:
        """``{"transport": "http", "url": …, "sessionId": …}``, the url redacted."""
        return {
            "transport": "http",
            "url": self._redactor.url,
            "sessionId": self._session_id,
            "httpRequests": self._requests,
        }

    def http_session(self) -> HttpSession:
        """This transport itself: it keeps the session id, session headers and GET stream."""
        return self

    # -- exchanges -------------------------------------------------------------------------

    def _headers_for(self, accept: str, extra: Mapping[str, str] | None = None) -> httpx.Headers:
        headers = httpx.Headers({"Accept": accept})
        headers.update(self._headers)
        if self._session_id is not None:
            headers[MCP_SESSION_ID] = self._session_id
        headers.update(self._session_headers)
        headers.update(extra or {})
        return headers

    async def _exchange(
        self, body: bytes, request_id: RequestId | None, headers: httpx.Headers, started: Started
    ) -> None:
        reader = BodyReader(self._inbox, self._max_frame, request_id, self._redactor)
        exchange = _Exchange(anyio.CancelScope(), reader)
        if request_id is not None:
            # Ids are unique among live requests (the session's job), so no clash here.
            self._exchanges[request_id] = exchange
        try:
            with exchange.scope:
                await self._post(body, headers, reader, started)
        finally:
            if request_id is not None and self._exchanges.get(request_id) is exchange:
                del self._exchanges[request_id]

    async def _post(
        self, body: bytes, headers: httpx.Headers, reader: BodyReader, started: Started
    ) -> None:
        self._requests += 1
        # A request's caller goes on once its body is out (its answer may take long); any
        # other frame's once the status is in (``send``).
        traced = {"trace": started.trace} if reader.request_id is not None else None
        request = self._client.build_request(
            "POST", self._url, content=body, headers=headers, extensions=traced
        )
        try:
            response = await self._client.send(request, stream=True, auth=self._auth)
        except httpx.HTTPError as exc:
            started.release()
            await self._fail(reader, connection_failed("POST", self._url, exc, self._redactor))
            return
        except Exception as exc:  # the auth flow's own failure: this request's, not the transport's
            started.release()
            await self._fail(reader, AuthFailed(exc))
            return
        started.release()
        try:
            await self._answer(response, reader, headers.get(MCP_SESSION_ID))
        except TransportError as exc:
            await self._fail(reader, exc)
        except httpx.HTTPError as exc:
            await self._fail(reader, connection_failed("POST", self._url, exc, self._redactor))
        finally:
            # Closing an unfinished body closes its connection: that is how the server
            # learns of an abort. Shielded, so a cancelled exchange still gets there.
            with (
                anyio.move_on_after(_RESPONSE_CLOSE_SECONDS, shield=True),
                contextlib.suppress(httpx.HTTPError),
            ):
                await response.aclose()

    async def _answer(
        self, response: httpx.Response, reader: BodyReader, sent_session: str | None
    ) -> None:
        """Deliver what ``response`` carries; raise why the request got no answer.

        Raises:
            TransportError: the exchange failed (``HttpStatusError``, ``ExchangeFailed``,
                or, when the body ended before the answer, ``ResponseStreamBroken`` or
                ``TransportClosed``: see ``_read_body``).
            httpx.HTTPError: the connection broke (before the body, or while resuming it).
        """
        status = response.status_code
        if reader.request_id is not None:
            self._remember_status(reader.request_id, status)
        session = response.headers.get(MCP_SESSION_ID)
        if sent_session is None and status < 400 and _valid_session_id(session):
            self._session_id = session
        if status == 404 and sent_session is not None:
            if self._session_id == sent_session:
                self._session_id = None  # the session is gone; the session layer re-initializes
            raise await status_error(response, self._redactor)
        if not 200 <= status < 300:  # a redirect the client refused is an error too
            await self._deliver_error(response, reader)
            return
        await self._read_body(response, reader)

    async def _read_body(self, response: httpx.Response, reader: BodyReader) -> None:
        """Deliver a 2xx body; raise why it did not answer the request it carried.

        An answer begun (JSON or SSE) that ends short is a lost request, which the session
        may send again; an empty body of any other kind is the server's own doing.

        Raises:
            ResponseStreamBroken: a JSON or SSE body ended or broke before the answer.
            TransportClosed: another body was empty.
            HttpStatusError: another body was not empty (neither JSON nor SSE).
            ExchangeFailed, httpx.HTTPError: as for ``_answer``.
        """
        status, kind = response.status_code, content_type(response)
        if kind == "text/event-stream":
            await self._read_stream(response, reader)
        elif kind == "application/json" or kind.endswith("+json"):
            try:
                await reader.read_json(response)
            except httpx.HTTPError as exc:
                raise _broken(status, exc, self._redactor) from exc
        elif reader.request_id is not None:
            body = await read_capped(response, _OTHER_BODY_MAX)
            if body.strip():
                raise status_error_with(response, body, self._redactor)
            raise TransportClosed(f"HTTP {status}: stream ended before the response")
        if reader.request_id is not None and not reader.answered:
            raise ResponseStreamBroken(f"HTTP {status}: stream ended before the response")

    async def _read_stream(self, response: httpx.Response, reader: BodyReader) -> None:
        try:
            await reader.read_sse(response)
        except httpx.HTTPError as exc:
            if not reader.last_event_id:
                # Not resumable: lost.
                raise _broken(response.status_code, exc, self._redactor) from exc
        await reader.follow(self._open_get)

    async def _deliver_error(self, response: httpx.Response, reader: BodyReader) -> None:
        try:
            body = await read_capped(response, self._max_frame)
        except ExchangeFailed:
            # Too long to be an error frame.
            raise status_error_with(response, b"", self._redactor) from None
        frames = error_body_frames(body, reader.request_id)
        if frames is None or reader.request_id is None:
            # Nothing to deliver: a notification's failure has no id to report it under.
            raise status_error_with(response, body, self._redactor)
        for frame in frames:
            await self._inbox.put(frame)
        reader.answered = True

    async def _fail(self, reader: BodyReader, error: TransportError) -> None:
        if reader.request_id is None or reader.answered:
            return
        reader.answered = True
        await self._inbox.put(RequestFailed(reader.request_id, error))

    def _remember_status(self, request_id: RequestId, status: int) -> None:
        self._statuses[request_id] = status
        self._statuses.move_to_end(request_id)
        while len(self._statuses) > _STATUSES_KEPT:
            self._statuses.popitem(last=False)

    def _open_get(
        self, last_event_id: str
    ) -> contextlib.AbstractAsyncContextManager[httpx.Response]:
        headers = self._headers_for(_ACCEPT_SSE)
        if last_event_id:
            headers[_LAST_EVENT_ID] = last_event_id
        return self._client.stream("GET", self._url, headers=headers, auth=self._auth)

    async def _end_session(self) -> None:
        if self._session_id is None or self._client.is_closed:
            return
        headers = self._headers_for(_ACCEPT_POST)
        # The server may refuse (405) or be gone: the session ends on our side regardless.
        with contextlib.suppress(httpx.HTTPError):
            await self._client.delete(self._url, headers=headers, auth=self._auth)


def _broken(status: int, exc: httpx.HTTPError, redactor: Redactor) -> ResponseStreamBroken:
    shown = redactor.text(f"{type(exc).__name__}: {exc}")
    return ResponseStreamBroken(f"HTTP {status}: stream broke before the response: {shown}")


def _valid_session_id(value: str | None) -> bool:
    return value is not None and _SESSION_ID_FORM.fullmatch(value) is not None


@contextlib.asynccontextmanager
async def open_streamable_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient,
    max_frame: int = MAX_FRAME_BYTES,
    auth: httpx.Auth | None = None,
) -> AsyncIterator[StreamableHttpTransport]:
    """A transport to the MCP endpoint ``url``, borrowing ``client`` for its requests.

    ``headers`` (authorization and the like) go on every request, and so does ``auth``
    (an ``httpx.Auth``: the upstream's OAuth). Opening sends nothing:
    the first ``send`` is the first request.

    Raises:
        ValueError: ``url`` is not an absolute http(s) URL.
    """
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    transport: StreamableHttpTransport | None = None
    body_error: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            transport = StreamableHttpTransport(url, headers or {}, client, max_frame, tg, auth)
            try:
                yield transport
            except Exception as exc:
                body_error = exc  # re-raised below, unwrapped by the task group
            finally:
                transport._inbox.close(TransportClosed(f"{transport.url}: transport closed"))
                tg.cancel_scope.cancel()
    finally:
        if transport is not None:
            with anyio.move_on_after(_DELETE_SECONDS, shield=True):
                await transport._end_session()
            transport._inbox.discard()
    if body_error is not None:
        raise body_error
