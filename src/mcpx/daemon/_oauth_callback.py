"""``GET /oauth/callback``: where a browser comes back from a login the daemon began (a
host's URL elicitation, or any pending login): the login is completed and the person
sees a small plain page. Everything shown is escaped; no code or token is shown."""

from __future__ import annotations

import html
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse

from mcpx.oauth import OAuthError
from mcpx.ops import OpContext, logged_in

__all__ = ["oauth_callback"]

log = logging.getLogger("mcpx.daemon")

_PAGE = (
    "<!doctype html><html><head><meta charset=utf-8><title>mcpx</title></head>"
    "<body><p>{}</p></body></html>"
)


def page(text: str, status: int = 200) -> HTMLResponse:
    headers = {"Cache-Control": "no-store", "Content-Security-Policy": "default-src 'none'"}
    return HTMLResponse(_PAGE.format(html.escape(text)), status_code=status, headers=headers)


def oauth_callback(ctx: Callable[[], OpContext]) -> Callable[[Request], Awaitable[HTMLResponse]]:
    async def endpoint(request: Request) -> HTMLResponse:
        wiring = ctx().pool.oauth
        if wiring is None:
            return page("This mcpx keeps no OAuth logins.", 404)
        try:
            server, _ = await wiring.logins.complete(str(request.url))
        except OAuthError as exc:
            log.info("an OAuth callback was refused: %s", exc)
            return page(f"The login could not be completed: {exc}", 400)
        logged_in(ctx(), server)
        return page(f"Logged in to {server}, you can close this tab.")

    return endpoint
