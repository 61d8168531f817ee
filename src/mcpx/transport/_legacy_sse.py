"""The deprecated HTTP+SSE transport of 2024-11-05: one GET stream in, a POST per frame out.

``open_legacy_sse`` GETs the SSE URL, waits (bounded) for the ``endpoint`` event, resolves
its URI against the SSE URL and yields a ``LegacySseTransport``. Frames are POSTed to that
endpoint; everything the server says (responses, requests, notifications) comes as
``message`` events on the one GET stream.

Invariants:

- The endpoint must be on the SSE URL's origin (scheme, host and port): an ``endpoint``
  event naming another origin is refused, or a server could make the gateway POST the
  session's frames (and configured credentials) anywhere.
- The GET stream is the whole transport: when it ends, breaks, or carries a frame that is
  too large or not JSON-RPC, the transport ends (there is no second stream to resync on).
- A POST that fails (refused connection, HTTP error) fails only its request, as a
  ``RequestFailed``; a POST's body is otherwise ignored (the answer comes on the stream).
- Every task runs in the transport's task group, owned by the ``open_legacy_sse`` context.
- The SSE URL and headers may carry credentials, and the endpoint a session id: both
  URLs, ``describe()`` and every error message show them as the transport's ``Redactor``
  does (``mcpx.config``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import anyio
import httpx
from anyio.abc import TaskGroup

from mcpx.config import Redactor, redact_url
from mcpx.wire import RequestId, dumps

from ._base import MAX_FRAME_BYTES, Inbound, RequestFailed, TransportClosed, TransportError
from ._frames import BadFrame, parse_frames, request_id_of
from ._http_client import origin_of
from ._http_stream import (
    AuthFailed,
    ExchangeFailed,
    Started,
    connection_failed,
    content_type,
    error_body_frames,
    quoted,
    read_capped,
    start_request,
    status_error,
    status_error_with,
)
from ._inbox import Inbox
from ._sse import EventTooLarge, SseEvent, SseParser

__all__ = ["LegacySseTransport", "open_legacy_sse"]

_POST_SECONDS: Final = 30.0  # a POST is only acknowledged (202); its answer comes elsewhere
_SSE_OVERHEAD: Final = 4096
_ENDPOINT_TIMEOUT: Final = 10.0
_IGNORED_BODY_MAX: Final = 65536


class LegacySseTransport:
    """A ``Transport`` to one 2024-11-05 HTTP+SSE server."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        client: httpx.AsyncClient,
        max_frame: int,
        task_group: TaskGroup,
        auth: httpx.Auth | None = None,
    ) -> None:
        self._url = httpx.URL(url)
        # The upstream's OAuth (mcpx.oauth), on every request; none: the client's default.
        self._auth: httpx.Auth | httpx._client.UseClientDefault = auth or httpx.USE_CLIENT_DEFAULT
        self._redactor = Redactor(url, headers)
        self._shown = self._redactor.url
        self._headers = dict(headers)
        self._client = client
        self._max_frame = max_frame
        self._tg = task_group
        self._inbox = Inbox()
        self._endpoint: httpx.URL | None = None
        self._ready = anyio.Event()  # the endpoint is known, or the stream is over
        self._failure: TransportError | None = None  # why the stream ended, as first seen

    @property
    def endpoint(self) -> str | None:
        """The URL frames are POSTed to, once the server has named it, as it may be shown
        (its query values hidden: they name the session)."""
        return None if self._endpoint is None else redact_url(str(self._endpoint))

    async def send(self, frame: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """POST ``frame`` to the endpoint; returns once the server has answered the POST
        (its status: 202 at once, the answer comes on the stream). A server reads
        concurrent POSTs in any order, so each frame is taken before the next is sent:
        the SDK's servers fail the session on a request read before the
        ``notifications/initialized`` sent ahead of it.

        Raises:
            TransportClosed: the transport is over (its GET stream ended), or the borrowed
                client is closed.
            mcpx.wire.InternalError: ``frame`` holds something JSON cannot carry.
            ValueError: a header value is not ASCII (the session must encode it).
        """
        if self._inbox.reason is not None or self._endpoint is None:
            raise self._inbox.closed_error()
        if self._client.is_closed:
            raise TransportClosed(f"{self._shown}: the HTTP client is closed")
        request_headers = httpx.Headers({"Content-Type": "application/json"})
        request_headers.update(self._headers)
        request_headers.update(headers or {})
        job = functools.partial(
            self._post, self._endpoint, dumps(frame), request_id_of(frame), request_headers
        )
        await start_request(self._tg, job)

    async def receive(self) -> Inbound:
        """The next frame from the GET stream, or a failed POST.

        Raises:
            TransportClosed: the stream ended; the reason says how.
        """
        return await self._inbox.get()

    def route(self, route: Callable[[Inbound], None]) -> None:
        """Hand each frame to ``route`` as it arrives (see ``Transport.route``)."""
        self._inbox.route_to(route)

    async def abort(self, request_id: RequestId) -> bool:
        """No per-request stream exists here: always False (cancel in-band)."""
        return False

    def describe(self) -> dict[str, Any]:
        """``{"transport": "sse", "url": …, "endpoint": …}``, both redacted."""
        return {"transport": "sse", "url": self._shown, "endpoint": self.endpoint}

    def http_session(self) -> None:
        """HTTP+SSE keeps no Streamable HTTP session (its endpoint names it): always None."""
        return None

    async def _post(
        self,
        endpoint: httpx.URL,
        body: bytes,
        request_id: RequestId | None,
        headers: httpx.Headers,
        started: Started,
    ) -> None:
        # No trace hook: ``started`` is released once the status is in, not the body out.
        request = self._client.build_request("POST", endpoint, content=body, headers=headers)
        error: TransportError | None = None
        with anyio.move_on_after(_POST_SECONDS) as timer:
            try:
                error = await self._acknowledged(request, request_id, started)
            except httpx.HTTPError as exc:
                error = connection_failed("POST", endpoint, exc, self._redactor)
            except Exception as exc:  # the auth flow's own failure: this request's only
                error = AuthFailed(exc)
        started.release()
        if timer.cancelled_caught:
            shown = redact_url(str(endpoint))
            error = ExchangeFailed(f"POST {shown} got no answer within {_POST_SECONDS} s")
        if error is not None and request_id is not None:
            await self._inbox.put(RequestFailed(request_id, error))

    async def _acknowledged(
        self, request: httpx.Request, request_id: RequestId | None, started: Started
    ) -> TransportError | None:
        response = await self._client.send(request, stream=True, auth=self._auth)
        started.release()
        try:
            if response.status_code < 400:
                # The body is ignored, but read (a little of it) so the connection can be
                # reused rather than closed.
                with contextlib.suppress(TransportError):
                    await read_capped(response, _IGNORED_BODY_MAX)
                return None
            try:
                body = await read_capped(response, self._max_frame)
            except TransportError:
                # Too long to be an error frame.
                return status_error_with(response, b"", self._redactor)
            frames = error_body_frames(body, request_id)
            if frames is None:
                return status_error_with(response, body, self._redactor)
            for frame in frames:
                await self._inbox.put(frame)
            return None
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(httpx.HTTPError):
                await response.aclose()

    async def _run(self) -> None:
        """Read the GET stream until it ends; the reason it ended closes the transport."""
        reason: TransportError
        try:
            async with self._client.stream(
                "GET", self._url, headers=self._get_headers(), auth=self._auth
            ) as r:
                if r.status_code >= 400:
                    reason = await status_error(r, self._redactor)
                elif content_type(r) != "text/event-stream":
                    reason = TransportClosed(f"GET {self._shown} gave {content_type(r)!r}, not SSE")
                else:
                    reason = await self._read(r)
        except httpx.HTTPError as exc:
            failed = connection_failed("GET", self._url, exc, self._redactor)
            reason = TransportClosed(str(failed))
            reason.__cause__ = exc
        self._end(reason)

    def _end(self, reason: TransportError) -> None:
        self._failure = self._failure or reason
        closed = reason if isinstance(reason, TransportClosed) else TransportClosed(str(reason))
        if closed is not reason:
            closed.__cause__ = reason
        self._inbox.close(closed)
        self._ready.set()

    def _get_headers(self) -> httpx.Headers:
        headers = httpx.Headers({"Accept": "text/event-stream"})
        headers.update(self._headers)
        return headers

    async def _read(self, response: httpx.Response) -> TransportClosed:
        parser = SseParser(self._max_frame + _SSE_OVERHEAD)
        async for chunk in response.aiter_bytes():
            try:
                events = parser.feed(chunk)
            except EventTooLarge as exc:
                return await self._handle(exc.events) or TransportClosed(f"{self._shown}: {exc}")
            reason = await self._handle(events)
            if reason is not None:
                return reason
        return TransportClosed(f"{self._shown}: the SSE stream ended")

    async def _handle(self, events: list[SseEvent]) -> TransportClosed | None:
        for event in events:
            if event.event == "endpoint" and self._endpoint is None:
                reason = self._adopt_endpoint(event.data.strip())
                if reason is not None:
                    return reason
            elif event.event == "message" and event.data.strip():
                if len(event.data) > self._max_frame:
                    return TransportClosed(f"{self._shown}: a frame over {self._max_frame} bytes")
                try:
                    frames = parse_frames(event.data)
                except BadFrame as exc:
                    shown = quoted(event.data, self._redactor)
                    return TransportClosed(f"{self._shown} sent {shown}, not JSON-RPC: {exc}")
                for frame in frames:
                    await self._inbox.put(frame)
        return None

    def _adopt_endpoint(self, data: str) -> TransportClosed | None:
        try:
            endpoint = self._url.join(data)
        except httpx.InvalidURL as exc:
            shown = quoted(data, self._redactor)
            return TransportClosed(f"{self._shown} named an invalid endpoint {shown}: {exc}")
        if origin_of(endpoint) != origin_of(self._url):
            shown = quoted(data, self._redactor)
            return TransportClosed(
                f"{self._shown} named an endpoint on another origin ({shown}): refused"
            )
        self._endpoint = endpoint
        self._ready.set()
        return None


@contextlib.asynccontextmanager
async def open_legacy_sse(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    client: httpx.AsyncClient,
    max_frame: int = MAX_FRAME_BYTES,
    endpoint_timeout: float = _ENDPOINT_TIMEOUT,
    auth: httpx.Auth | None = None,
) -> AsyncIterator[LegacySseTransport]:
    """Connect to the SSE URL and yield a transport once the server named its endpoint.

    ``auth`` (an ``httpx.Auth``: the upstream's OAuth) goes on every request.

    Raises:
        ValueError: ``url`` is not an absolute http(s) URL.
        HttpStatusError: the GET was answered with an HTTP error (a probe can read the
            status: this is how a server that is not HTTP+SSE shows itself).
        TransportClosed: the GET failed to connect, was not answered with SSE, or gave no
            usable ``endpoint`` event within ``endpoint_timeout`` seconds.
    """
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    failure: Exception | None = None
    transport: LegacySseTransport | None = None
    try:
        async with anyio.create_task_group() as tg:
            transport = LegacySseTransport(url, headers or {}, client, max_frame, tg, auth)
            tg.start_soon(transport._run)
            with anyio.move_on_after(endpoint_timeout):
                await transport._ready.wait()
            if transport.endpoint is None:
                failure = transport._failure or TransportClosed(
                    f"{transport._shown}: no endpoint event within {endpoint_timeout} s"
                )
                tg.cancel_scope.cancel()
            else:
                try:
                    yield transport
                except Exception as exc:
                    failure = exc  # re-raised below, unwrapped by the task group
                finally:
                    transport._inbox.close(TransportClosed(f"{transport._shown}: transport closed"))
                    tg.cancel_scope.cancel()
    finally:
        if transport is not None:
            transport._inbox.discard()
    if failure is not None:
        raise failure
