"""The CLI as an OAuth client of a daemon that runs ``daemon.auth=oauth``: signing in
(``mcpx auth login --daemon``), renewing the kept sign-in, signing out.

Such a daemon's TCP port is a protected resource of an external authorization server.
Signing in starts from the daemon's own 401 challenge (its ``resource_metadata``, RFC 9728,
and the scopes it names); then ``mcpx.oauth.OAuthClient`` does what it does for upstream
logins: authorization server metadata (RFC 8414), dynamic client registration (RFC 7591)
for the loopback redirect ``_auth`` listens on, authorization code with PKCE S256 and
``resource`` the daemon's resource URI (RFC 8707), ``state`` and ``iss`` checked, the code
exchanged. The result is kept by ``_daemon_logins``, keyed by the endpoint.

Invariants:

- Tokens are plain Bearer ones: no DPoP (its key would die with this process, and the
  refresh token bound to it).
- A renewal is one refresh grant, under the store's lock: a sign-in another command
  renewed meanwhile is used as it is. A refused grant (revoked, expired) drops the
  sign-in and raises ``OAuthError``; a failing server (``Unavailable``) leaves a token that
  still serves in use and the sign-in kept.
- Nothing here prints or logs a token, code or secret; errors name endpoints and issuers.
- Imported only to sign in, renew or sign out: it loads httpx, authlib and the OAuth client.
  It knows endpoints as their URL text (``_endpoint`` imports it; no cycle back).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import anyio
import httpx
import jwt

from mcpx.config import ServerConfig
from mcpx.oauth import (
    Challenge,
    ClientIdentity,
    Discovery,
    MemoryStore,
    OAuthClient,
    OAuthError,
    PendingLogin,
    Tokens,
    Unavailable,
    discover,
    parse_challenge,
    request_tokens,
    revoke,
)

from ._daemon_logins import DaemonLogins, KeptLogin

__all__ = ["Begun", "NotOAuth", "begin", "finish", "renew", "sign_out"]

# Any guarded route answers an unsigned request with the challenge; this one is small.
_PROBE: Final = "/openapi.json"
_RESOURCE_PATH: Final = "/mcp"  # the daemon's resource URI is its /mcp (one for /v1 too)


class NotOAuth(Exception):
    """The daemon does not ask for an OAuth sign-in; the message says what it wants."""


@dataclass
class Begun:
    """A sign-in sent to a person: the URL to open, and what finishing it needs."""

    text: str  # the endpoint as configured
    client: OAuthClient
    pending: PendingLogin
    discovery: Discovery

    @property
    def url(self) -> str:
        return self.pending.authorization_url


def _resource_url(text: str) -> str:
    return text.rstrip("/") + _RESOURCE_PATH


def _server(text: str, scopes: str | None) -> ServerConfig:
    block: dict[str, object] = {"type": "oauth"}
    if scopes:
        block["scopes"] = scopes.split()
    return ServerConfig(
        name=f"the daemon at {text}", transport="http", url=_resource_url(text), auth=block
    )


@asynccontextmanager
async def _http() -> AsyncIterator[httpx.AsyncClient]:
    # As mcpx.oauth's own: no redirect followed, no idle connection reused.
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(follow_redirects=False, timeout=30.0, limits=limits) as http:
        yield http


def _subject(access_token: str) -> str | None:
    """The token's ``sub``, to show who signed in; read unverified (the daemon verifies)."""
    try:
        claims = jwt.decode(access_token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None  # an opaque token: nobody named
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) and sub else None


async def _challenge(text: str) -> Challenge:
    """The daemon's 401 challenge to a request without a token.

    Raises:
        NotOAuth: it lets the request in, or wants a daemon.tokens token.
        Unavailable: it cannot be reached.
    """
    async with _http() as http:
        try:
            answer = await http.get(text.rstrip("/") + _PROBE)
        except httpx.HTTPError as exc:
            raise Unavailable(f"it cannot be reached ({exc or type(exc).__name__})") from None
    challenge = parse_challenge(answer.headers.get("WWW-Authenticate"))
    if answer.status_code == 401 and challenge.bearer and challenge.resource_metadata:
        return challenge
    if answer.status_code == 401:
        raise NotOAuth(
            f"the daemon at {text} takes one of its daemon.tokens, not an OAuth sign-in: "
            "put the token in $MCPX_DAEMON_TOKEN"
        )
    if answer.status_code == 200:
        raise NotOAuth(f"the daemon at {text} asks for no sign-in (daemon.auth is none)")
    raise Unavailable(f"the daemon at {text} answered HTTP {answer.status_code}, not a challenge")


def begin(text: str, redirect_uri: str) -> Begun:
    """Discovery from the daemon's challenge, the client registered, PKCE made: the URL
    a person opens, coming back to ``redirect_uri``.

    Raises:
        NotOAuth: the daemon takes no OAuth sign-in.
        OAuthError: discovery or registration failed (``Unavailable``: nothing answered).
    """
    return anyio.run(_begin, text, redirect_uri)


async def _begin(text: str, redirect_uri: str) -> Begun:
    challenge = await _challenge(text)
    client = OAuthClient(
        _server(text, challenge.scope),
        store=MemoryStore(),  # kept in the file only once the sign-in is done
        redirect_uri=redirect_uri,
        dpop=False,
    )
    async with _http() as http:
        discovery = await discover(http, client.url, challenge.resource_metadata)
    pending = await client.begin_login(redirect_uri, challenge)
    return Begun(text, client, pending, discovery)


def finish(begun: Begun, redirected: str, logins: DaemonLogins, key: str) -> KeptLogin:
    """The code exchanged (``state`` and ``iss`` checked first), the sign-in kept.

    Raises:
        OAuthError: the redirect is not this sign-in's, or the token endpoint refused.
    """
    tokens = anyio.run(begun.client.finish_login, begun.pending, redirected)
    client = begun.pending.client
    kept = KeptLogin(
        endpoint=begun.text,
        resource=begun.discovery.resource,
        issuer=tokens.issuer or begun.discovery.issuer,
        client_id=client.client_id,
        client_secret=client.client_secret,
        client_auth_method=client.auth_method,
        access_token=tokens.access_token,
        refresh_token=tokens.refresh_token,
        subject=_subject(tokens.access_token),
        scope=tokens.scope,
        expires_at=tokens.expires_at,
        issued_at=tokens.issued_at,
    )
    with logins.locked():
        logins.put(key, kept)
    return kept


def renew(logins: DaemonLogins, key: str, sent: KeptLogin, challenge_url: str | None) -> KeptLogin:
    """The sign-in renewed after ``sent`` was about to expire or was refused
    (``challenge_url``: the refusal's ``resource_metadata``).

    Raises:
        OAuthError: it cannot serve any more (refused, dropped meanwhile): it is dropped.
        Unavailable: the servers failed and the token it has has expired or was refused.
    """
    with logins.locked():
        kept = logins.get(key)
        if kept is None:
            raise OAuthError("another command dropped it meanwhile")
        if kept.access_token != sent.access_token and not kept.expiring():
            return kept  # another command renewed it meanwhile
        try:
            tokens = anyio.run(_refreshed, kept, challenge_url)
        except Unavailable:
            if challenge_url is None and not kept.expired():
                return kept  # an early renewal: the token serves until it expires
            raise
        except OAuthError:
            logins.drop(key)
            raise
        renewed = dataclasses.replace(
            kept,
            access_token=tokens.access_token,
            # RFC 6749 §6: an omitted refresh token is unchanged.
            refresh_token=tokens.refresh_token or kept.refresh_token,
            subject=_subject(tokens.access_token) or kept.subject,
            scope=tokens.scope or kept.scope,
            expires_at=tokens.expires_at,
            issued_at=tokens.issued_at,
        )
        logins.put(key, renewed)
        return renewed


async def _refreshed(kept: KeptLogin, challenge_url: str | None) -> Tokens:
    if not kept.refresh_token:
        raise OAuthError("it has no refresh token")
    async with _http() as http:
        try:
            discovery = await discover(http, _resource_url(kept.endpoint), challenge_url)
        except OAuthError as exc:  # nobody could say where to renew: not a refusal
            raise Unavailable(str(exc)) from None
        if discovery.issuer != kept.issuer:
            raise OAuthError(
                f"the daemon now names the authorization server {discovery.issuer}, "
                f"not {kept.issuer}"
            )
        form = {"grant_type": "refresh_token", "refresh_token": kept.refresh_token}
        return await request_tokens(
            http, discovery, _identity(kept), form, requested_scope=kept.scope
        )


def _identity(kept: KeptLogin) -> ClientIdentity:
    return ClientIdentity(kept.client_id, kept.client_secret, kept.client_auth_method)


def sign_out(logins: DaemonLogins, key: str) -> tuple[KeptLogin | None, bool]:
    """Revoke the sign-in where its authorization server offers revocation (RFC 7009),
    then forget it either way: what was kept (None: nothing) and whether it was revoked."""
    with logins.locked():
        kept = logins.get(key)
        if kept is None:
            return None, False
        revoked = anyio.run(_revoked, kept)
        logins.drop(key)
    return kept, revoked


async def _revoked(kept: KeptLogin) -> bool:
    tokens = Tokens(kept.access_token, refresh_token=kept.refresh_token, issuer=kept.issuer)
    async with _http() as http:
        return await revoke(http, _resource_url(kept.endpoint), tokens, _identity(kept))
