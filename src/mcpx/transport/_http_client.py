"""The one ``httpx.AsyncClient`` configuration every HTTP transport is given.

The caller owns the client (the upstream pool keeps one per origin, so a call never
opens a new upstream session) and closes it; transports only borrow it.

Invariants:

- No read timeout: SSE streams stay open for as long as a call runs, and the session,
  not the socket, bounds how long a call may take. Connect, write and pool waits are
  bounded, so a dead upstream fails instead of hanging a send.
- HTTP/1.1 only: every request is its own connection-or-reused-connection, which makes
  closing one response stream (the 2026-07-28 cancellation) close exactly that request.
- Redirects are followed within the origin only (servers often answer ``/mcp`` with a
  redirect to ``/mcp/``). One to another origin (scheme, host, port) is refused with
  ``RedirectRefused``: the request would carry configured credentials there.
- httpx logs each request's URL (INFO, ``HTTP Request: POST <url> …``), which may carry
  credentials: a filter on its logger shows every URL there redacted (``redact_url``),
  once a client was made here.
- A request that fails on a kept-alive connection before any answer came (the server
  closed the idle connection as the request went out: its keep-alive timeout, Node's and
  uvicorn's 5 s) is sent again on another connection, as browsers do: a server that
  closed the connection never read the request. On a connection made for it, a failure
  is final (the server may have acted on it), and so is a body that cannot be sent twice.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from typing import Final

import httpx

from mcpx.config import redact_url

__all__ = ["RedirectRefused", "http_client", "origin_of"]

_MAX_REDIRECTS: Final = 5
# A request is sent again at most this many times, each after a kept-alive connection
# failed it (several idle connections may have been closed together).
_STALE_RESENDS: Final = 3
# What a connection closed under a request raises before its answer's headers came.
_CLOSED_UNDER: Final = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
# Where a request started, kept in its extensions: httpx hands the same extensions dict
# to every request of a redirect chain, so each hop can be compared with the first.
_FIRST_ORIGIN: Final = "mcpx.first_origin"


class RedirectRefused(httpx.RequestError):
    """A redirect pointed to another origin and was not followed."""


async def _same_origin_only(request: httpx.Request) -> None:
    """httpx request hook, run for the first request and every redirect hop.

    Raises:
        RedirectRefused: this hop leaves the origin of the first request.
    """
    origin = origin_of(request.url)
    first = request.extensions.setdefault(_FIRST_ORIGIN, origin)
    if first != origin:
        raise RedirectRefused(
            f"refused a redirect from {_shown(first)} to another origin ({_shown(origin)})",
            request=request,
        )


class _RedactedUrls(logging.Filter):
    """Rewrites the URLs in httpx's log records as they may be shown; drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_url(str(arg)) if isinstance(arg, httpx.URL) else arg for arg in record.args
            )
        return True


_HTTPX_LOG: Final = logging.getLogger("httpx")
_LOG: Final = logging.getLogger("mcpx.transport")
_REDACTED_URLS: Final = _RedactedUrls()


class _Opened:
    """httpcore's ``trace`` extension for one attempt: whether it opened a connection
    (else it went out on a kept-alive one)."""

    __slots__ = ("opened",)

    def __init__(self) -> None:
        self.opened = False

    async def __call__(self, event: str, info: dict[str, object]) -> None:
        if event.startswith(("connection.connect_tcp.", "connection.connect_unix_socket.")):
            self.opened = True


class _ResendOnStale(httpx.AsyncBaseTransport):
    """The pool's transport, sending a request again when a kept-alive connection
    failed it before any answer (see the module's invariants)."""

    def __init__(self, inner: httpx.AsyncHTTPTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if isinstance(request.stream, httpx.ByteStream) and "trace" not in request.extensions:
            for _ in range(_STALE_RESENDS):
                attempt = _Opened()
                request.extensions["trace"] = attempt
                try:
                    return await self._inner.handle_async_request(request)
                except _CLOSED_UNDER:
                    if attempt.opened:
                        raise  # a connection of its own: the server may have read it
                    shown = redact_url(str(request.url))
                    _LOG.info(
                        "%s %s: sent again (its kept-alive connection closed under it)",
                        request.method,
                        shown,
                    )
                finally:
                    del request.extensions["trace"]
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def origin_of(url: httpx.URL) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` with the scheme's default port filled in."""
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host.lower(), url.port or default)


def _shown(origin: tuple[str, str, int | None]) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}:{port}"


def http_client(
    *,
    connect_timeout: float = 10.0,
    write_timeout: float = 30.0,
    pool_timeout: float = 30.0,
    max_connections: int = 100,
    max_keepalive: int = 20,
    keepalive_expiry: float = 30.0,
    headers: Mapping[str, str] | None = None,
    verify: bool | ssl.SSLContext = True,
) -> httpx.AsyncClient:
    """A client for one upstream origin, with bounded connects and unbounded reads.

    ``max_connections`` bounds the concurrent exchanges (each streamed response holds a
    connection for its whole life); past it a request waits up to ``pool_timeout``.
    ``verify`` is passed to httpx: True, False, or an ``ssl.SSLContext``.

    Raises:
        ValueError: a timeout or limit is not positive.
    """
    for name, value in (
        ("connect_timeout", connect_timeout),
        ("write_timeout", write_timeout),
        ("pool_timeout", pool_timeout),
        ("max_connections", max_connections),
        ("keepalive_expiry", keepalive_expiry),
    ):
        if value <= 0:
            raise ValueError(f"{name} must be positive (got {value})")
    if _REDACTED_URLS not in _HTTPX_LOG.filters:
        _HTTPX_LOG.addFilter(_REDACTED_URLS)
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max(0, min(max_keepalive, max_connections)),
        keepalive_expiry=keepalive_expiry,
    )
    pool = httpx.AsyncHTTPTransport(verify=verify, http1=True, http2=False, limits=limits)
    return httpx.AsyncClient(
        timeout=httpx.Timeout(
            connect=connect_timeout, read=None, write=write_timeout, pool=pool_timeout
        ),
        transport=_ResendOnStale(pool),
        follow_redirects=True,
        max_redirects=_MAX_REDIRECTS,
        event_hooks={"request": [_same_origin_only]},
        headers=dict(headers or {}),
    )
