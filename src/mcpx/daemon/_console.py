"""The web console: one page at ``/ui``, its static files, and ``/`` pointing at it.

The page is plain HTML, CSS and JavaScript shipped in the package (``console/``): no
build step, no CDN. Everything it shows and does goes through ``/v1``, as the CLI's
requests do; the console adds no second way to do anything.

Two guards beside the front door's (Host, Origin, content type):

- A strict Content-Security-Policy on every answer here: scripts and styles only from
  the daemon itself, no inline script, no framing. The console renders upstream text
  with ``textContent`` only; the policy is the second wall if that ever slips.
- A form token: the page carries a random token made once per daemon run
  (``console_token``), and sends it as ``X-Mcpx-Console-Token`` on every request that
  changes state. The front door refuses such a request from a browser (it has an
  ``Origin``) without it (``FrontDoor``), so a page elsewhere that gets past the Origin
  rule (a name in ``transport.allowedOrigins``) still cannot act through the console's
  user.

A daemon whose port needs a token logs a browser in at ``/ui/login`` (``_console_login``:
the ticket ``mcpx ui`` asks for at ``POST /ui/login/ticket``, exchanged for a session
cookie); the front door lets only the login page and its files through without one.
"""

from __future__ import annotations

import hmac
import secrets
from functools import cache
from importlib import resources
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ._console_login import TICKET_LIFE, console_logins, cookie_name, session_cookie
from ._daemon_auth import PRINCIPAL

__all__ = ["CONSOLE_TOKEN_HEADER", "console_routes", "console_token", "console_token_ok"]

CONSOLE_TOKEN_HEADER: Final = "X-Mcpx-Console-Token"
_CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'"
)
_HEADERS: Final = {
    "Content-Security-Policy": _CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
# The static files by name, with their types: nothing else under /ui/static is served.
_STATIC: Final = {
    "console.js": "text/javascript; charset=utf-8",
    "forms.js": "text/javascript; charset=utf-8",
    "render.js": "text/javascript; charset=utf-8",
    "pages.js": "text/javascript; charset=utf-8",
    "live.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "browse.js": "text/javascript; charset=utf-8",
    "stream.js": "text/javascript; charset=utf-8",
    "login.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
_TOKEN_SLOT: Final = "{{console_token}}"
_SIGNED_IN_SLOT: Final = "{{signed_in}}"


@cache
def console_token() -> str:
    """This daemon run's form token (made on first use, kept for the process's life)."""
    return secrets.token_urlsafe(32)


def console_token_ok(given: str | None) -> bool:
    """Whether ``given`` is this run's token (compared in constant time)."""
    return given is not None and hmac.compare_digest(given.encode(), console_token().encode())


@cache
def _asset(name: str) -> str:
    return resources.files("mcpx.daemon").joinpath("console", name).read_text(encoding="utf-8")


async def _page(request: Request) -> Response:
    # The token is URL-safe base64: nothing in it needs escaping in an attribute.
    html = _asset("index.html").replace(_TOKEN_SLOT, console_token())
    # Signed in with a session (a daemon whose port needs a token): it may sign out.
    value = _session(request)
    signed_in = value is not None and console_logins().session(value)[0]
    html = html.replace(_SIGNED_IN_SLOT, "yes" if signed_in else "")
    return HTMLResponse(html, headers=_HEADERS)


def _session(request: Request) -> str | None:
    """The console session cookie this request carries, if any."""
    port = (request.scope.get("server") or ("", None))[1]
    return request.cookies.get(cookie_name(port))


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    kind = _STATIC.get(name)
    if kind is None:
        return Response(f"no console file {name[:100]!r}\n", 404, media_type="text/plain")
    return Response(_asset(name), media_type=kind, headers=_HEADERS)


def _refused(status: int, code: str, message: str) -> Response:
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status, headers=_HEADERS)


async def _login_page(request: Request) -> Response:
    return HTMLResponse(_asset("login.html"), headers=_HEADERS)


async def _ticket(request: Request) -> Response:
    """A one-time login ticket for ``mcpx ui`` (over the unix socket or with a token)."""
    if "origin" in request.headers:
        # A page may not mint one: a browser logs in with the ticket mcpx ui hands it.
        return _refused(403, "not_from_a_page", "login tickets are for `mcpx ui`, not pages")
    ticket = console_logins().ticket(request.scope.get(PRINCIPAL))
    return JSONResponse({"ticket": ticket, "expiresIn": TICKET_LIFE}, headers=_HEADERS)


async def _login(request: Request) -> Response:
    """A ticket (JSON body, from the login page) exchanged for a session cookie."""
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if request.headers.get("origin") != own:
        return _refused(403, "origin_not_allowed", "log in from the console's own login page")
    try:
        given = (await request.json()).get("ticket")
    except (ValueError, AttributeError):
        given = None
    session = console_logins().redeem(given) if isinstance(given, str) else None
    if session is None:
        return _refused(
            401,
            "login_expired",
            "this login link was used already or has expired: run `mcpx ui` again",
        )
    port = (request.scope.get("server") or ("", None))[1]
    cookie = session_cookie(port, session, request.url.scheme == "https")
    return JSONResponse({"ok": True}, headers={**_HEADERS, "Set-Cookie": cookie})


async def _logout(request: Request) -> Response:
    """Signs the browser out: its session ends here, and the browser drops its cookie.
    Only from the console's own page, with its form token (the front door checks)."""
    value = _session(request)
    ended = value is not None and console_logins().end(value)
    port = (request.scope.get("server") or ("", None))[1]
    gone = session_cookie(port, "", request.url.scheme == "https", life=0)
    return JSONResponse({"signedOut": ended}, headers={**_HEADERS, "Set-Cookie": gone})


_ROOT: Final = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>mcpx</title></head>'
    '<body><p>This is an mcpx daemon. <a href="/ui">Open its web console</a>.</p></body></html>'
)


async def _root(request: Request) -> Response:
    return HTMLResponse(_ROOT, headers=_HEADERS)


def console_routes() -> list[Route]:
    """``GET /ui`` (the page), ``GET /ui/static/{name}`` (its files), ``GET /`` (a link),
    the login: ``GET``/``POST /ui/login``, ``POST /ui/login/ticket``, and ``POST
    /ui/logout``."""
    return [
        Route("/ui", _page, methods=["GET"], name="console"),
        Route("/ui/login", _login_page, methods=["GET"], name="console.login.page"),
        Route("/ui/login", _login, methods=["POST"], name="console.login"),
        Route("/ui/login/ticket", _ticket, methods=["POST"], name="console.login.ticket"),
        Route("/ui/logout", _logout, methods=["POST"], name="console.logout"),
        Route("/ui/static/{name}", _static, methods=["GET"], name="console.static"),
        Route("/", _root, methods=["GET"], name="root"),
    ]
