"""Pieces of the small OAuth servers some tests build in Starlette, where the fixture
authorization server (``oauth_server``) cannot play the part (a grant or a proof it does
not implement): the metadata both sides publish, a resource that takes only the tokens
it was told of, and the apps served on loopback sockets."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from .asgi import loopback_socket, running_app


def metadata(request: Request, as_url: str, rs_url: str, **server: Any) -> JSONResponse:
    """The resource's protected resource metadata (RFC 9728; the resource is
    ``<rs_url>/mcp``), or the authorization server's (RFC 8414): its issuer and token
    endpoint, and ``server``'s fields."""
    if "oauth-protected-resource" in request.url.path:
        return JSONResponse({"resource": f"{rs_url}/mcp", "authorization_servers": [as_url]})
    return JSONResponse({"issuer": as_url, "token_endpoint": f"{as_url}/token"} | server)


def protected(request: Request, rs_url: str, valid: set[str]) -> JSONResponse:
    """The resource's answer: 200 to a Bearer token in ``valid``, else 401 with the
    challenge naming its metadata."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if token not in valid:
        where = f"{rs_url}/.well-known/oauth-protected-resource/mcp"
        header = f'Bearer resource_metadata="{where}"'
        return JSONResponse({"error": "invalid_token"}, 401, {"WWW-Authenticate": header})
    return JSONResponse({"ok": True})


@contextmanager
def serving(*apps: Starlette) -> Iterator[list[str]]:
    """Each app served on a loopback port of its own, accepting at once; yields their
    base URLs, in order (handlers read them at request time)."""
    socks = [loopback_socket() for _ in apps]
    with ExitStack() as stack:
        for app, sock in zip(apps, socks, strict=True):
            stack.enter_context(running_app(app, sock))
        yield [f"http://127.0.0.1:{sock.getsockname()[1]}" for sock in socks]
