"""One server's OAuth client: tokens for one user, got, refreshed and dropped.

Theory of operation: the transports' ``httpx.Auth`` (``_httpauth``) asks ``bearer`` for a
token before each request, and ``answer_challenge`` when the server says 401 (no usable
token: discover, refresh or log in again) or 403 ``insufficient_scope`` (log in again for
more scopes, a bounded number of times). A login needs a person, reached through the
``Authorizer``; without one it ends in ``LoginNeeded``. Servers configured with
``"grant": "client_credentials"``, ``"jwt_bearer"`` or ``"enterprise"`` need nobody
(``_grants``, ``_enterprise``). DPoP (``_dpop``) where the server offers it. One lock:
a single flow at a time.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Final, Protocol
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx

from mcpx.config import ServerConfig

from ._challenge import Challenge
from ._discovery import Discovery, discover
from ._dpop import DPoPProver
from ._enterprise import identity_provider
from ._errors import LoginNeeded, OAuthError, Unavailable
from ._grants import MACHINE_GRANTS, Assertion, machine_tokens
from ._httpauth import OAuthAuth, Resent
from ._identity import ClientSettings, block_secret, configured_identity, register_client
from ._model import ClientIdentity, PendingLogin, Tokens
from ._revoke import revoke
from ._scopes import select_scope, union_scopes
from ._store import TokenStore, store_key
from ._tokens import pkce_pair, request_tokens

__all__ = ["Authorizer", "OAuthClient"]

log = logging.getLogger("mcpx.oauth")

_REFRESH_EARLY: Final = 60.0  # seconds before expiry a token is refreshed
_STEP_UPS_PER_SCOPE: Final = 1  # re-authorizations for the same scope set (no loops)
# A refresh the token endpoint fails (5xx, 429, no answer) is tried this many times,
# waiting _REFRESH_PAUSE, doubled each time, between tries; then a login is needed.
_REFRESH_TRIES: Final = 3
_REFRESH_PAUSE: Final = 0.5


class Authorizer(Protocol):
    """How a person (or a headless test) answers an authorization URL."""

    async def authorize(self, authorization_url: str, redirect_uri: str) -> str:
        """The full URL the browser was redirected to (code, state, iss ...).

        Raises:
            LoginNeeded: nobody can answer now.
        """
        ...


class OAuthClient:
    """The OAuth client of one configured server, for one user."""

    def __init__(
        self,
        server: ServerConfig,
        *,
        store: TokenStore,
        user: str = "",
        authorizer: Authorizer | None = None,
        redirect_uri: str = "http://127.0.0.1:33418/callback",
        env: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
        dpop: bool = True,  # False: plain Bearer tokens (a process too short-lived for a key)
    ) -> None:
        if server.url is None:
            raise OAuthError(f"{server.name}: OAuth needs an HTTP server (it has no url)")
        block = dict(server.auth or {})
        env = os.environ if env is None else env
        self.server = server
        self.name = server.name
        self.url = server.url
        self.configured = block.get("type") == "oauth"
        self.grant = str(block.get("grant") or "authorization_code")
        scopes = block.get("scopes")
        self.scopes = " ".join(scopes) if isinstance(scopes, list) and scopes else None
        self.settings = ClientSettings(
            client_id=str(block["clientId"]) if block.get("clientId") else None,
            client_secret=block_secret(block, "clientSecret", env),
            metadata_url=str(block["clientMetadataUrl"])
            if block.get("clientMetadataUrl")
            else None,
            private_key=block_secret(block, "privateKey", env),
        )
        self.assertion = Assertion.from_block(block, env)
        idp = block.get("idp")
        self.idp = (
            identity_provider(idp, env, block_secret(idp, "clientSecret", env))
            if isinstance(idp, Mapping)
            else None
        )
        self.dpop = DPoPProver(used=dpop)
        self.store = store
        self.user = user
        self.key = store_key(server)
        self.authorizer = authorizer
        self.redirect_uri = redirect_uri
        self._http = http
        self._lock = anyio.Lock()
        self._discovery: Discovery | None = None
        self._requested: str | None = None  # the scope last asked for
        self._step_ups: dict[str, int] = {}
        # Why the last refresh gave up after its tries (said in the LoginNeeded), and
        # the refresh token it gave up on (never tried again: no loops).
        self._refresh_failed: str | None = None
        self._gave_up_on: str | None = None

    def auth(self, resent: Resent | None = None) -> httpx.Auth:
        """For the transports: the bearer on requests to the server's own origin, and
        the flow on its 401 and 403 insufficient_scope answers (each request sent again
        told to ``resent``)."""
        return OAuthAuth(self, resent)

    # -- what the httpx.Auth asks --------------------------------------------------------

    async def bearer(self) -> str | None:
        """The access token to send, refreshed first when it is about to expire."""
        tokens = self.store.tokens(self.key, self.user)
        if tokens is None or not tokens.expires_within(_REFRESH_EARLY):
            return tokens.access_token if tokens else None
        async with self._lock:
            tokens = self.store.tokens(self.key, self.user)
            if tokens is not None and tokens.expires_within(_REFRESH_EARLY):
                try:
                    async with self._client() as http:
                        tokens = await self._refresh(http, tokens) or tokens
                except OAuthError as exc:
                    log.info("%s: early refresh failed (%s); the server will say", self.name, exc)
        return tokens.access_token if tokens else None

    async def sign_in_first(self) -> None:
        """A configured oauth server with no tokens at all, and someone who may be able
        to sign in: do it now, before the session opens, so that a person's time is not
        counted against the upstream's start (the era probe) but only the caller's.

        Raises:
            LoginNeeded, OAuthError: as ``answer_challenge``.
        """
        if not self.configured or self.grant != "authorization_code" or self.authorizer is None:
            return
        async with self._lock:
            if self.store.tokens(self.key, self.user) is not None:
                return
            async with self._client() as http:
                try:
                    self._discovery = await discover(http, self.url)
                except OAuthError as exc:  # the server's challenge may say more: wait for it
                    log.info("%s: no sign-in before the start (%s)", self.name, exc)
                    return
                await self._obtain(http, select_scope(None, self.scopes, self._discovery))

    def reacts_to(self, challenge: Challenge) -> bool:
        """Whether a 401/403 is this client's business: always for an oauth server, else
        only with a Bearer challenge."""
        return self.configured or challenge.bearer

    def dpop_for(self, token: str) -> DPoPProver | None:
        """The prover for ``token`` when it is a DPoP-bound one (sent with a proof, RFC 9449
        §7.1), holding the key it is bound to; None: a Bearer token."""
        tokens = self.store.tokens(self.key, self.user)
        if tokens is None or tokens.access_token != token or tokens.token_type.lower() != "dpop":
            return None
        return self._proving(tokens)

    def _proving(self, tokens: Tokens) -> DPoPProver:
        """The prover, holding the key ``tokens`` were granted with (when they say)."""
        if tokens.dpop_key is not None:
            self.dpop.adopt(tokens.dpop_key)
        return self.dpop

    async def answer_challenge(self, status: int, challenge: Challenge, sent: str | None) -> bool:
        """Get tokens that may pass ``challenge``; False when there is nothing more to try.

        Raises:
            LoginNeeded: a person must sign in, and no authorizer can reach one.
            OAuthError: the flow failed.
        """
        async with self._lock:
            current = self.store.tokens(self.key, self.user)
            if current is not None and current.access_token != sent:
                return True  # another request already got new tokens meanwhile
            async with self._client() as http:
                if status == 403:
                    return await self._step_up(http, challenge, current)
                self._discovery = await discover(http, self.url, challenge.resource_metadata)
                same_issuer = current is not None and current.issuer == self._discovery.issuer
                if same_issuer and current and await self._refresh(http, current) is not None:
                    return True
                self.store.drop_tokens(self.key, self.user)
                scope = select_scope(challenge.scope, self.scopes, self._discovery)
                await self._obtain(http, scope)
                return True

    async def _step_up(
        self, http: httpx.AsyncClient, challenge: Challenge, current: Tokens | None
    ) -> bool:
        if self._discovery is None:
            self._discovery = await discover(http, self.url, challenge.resource_metadata)
        prior = union_scopes(self._requested, current.scope if current else None)
        scope = union_scopes(prior, challenge.scope)
        tried = self._step_ups.get(scope or "", 0)
        if tried >= _STEP_UPS_PER_SCOPE:
            log.warning("%s: still insufficient scope after re-authorizing; giving up", self.name)
            return False
        self._step_ups[scope or ""] = tried + 1
        await self._obtain(http, scope)
        return True

    async def _obtain(self, http: httpx.AsyncClient, scope: str | None) -> Tokens:
        assert self._discovery is not None
        if self.grant in MACHINE_GRANTS:
            tokens = await machine_tokens(
                http, self._discovery, server=self.name, grant=self.grant, scope=scope,
                settings=self.settings, assertion=self.assertion, idp=self.idp, dpop=self.dpop,
            )  # fmt: skip
            self.store.save_tokens(self.key, self.user, tokens)
            return tokens
        why, self._refresh_failed = self._refresh_failed, None
        if self.authorizer is None:
            raise LoginNeeded(
                self.name, why or "the server needs an OAuth login and nobody can answer here"
            )
        pending = await self._begin(http, self._discovery, scope, self.redirect_uri)
        try:
            redirected = await self.authorizer.authorize(
                pending.authorization_url, pending.redirect_uri
            )
        except LoginNeeded as exc:
            if why is None:
                raise
            raise LoginNeeded(exc.server, why, exc.question) from None
        return await self._finish(http, pending, redirected)

    # -- grants ---------------------------------------------------------------------------

    async def _refresh(self, http: httpx.AsyncClient, tokens: Tokens) -> Tokens | None:
        """New tokens from the refresh token; None when there is none or it was refused."""
        if not tokens.refresh_token:
            return None
        discovery = self._discovery or await discover(http, self.url)
        self._discovery = discovery
        client = await self._identity(http, discovery, register=False)
        if client is None or tokens.issuer not in (None, discovery.issuer):
            return None
        if self._gave_up_on == tokens.refresh_token:
            return None  # it failed its tries already: a login is needed, not more tries
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        pause = _REFRESH_PAUSE
        for tried in range(1, _REFRESH_TRIES + 1):
            try:
                new = await request_tokens(
                    http,
                    discovery,
                    client,
                    form,
                    requested_scope=tokens.scope,
                    private_key=self.settings.private_key,
                    # A refresh token bound to a key is proved with that key (§5).
                    dpop=self._proving(tokens),
                )
                break
            except Unavailable as exc:
                log.info(
                    "%s: refresh failed, try %d of %d (%s)", self.name, tried, _REFRESH_TRIES, exc
                )
                if tried == _REFRESH_TRIES:
                    self._gave_up_on = tokens.refresh_token
                    self._refresh_failed = f"the token refresh failed {tried} times ({exc})"
                    return None
                await anyio.sleep(pause)
                pause *= 2
            except OAuthError as exc:
                log.info("%s: refresh refused (%s)", self.name, exc)
                return None
        # RFC 6749 §6: an omitted refresh token is unchanged.
        if new.refresh_token is None:
            new = dataclasses.replace(new, refresh_token=tokens.refresh_token)
        self.store.save_tokens(self.key, self.user, new)
        return new

    async def _identity(
        self,
        http: httpx.AsyncClient,
        discovery: Discovery,
        *,
        register: bool,
        redirect_uri: str | None = None,
    ) -> ClientIdentity | None:
        redirect_uri = redirect_uri or self.redirect_uri
        stored = self.store.client(self.key, discovery.issuer)
        # A registered client is bound to its redirect URIs: a login through another
        # (the CLI's loopback port, the daemon's callback) registers again.
        if stored is not None and not (
            register and stored.source == "dcr" and redirect_uri not in stored.redirect_uris
        ):
            return stored
        client = configured_identity(self.settings, discovery, redirect_uri)
        if client is None and register:
            client = await register_client(http, discovery, self.settings, redirect_uri)
        if client is not None:
            self.store.save_client(self.key, discovery.issuer, client)
        return client

    async def _begin(
        self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None, redirect_uri: str
    ) -> PendingLogin:
        methods = discovery.metadata.get("code_challenge_methods_supported")
        if discovery.metadata and (not isinstance(methods, list) or "S256" not in methods):
            raise OAuthError(
                f"{discovery.issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported); refusing to authorize there"
            )
        client = await self._identity(http, discovery, register=True, redirect_uri=redirect_uri)
        assert client is not None
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": discovery.resource,
        }
        if scope:
            params["scope"] = scope
            if "offline_access" in scope.split():
                params["prompt"] = "consent"  # OpenID Connect Core §11
        endpoint = discovery.endpoint("authorization_endpoint", "/authorize")
        joiner = "&" if urlsplit(endpoint).query else "?"
        self._requested = scope
        return PendingLogin(
            authorization_url=f"{endpoint}{joiner}{urlencode(params)}",
            state=state,
            redirect_uri=redirect_uri,
            issuer=discovery.issuer,
            scope=scope,
            code_verifier=verifier,
            client=client,
            iss_required=discovery.metadata.get("authorization_response_iss_parameter_supported")
            is True,
        )

    async def _finish(
        self, http: httpx.AsyncClient, pending: PendingLogin, redirected_url: str
    ) -> Tokens:
        query = {k: v[0] for k, v in parse_qs(urlsplit(redirected_url).query).items()}
        if not secrets.compare_digest(query.get("state", ""), pending.state):
            raise OAuthError(f"{self.name}: the authorization response's state does not match")
        iss = query.get("iss")
        if iss is not None and iss != pending.issuer:  # RFC 9207 §2.4: simple comparison
            raise OAuthError(
                f"{self.name}: the authorization response came from issuer {iss!r}, "
                f"not {pending.issuer!r}; refusing it"
            )
        if iss is None and pending.iss_required:
            raise OAuthError(
                f"{self.name}: {pending.issuer} promised an iss parameter (RFC 9207) "
                "and the authorization response has none; refusing it"
            )
        if "error" in query:
            raise OAuthError(f"{self.name}: authorization refused: {query['error']}")
        code = query.get("code")
        if not code:
            raise OAuthError(f"{self.name}: the authorization response carries no code")
        discovery = self._discovery
        if discovery is None or discovery.issuer != pending.issuer:
            discovery = self._discovery = await discover(http, self.url)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": pending.redirect_uri,
            "code_verifier": pending.code_verifier,
        }
        tokens = await request_tokens(
            http, discovery, pending.client, form, requested_scope=pending.scope, dpop=self.dpop
        )
        self.store.save_tokens(self.key, self.user, tokens)
        return tokens

    # -- for people: the CLI's login, status and logout ----------------------------------

    async def begin_login(
        self, redirect_uri: str, challenge: Challenge | None = None
    ) -> PendingLogin:
        """Discovery (from the resource's ``challenge``, when given), the client identity
        and PKCE done: the URL a person opens."""
        challenge = challenge or Challenge()
        async with self._client() as http:
            self._discovery = await discover(http, self.url, challenge.resource_metadata)
            scope = select_scope(challenge.scope, self.scopes, self._discovery)
            return await self._begin(http, self._discovery, scope, redirect_uri)

    async def finish_login(self, pending: PendingLogin, redirected_url: str) -> Tokens:
        """Checks state and iss, exchanges the code, saves the tokens."""
        async with self._client() as http:
            return await self._finish(http, pending, redirected_url)

    async def status(self) -> dict[str, object]:
        tokens = self.store.tokens(self.key, self.user)
        return {
            "loggedIn": tokens is not None,
            "expiresAt": tokens.expires_at if tokens else None,
            "scopes": tokens.scope.split() if tokens and tokens.scope else [],
            "issuer": tokens.issuer if tokens else None,
        }

    async def logout(self) -> bool:
        """Revokes the tokens where the server offers revocation (RFC 7009), drops them;
        False when there were none."""
        tokens = self.store.tokens(self.key, self.user)
        if tokens is None:
            return False
        async with self._client() as http:
            client = self.store.client(self.key, tokens.issuer) if tokens.issuer else None
            await revoke(http, self.url, tokens, client)
        self.store.drop_tokens(self.key, self.user)
        return True

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http is not None:
            yield self._http
            return
        # Metadata and token requests follow no redirect (a redirect is not the document),
        # and reuse no idle connection: the server may close it just as a token request
        # (which must not be sent twice) goes out on it.
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(follow_redirects=False, timeout=30.0, limits=limits) as http:
            yield http
