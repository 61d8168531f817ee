"""Open a session to one configured upstream: transport, connection, era.

The one entry point the pool uses. It picks the transport from the server's
config, applies its auth block, negotiates the era (``_probe``) with the
cache's help, reconnects the way the probe says when it must (a stdio server
that exited during the probe, a Streamable HTTP endpoint that refused both
eras), records what it learned, and for a legacy HTTP session opens the GET
stream for what the server pushes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import httpx

from mcpx import spec, wire
from mcpx.config import ServerConfig, Settings
from mcpx.oauth import Authorizer, MemoryStore, OAuthClient, OAuthError, TokenStore
from mcpx.transport import (
    HttpSession,
    TransportError,
    http_client,
    open_legacy_sse,
    open_stdio,
    open_streamable_http,
)

from ._auth import AuthError, AuthParts, apply_auth, login_needed
from ._connection import Unanswered, open_connection
from ._era_cache import EraCache, Remembered
from ._handler import DeclineEverything, QuestionHandler, QuestionOrigin
from ._probe import ExitedDuringProbe, NeedsLegacySse, Preference, negotiate
from ._requests import REQUEST_WATCH
from ._session import Session

__all__ = ["Hooks", "open_session"]

log = logging.getLogger("mcpx.client")


class OnUpstreamNotification(Protocol):
    """An upstream's notification: its server, method and params, and the pool's scope
    key of the instance it came from ("" where there is no pool)."""

    def __call__(
        self, server: str, method: str, params: dict[str, Any], *, scope: str = ""
    ) -> None: ...


def _quiet(*_: Any, **__: Any) -> None:
    return None


@dataclass
class Hooks:
    """Where an upstream's side channels go (the daemon wires these to its log
    and event stream)."""

    on_stderr: Callable[[str, str], None] = _quiet  # (server, line)
    on_event: Callable[[str, dict[str, Any]], None] = _quiet  # (kind, data)
    on_notification: OnUpstreamNotification = _quiet
    # Every frame mcpx sends upstream, with the method a result answers.
    on_sent: Callable[[str, dict[str, Any], str | None], None] = _quiet


@asynccontextmanager
async def open_session(
    server: ServerConfig,
    settings: Settings,
    *,
    handler: QuestionHandler | None = None,
    cache: EraCache | None = None,
    client: httpx.AsyncClient | None = None,
    hooks: Hooks | None = None,
    oauth_store: TokenStore | None = None,
    authorizer: Authorizer | None = None,
    user: str = "",
    sign_in_first: bool = False,
) -> AsyncIterator[Session]:
    """A session to ``server`` whose era and revision are settled.

    An HTTP server with an oauth auth block gets an ``OAuthClient`` (tokens in
    ``oauth_store``, else in memory for this session; logins through ``authorizer``).
    With a store, so does any HTTP server without an auth block: a 401 with a Bearer
    challenge then runs the same flow. ``sign_in_first``: an oauth server with no tokens
    is signed in to before the session opens (the daemon's pool: a person's time is then
    not counted against the start's timeouts).

    Raises:
        LoginNeeded: a person must sign in first (``mcpx auth login <server>``).
        HandshakeFailed, UpstreamError, McpError: the upstream cannot be used.
    """
    opener = _Opener(server, settings, handler or DeclineEverything(), cache, hooks or Hooks())
    opener.oauth = _oauth_for(server, oauth_store, authorizer, user)
    try:
        async with AsyncExitStack() as stack:
            if client is None and server.transport != "stdio":
                client = await stack.enter_async_context(http_client())
            opener.client = client
            if opener.oauth is not None and sign_in_first:
                # A first login waits for a person: before the start's timeouts run.
                await opener.oauth.sign_in_first()
            session = await opener.connect(stack)
            yield session
    except BaseExceptionGroup as group:
        # The transport and connection task groups wrap whatever passes
        # through them; callers get the one error that happened.
        sole = _sole(group)
        raise (login_needed(sole) or sole) from None
    except Exception as exc:
        needed = login_needed(exc)
        if needed is None or needed is exc:
            raise
        raise needed from None


def _oauth_for(
    server: ServerConfig, store: TokenStore | None, authorizer: Authorizer | None, user: str
) -> OAuthClient | None:
    kind = (server.auth or {}).get("type")
    if server.transport == "stdio" or not (kind == "oauth" or (kind is None and store)):
        return None
    try:
        # The daemon's authorizer says where its logins come back (its /oauth/callback).
        redirect = getattr(authorizer, "redirect_uri", None)
        client = OAuthClient(server, store=store or MemoryStore(), user=user, authorizer=authorizer)
        if isinstance(redirect, str):
            client.redirect_uri = redirect
        return client
    except OAuthError as exc:
        raise AuthError(f"{server.name}: {exc}") from None


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    real = [e for e in leaves if not isinstance(e, anyio.get_cancelled_exc_class())]
    return real[0] if len(real) == 1 else group


class _Opener:
    def __init__(
        self,
        server: ServerConfig,
        settings: Settings,
        handler: QuestionHandler,
        cache: EraCache | None,
        hooks: Hooks,
    ) -> None:
        self.server = server
        self.settings = settings
        self.handler = handler
        self.hooks = hooks
        self.client: httpx.AsyncClient | None = None
        self.preference = Preference(server.protocol or settings["upstream.protocol"])
        use_cache = settings["upstream.eraCache"] and not self.preference.forced
        self.cache = cache if use_cache else None
        self.auth: AuthParts = apply_auth(server.name, server.auth)
        self.oauth: OAuthClient | None = None
        # Each time the start began again another way: (reason, wall clock).
        self.fallbacks: list[tuple[str, float]] = []

    async def connect(self, stack: AsyncExitStack) -> Session:
        cached = self.cache.get(self.server) if self.cache else None
        session = await self._connect(stack, cached)
        negotiated = session.negotiated
        if negotiated is not None:  # how it was settled, for the trace of who waited
            if self.cache is not None:
                hit = negotiated.source == "cache" or (cached and cached.transport == "sse")
                negotiated.cache = "miss" if cached is None else "hit" if hit else "stale"
            negotiated.fallbacks = tuple(self.fallbacks)
        return session

    async def _connect(self, stack: AsyncExitStack, cached: Remembered | None) -> Session:
        if self.server.transport == "sse" or (cached and cached.transport == "sse"):
            return await self._retrying(stack, "sse", Preference.FORCE_INITIALIZE, None)
        if self.server.transport == "http":
            try:
                return await self._retrying(stack, "http", self.preference, cached)
            except NeedsLegacySse as exc:
                log.info("%s: %s; trying HTTP+SSE", self.server.name, exc)
                self.fallbacks.append(("legacy_sse", time.time()))
                return await self._retrying(
                    stack, "sse", Preference.FORCE_INITIALIZE, None, source="probe"
                )
        try:
            return await self._retrying(stack, "stdio", self.preference, cached)
        except ExitedDuringProbe as exc:
            log.info(
                "%s exited during the probe (%s); restarting it legacy-only", self.server.name, exc
            )
            self.fallbacks.append(("exited_during_probe", time.time()))
            return await self._retrying(
                stack, "stdio", Preference.FORCE_INITIALIZE, None, source="probe"
            )

    def _on_event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "server.era.stale":  # the cached era's request failed: probed again
            self.fallbacks.append(("era_cache_stale", time.time()))
        self.hooks.on_event(kind, data)

    async def _retrying(
        self,
        stack: AsyncExitStack,
        kind: str,
        preference: Preference,
        cached: Any,
        source: str | None = None,
    ) -> Session:
        # Each attempt gets its own stack so a failed one leaves nothing running
        # (and its error is not wrapped by the task groups it passes through).
        attempt = AsyncExitStack()
        try:
            session = await self._attempt(attempt, kind, preference, cached, source)
        except BaseException:
            await attempt.aclose()
            raise
        stack.push_async_exit(attempt)
        return session

    async def _attempt(
        self,
        stack: AsyncExitStack,
        kind: str,
        preference: Preference,
        cached: Any,
        source: str | None = None,
    ) -> Session:
        transport = await stack.enter_async_context(self._transport(kind))
        session: Session | None = None

        async def on_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            assert session is not None
            if session.modern and spec.NEWEST not in session.policy.lenient:
                raise Unanswered  # 2026-07-28: a server sends no requests; never answer one
            revision = session.negotiated.revision if session.negotiated else spec.OLDEST
            return await self.handler.answer(
                method, params, QuestionOrigin(self.server.name, revision)
            )

        def on_notification(method: str, params: dict[str, Any]) -> None:
            if session is not None and session.route_notification(method, params):
                return
            self.hooks.on_notification(self.server.name, method, params)

        conn = await stack.enter_async_context(
            open_connection(
                transport,
                name=self.server.name,
                on_request=on_request,
                on_notification=on_notification,
                on_sent=lambda frame, answering: self.hooks.on_sent(
                    self.server.name, frame, answering
                ),
            )
        )
        session = Session(
            conn,
            name=self.server.name,
            handler=self.handler,
            http=kind == "http",
            ask_rounds=self.settings["proto.askRounds"],
            call_timeout=self.settings["pool.callTimeout"],
            policy=self.settings.policy(),
        )
        negotiated = await negotiate(
            session.handshake,
            preference=preference,
            cached=cached,
            probe_timeout=self.settings["upstream.probeTimeout"],
            start_timeout=self.settings["pool.startTimeout"],
            on_event=self._on_event,
        )
        if source is not None:
            negotiated.source = source
        if self.cache is not None:
            self.cache.put(self.server, negotiated.era.value, negotiated.revision, kind)
        http_session = session.conn.transport.http_session()
        if kind == "http" and not session.modern and http_session is not None:
            await self._listen(http_session)
        return session

    async def _listen(self, http_session: HttpSession) -> None:
        """The legacy GET stream for what the server pushes; optional for a server,
        so a refusal only means nothing will be pushed."""
        try:
            await http_session.open_listen_stream()
        except TransportError as exc:
            log.info("%s offers no GET stream (%s); nothing will be pushed", self.server.name, exc)

    def _transport(self, kind: str) -> Any:
        server = self.server
        if kind == "stdio":
            assert server.command is not None
            return open_stdio(
                server.command,
                list(server.args),
                {**dict(server.env), **self.auth.env},
                server.cwd,
                on_stderr=lambda line: self.hooks.on_stderr(server.name, line),
            )
        assert server.url is not None and self.client is not None
        headers = {**dict(server.headers), **self.auth.headers}
        url = self.auth.url(server.url)
        auth = self.oauth.auth(_resent) if self.oauth else None
        if kind == "http":
            return open_streamable_http(url, headers=headers, client=self.client, auth=auth)
        return open_legacy_sse(url, headers=headers, client=self.client, auth=auth)


def _resent(request: httpx.Request, reason: str) -> None:
    """The OAuth flow sends ``request`` again: a retry of the call it belongs to (the
    POST runs in the call's context, so the call's watch is the one set)."""
    watch = REQUEST_WATCH.get()
    if watch is None:
        return
    try:
        frame = wire.loads(request.content)
    except (httpx.RequestNotRead, wire.ParseError):  # a streamed body, or a GET's none
        frame = None
    method = frame.get("method") if isinstance(frame, dict) else None
    watch.retried(method if isinstance(method, str) else "", reason)
