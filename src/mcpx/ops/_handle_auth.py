"""OAuth upstreams' logins, through the daemon (the CLI is only their face).

``auth_status`` (per server: logged in, expiry, scopes, issuer, whether a login is needed
and why), ``auth_login`` (begin: the authorization URL for a redirect URI the caller
listens on), ``auth_callback`` (the redirected URL: state and iss checked, the code
exchanged), ``auth_logout`` (revoked where offered, dropped). Tokens are the caller's own
for a ``scope: identity`` server (the pool's scope key), shared otherwise.

Invariant: no answer or error here holds a token, refresh token, client secret or code.
These are not MCP tools of mcpx's own surface: a login needs a person and a browser,
and a host that can show one is asked with URL elicitation when a call needs it.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcpx.config import ServerConfig, StateDiskFull
from mcpx.oauth import NotPending, OAuthClient, OAuthError, store_key
from mcpx.pool import OAuthWiring
from mcpx.questions import QuestionClosed

from ._errors import OpError, unknown_server

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = [
    "auth_callback",
    "auth_login",
    "auth_logout",
    "auth_state",
    "auth_status",
    "logged_in",
]


def _wiring(ctx: OpContext) -> OAuthWiring:
    wiring = ctx.pool.oauth
    if wiring is None:
        raise OpError(503, "no_token_store", "this daemon keeps no OAuth tokens")
    return wiring


def _server(ctx: OpContext, name: str) -> ServerConfig:
    if not ctx.visible(name):
        raise unknown_server(name, ctx.server_names())
    server = ctx.pool.servers[name]
    if server.url is None:
        raise OpError(
            409,  # the request is well formed; the server's configuration says no
            "not_oauth",
            f"{name} is a stdio server: OAuth is for HTTP servers (give it a url)",
            {"server": name},
        )
    return server


def _oauth_servers(ctx: OpContext, wiring: OAuthWiring) -> list[ServerConfig]:
    """Servers with an oauth block, and HTTP servers a flow has touched (a 401 seen)."""
    touched = {s for s, _ in wiring.needs}
    out = []
    for name in ctx.server_names():
        server = ctx.pool.servers[name]
        if server.url is None:
            continue
        kind = (server.auth or {}).get("type")
        user = ctx.pool.scope_key(server, ctx.identity)
        held = kind is None and wiring.store.tokens(store_key(server), user) is not None
        if kind == "oauth" or name in touched or held:
            out.append(server)
    return out


def _status(wiring: OAuthWiring, server: ServerConfig, user: str) -> dict[str, Any]:
    tokens = wiring.store.tokens(store_key(server), user)
    why = wiring.needs.get((server.name, user))
    if tokens is None and why is None:
        why = "nobody has logged in"
    needs = tokens is None or why is not None
    return {
        "server": server.name,
        "loggedIn": tokens is not None,
        "expiresAt": tokens.expires_at if tokens else None,
        "scopes": tokens.scope.split() if tokens and tokens.scope else [],
        "issuer": tokens.issuer if tokens else None,
        "refreshable": bool(tokens and tokens.refresh_token),
        "needsLogin": needs,
        "why": why if needs else None,
        "command": f"mcpx auth login {server.name}" if needs else None,
    }


def auth_state(ctx: OpContext, server: ServerConfig) -> dict[str, Any] | None:
    """For ``/v1/servers``: an oauth server's sign-in state for the caller (no secret),
    else None."""
    wiring = ctx.pool.oauth
    if wiring is None or server.url is None or (server.auth or {}).get("type") != "oauth":
        return None
    user = ctx.pool.scope_key(server, ctx.identity)
    row = _status(wiring, server, user)
    qid = wiring.questions.get((server.name, user))
    return {
        "type": "oauth",
        "state": "login needed" if row["needsLogin"] else "logged in",
        "why": row["why"],
        "command": row["command"],
        "expiresAt": row["expiresAt"],
        "question": qid if row["needsLogin"] else None,
    }


async def auth_status(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    wiring = _wiring(ctx)
    rows = [
        _status(wiring, s, ctx.pool.scope_key(s, ctx.identity)) for s in _oauth_servers(ctx, wiring)
    ]
    return {"servers": rows}


def _redirect_uri(value: object) -> str:
    text = str(value)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise OpError(
            400,
            "invalid_input",
            f"redirectUri {text!r} is not an http(s) URL without a fragment "
            "(e.g. http://127.0.0.1:PORT/callback)",
            {"field": "redirectUri"},
        )
    return text


async def auth_login(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    wiring = _wiring(ctx)
    server = _server(ctx, str(args["server"]))
    redirect = _redirect_uri(args["redirectUri"])
    user = ctx.pool.scope_key(server, ctx.identity)
    try:
        pending = await wiring.logins.begin(server, user, redirect)
    except OAuthError as exc:
        raise OpError(502, "login_failed", str(exc), {"server": server.name}) from None
    return {"server": server.name, "authorizationUrl": pending.authorization_url}


async def auth_callback(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    wiring = _wiring(ctx)
    try:
        name, tokens = await wiring.logins.complete(str(args["url"]))
    except NotPending as exc:
        raise OpError(404, "login_not_pending", str(exc)) from None
    except OAuthError as exc:
        raise OpError(502, "login_failed", str(exc)) from None
    logged_in(ctx, name)
    return {
        "server": name,
        "loggedIn": True,
        "expiresAt": tokens.expires_at if tokens else None,
        "scopes": tokens.scope.split() if tokens and tokens.scope else [],
    }


def logged_in(ctx: OpContext, name: str) -> None:
    """After a login: the server's flows may start again at once, and the broker's
    question holding a login for it is answered for each user who now has tokens."""
    wiring = ctx.pool.oauth
    if wiring is not None:
        for key in [k for k in wiring.needs if k[0] == name]:
            del wiring.needs[key]
        server = ctx.pool.servers.get(name)
        for key, qid in list(wiring.questions.items()):
            if key[0] != name or server is None:
                continue
            if wiring.store.tokens(store_key(server), key[1]) is None:
                continue
            del wiring.questions[key]
            if ctx.broker is not None:
                with suppress(QuestionClosed, StateDiskFull):  # closed meanwhile, or expires
                    ctx.broker.answer(qid, {})
    ctx.pool.restarts.forget(name)


async def auth_logout(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    wiring = _wiring(ctx)
    server = _server(ctx, str(args["server"]))
    user = ctx.pool.scope_key(server, ctx.identity)
    try:
        client = OAuthClient(server, store=wiring.store, user=user)
        had = await client.logout()
    except OAuthError as exc:
        raise OpError(502, "logout_failed", str(exc), {"server": server.name}) from None
    return {"server": server.name, "loggedOut": had}
