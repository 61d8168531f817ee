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
_REDACTED_URLS: Final = _RedactedUrls()


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
    return httpx.AsyncClient(
        timeout=httpx.Timeout(
            connect=connect_timeout, read=None, write=write_timeout, pool=pool_timeout
        ),
        limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max(0, min(max_keepalive, max_connections)),
            keepalive_expiry=keepalive_expiry,
        ),
        http1=True,
        http2=False,
        follow_redirects=True,
        max_redirects=_MAX_REDIRECTS,
        event_hooks={"request": [_same_origin_only]},
        headers=dict(headers or {}),
        verify=verify,
    )
