"""The TCP port's front door: the ASGI middleware every request over TCP passes first.

A browser page can send requests to the daemon's port (cross-site request forgery) and,
through a name it controls that resolves to 127.0.0.1, read the answers (DNS
rebinding). So before any route runs, in this order, the first failure answering:

1. ``Host`` names the daemon (``server.host_allowed``: loopback names or the address the
   request arrived on, with its port; ``transport.allowedHosts``), else 421.
2. A present ``Origin`` is loopback, the daemon's own or in ``transport.allowedOrigins``
   (``server.origin_allowed``, the rule ``/mcp`` has always used), else 403.
3. ``Sec-Fetch-Site: cross-site`` is 403: a browser says so of a page elsewhere.
4. ``daemon.auth`` (``Authenticator.check``): 401 with ``WWW-Authenticate`` otherwise
   (403 for a token short of a scope), saying that in a browser ``mcpx ui`` logs in. An
   accepted request carries who made it in ``scope[PRINCIPAL]`` (``token:<name>``,
   ``oauth:<sub>``) for the routes to scope by. A browser cannot send a token: instead a
   web console session cookie (``_console_login``) is accepted on /ui, /ui/logout and
   /v1 from the daemon's own pages only (``_console_session``), and the login page and its
   files pass without one.
   Then a /v1 request that changes state (any method but GET, HEAD, OPTIONS), or the
   sign-out, from a browser (it has an ``Origin``: browsers always send one on such
   requests) carries the web console's form token (``X-Mcpx-Console-Token``), else 403. Clients
   that send no ``Origin`` (the CLI, SDKs) are not asked for it.
5. A POST, and any request with a body (a Content-Length above 0 or a
   Transfer-Encoding), says ``Content-Type: application/json``, else 415: the forms and
   ``text/plain`` posts a browser sends cross-site without asking never reach a handler.
   Every POST, even a bodiless one: ``fetch(url, {method: "POST", mode: "no-cors"})`` is
   sent without asking too. PUT, PATCH and DELETE without a body pass to the router (a
   browser must ask first to send those cross-site, and nothing here answers yes). A
   request no route takes goes on to the router, which answers 404 or 405 and runs no
   handler: the method or path is the first thing wrong with it.

Invariants:

- Only TCP requests are checked. The unix socket (mode 0600) is the user's own: uvicorn
  gives its requests ``scope["server"] == (path, None)``; a request whose server has an
  integer port, or none at all, is TCP (unsure is checked: fail closed).
- ``/health`` passes unchecked: it answers ``{"ok": true}`` and nothing else, so there is
  nothing on it to protect, and a monitor reaching the port by any name still can.
- ``GET /oauth/callback`` passes ``daemon.auth`` and the cross-site check (a browser
  comes back to it from the authorization server, another site, with no token of the
  daemon's): it only completes a login the daemon itself began, bound to a 256-bit
  single-use ``state``, and answers nothing else. Host, Origin and the body rule stay.
- With ``daemon.auth=oauth``, the protected resource metadata (RFC 9728) is answered here,
  unchecked too: a client must read it to learn where to get a token.
- ``scope[PRINCIPAL]`` is set only here, only from an accepted check: a client cannot
  name itself (a value arriving in the scope is removed first).
- A refusal reads no body and reaches no route. ``/mcp`` answers a JSON-RPC error (no
  id), everything else the /v1 error shape; either way ``Connection: close``, since the
  body is left unread.
- The ``Authorization`` header is never logged or echoed; a token is named, at most.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpx import wire
from mcpx.ops import OpError
from mcpx.server import host_allowed, origin_allowed
from mcpx.wire import InvalidRequest

from ._console import CONSOLE_TOKEN_HEADER, console_token_ok
from ._console_login import console_logins, cookie_name
from ._daemon_auth import PRINCIPAL, Authenticator, Denied

__all__ = ["PRINCIPAL", "FrontDoor", "routed"]

log = logging.getLogger("mcpx.daemon")

_OPEN: Final = "/health"
_CALLBACK: Final = "/oauth/callback"  # open for GET: see the module docstring
# RFC 9728 3.1: the well-known path, and the form with the resource's path (/mcp) inserted.
_METADATA: Final = frozenset(
    {"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}
)
_MCP: Final = "/mcp"
# Of the methods a browser sends cross-site without asking (GET, HEAD, POST), the one
# that carries a body.
_SIMPLE_BODY: Final = "POST"
_WANTED: Final = frozenset(
    {
        b"host",
        b"origin",
        b"sec-fetch-site",
        b"authorization",
        b"content-type",
        b"content-length",
        b"transfer-encoding",
        b"cookie",
        CONSOLE_TOKEN_HEADER.lower().encode(),
    }
)
_READS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
# What a browser with no console session yet may fetch: the login page and its files.
_LOGIN: Final = frozenset(
    {
        ("GET", "/ui/login"),
        ("POST", "/ui/login"),
        ("GET", "/ui/static/login.js"),
        ("GET", "/ui/static/console.css"),
    }
)
# Said with every 401: a person in a browser cannot send a token, and mcpx ui logs in.
_BROWSER: Final = "; in a browser, run `mcpx ui` (it opens the web console logged in)"


@dataclass(frozen=True)
class _Refusal:
    status: int
    code: str
    message: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


class FrontDoor:
    """Wraps the daemon's whole app; see the module docstring for what it checks."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        own_origins: list[str],
        allowed_origins: list[str],
        allowed_hosts: list[str],
        auth: Authenticator | None,
        routed: Callable[[Scope], bool],
    ) -> None:
        """``routed`` tells whether a route takes a request (path and method)."""
        self._app = app
        self._routed = routed
        self._own_origins = own_origins
        self._allowed_origins = allowed_origins
        self._allowed_hosts = allowed_hosts
        self._auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        scope.pop(PRINCIPAL, None)
        if kind == "lifespan" or not _over_tcp(scope) or scope["path"] == _OPEN:
            await self._app(scope, receive, send)
            return
        if scope["path"] in _METADATA and kind == "http" and self._auth is not None:
            document = self._auth.metadata(_reached(scope))
            if document is not None and scope.get("method") == "GET":
                await _send_json(send, 200, wire.dumps(document))
                return
        refusal = await self._check(scope)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        client = scope.get("client")
        log.info(
            "refused %s %s from %s: %s",
            scope.get("method", kind),
            scope["path"],
            f"{client[0]}:{client[1]}" if client else "?",
            refusal.code,
        )
        if kind == "websocket":
            # No route takes a WebSocket; a refused one is closed before it is accepted.
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _answer(scope, send, refusal)

    async def _check(self, scope: Scope) -> _Refusal | None:
        headers: dict[bytes, list[bytes]] = {}
        for name, value in scope["headers"]:
            if name in _WANTED:
                headers.setdefault(name, []).append(value)
        if scope["path"] == _CALLBACK and scope.get("method") == "GET":
            return self._host(scope, headers) or self._origin(headers) or _json_body(scope, headers)
        return (
            self._host(scope, headers)
            or self._origin(headers)
            or _cross_site(headers)
            or await self._authorized(scope, headers)
            or _console_form(scope, headers)
            or self._json_body(scope, headers)
        )

    def _host(self, scope: Scope, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
        host = _one(headers, b"host")
        address, port = scope["server"] or ("", 0)
        if host is not None and host_allowed(
            host, own=(address, port), allowed=self._allowed_hosts
        ):
            return None
        shown = "no Host header" if host is None else f"Host {host[:100]!r}"
        # 421 Misdirected Request, not 403: the request names another server than this
        # one (RFC 9110 15.5.20), which is exactly what a rebound name is; nothing about
        # who sent it is judged, and a client that meant this daemon learns what to fix.
        return _Refusal(
            421,
            "misdirected_request",
            f"{shown} does not name this daemon: reach it as 127.0.0.1:{port} or "
            f"localhost:{port}, or add the name to transport.allowedHosts",
        )

    def _origin(self, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
        origins = headers.get(b"origin", [])
        origin = _one(headers, b"origin")
        if len(origins) <= 1 and origin_allowed(
            origin, own=self._own_origins, allowed=self._allowed_origins
        ):
            return None
        return _Refusal(
            403,
            "origin_not_allowed",
            f"Origin {(origin or '')[:100]!r} may not call this daemon: only loopback pages, "
            "its own address and transport.allowedOrigins may",
        )

    async def _authorized(self, scope: Scope, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
        if self._auth is None:
            return None
        session = _console_session(scope, headers)
        if session is not None:
            if session:
                scope[PRINCIPAL] = session
            return None
        if (scope.get("method"), scope["path"]) in _LOGIN:
            return None  # no session yet: the login page is how one is made
        given = headers.get(b"authorization", [])
        verdict = await self._auth.check(given[0] if len(given) == 1 else None, _reached(scope))
        if isinstance(verdict, Denied):
            return _Refusal(
                verdict.status,
                verdict.code,
                verdict.message + (_BROWSER if verdict.status == 401 else ""),
                ((b"www-authenticate", verdict.challenge.encode()),),
            )
        log.debug("authenticated as %s", verdict.shown)
        scope[PRINCIPAL] = verdict.identity
        return None

    def _json_body(self, scope: Scope, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
        refusal = _json_body(scope, headers)
        # Asked only of a refusal: the routes are not walked for every /mcp POST.
        return refusal if refusal is not None and self._routed(scope) else None


def _over_tcp(scope: Scope) -> bool:
    # uvicorn: (host, port) for TCP, (socket path, None) for a unix socket.
    server = scope.get("server")
    return not (isinstance(server, (tuple, list)) and len(server) == 2 and server[1] is None)


def _reached(scope: Scope) -> str:
    """The resource URI as this request reached the port: ``http://ADDRESS:PORT/mcp``."""
    address, port = scope.get("server") or ("127.0.0.1", 0)
    host = f"[{address}]" if ":" in str(address) else str(address)
    return f"{scope.get('scheme', 'http')}://{host}:{port}/mcp"


def _one(headers: dict[bytes, list[bytes]], name: bytes) -> str | None:
    """The header's one value; two or more count as none (a request that repeats Host
    or Origin is not one a browser sends, and which one a proxy used is unknown)."""
    values = headers.get(name, [])
    return values[0].decode("latin-1") if len(values) == 1 else None


def _cross_site(headers: dict[bytes, list[bytes]]) -> _Refusal | None:
    if any(v.strip().lower() == b"cross-site" for v in headers.get(b"sec-fetch-site", [])):
        return _Refusal(
            403,
            "cross_site",
            "a browser request from another site (Sec-Fetch-Site: cross-site) is refused",
        )
    return None


def _console_session(scope: Scope, headers: dict[bytes, list[bytes]]) -> str | None:
    """Who a live console session cookie stands for ("" for the daemon's owner), if the
    request may use one: a request for /ui or /v1 that the browser says comes from the
    daemon's own pages (``Sec-Fetch-Site: same-origin``, or ``none`` for an address typed
    or opened by ``mcpx ui``), with no ``Origin`` but its own. A page on another port of
    the same host is same-site, so ``SameSite=Strict`` alone would let its requests carry
    the cookie: these rules do not. Else None."""
    path = scope["path"]
    if not (path in ("/ui", "/ui/logout") or path.startswith(("/ui/static/", "/v1/"))):
        return None
    if _one(headers, b"sec-fetch-site") not in ("same-origin", "none"):
        return None
    origin, host = _one(headers, b"origin"), _one(headers, b"host")
    if origin is not None and origin != f"{scope.get('scheme', 'http')}://{host}":
        return None
    port = (scope.get("server") or ("", None))[1]
    value = _cookie(headers, cookie_name(port))
    if value is None:
        return None
    live, principal = console_logins().session(value)
    return (principal or "") if live else None


def _cookie(headers: dict[bytes, list[bytes]], name: str) -> str | None:
    for line in headers.get(b"cookie", []):
        for part in line.decode("latin-1").split(";"):
            key, eq, value = part.strip().partition("=")
            if eq and key == name:
                return value
    return None


def _console_form(scope: Scope, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
    """A browser's state-changing /v1 request (or sign-out) without the console's form
    token."""
    path = scope["path"]
    if scope.get("method") in _READS or not (path.startswith("/v1/") or path == "/ui/logout"):
        return None
    if b"origin" not in headers:
        return None
    if console_token_ok(_one(headers, CONSOLE_TOKEN_HEADER.lower().encode())):
        return None
    return _Refusal(
        403,
        "console_token_required",
        f"a browser request that changes state needs the web console's {CONSOLE_TOKEN_HEADER} "
        "header: use the console at /ui (clients that send no Origin need no token)",
    )


def routed(routes: Sequence[BaseRoute]) -> Callable[[Scope], bool]:
    """Whether one of ``routes`` takes a request, path and method both."""

    def takes(scope: Scope) -> bool:
        return any(route.matches(scope)[0] == Match.FULL for route in routes)

    return takes


def _json_body(scope: Scope, headers: dict[bytes, list[bytes]]) -> _Refusal | None:
    length = headers.get(b"content-length", [b"0"])
    may_carry = (
        scope.get("method") == _SIMPLE_BODY
        or b"transfer-encoding" in headers
        or any(v.strip() not in (b"", b"0") for v in length)
    )
    if not may_carry:
        return None
    given = _one(headers, b"content-type")
    media = (given or "").partition(";")[0].strip().lower()
    if media == "application/json":
        return None
    got = "none" if given is None else repr(given[:100])
    return _Refusal(
        415,
        "unsupported_media_type",
        f"a request body must be Content-Type: application/json (got {got})",
    )


async def _answer(scope: Scope, send: Send, refusal: _Refusal) -> None:
    if scope["path"] == _MCP:
        body = wire.dumps(wire.error(None, InvalidRequest(refusal.message)))
    elif scope["path"] == "/ui" or scope["path"].startswith("/ui/"):
        # The console's pages are read by a person: the words, not JSON.
        text = f"{refusal.status} {refusal.code}: {refusal.message}\n".encode()
        head = [(b"content-type", b"text/plain; charset=utf-8")]
        head += [(b"content-length", str(len(text)).encode()), (b"connection", b"close")]
        head += list(refusal.headers)
        await send({"type": "http.response.start", "status": refusal.status, "headers": head})
        await send({"type": "http.response.body", "body": text})
        return
    else:
        body = wire.dumps(OpError(refusal.status, refusal.code, refusal.message).body())
    await _send_json(send, refusal.status, body, [(b"connection", b"close"), *refusal.headers])


async def _send_json(
    send: Send, status: int, body: bytes, more: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(more or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
