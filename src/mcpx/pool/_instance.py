"""One warm upstream instance: a session kept open in a task the pool owns.

States: starting → ready → (broken | closed). A broken instance (the process
exited, the framing broke) fails its in-flight calls with a clear error
naming the server, its exit status and last stderr lines, and is never used
again: the pool starts a fresh one on the next call.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import anyio
from anyio.abc import TaskStatus

from mcpx import wire
from mcpx.client import (
    REQUEST_WATCH,
    SENT_AHEAD,
    EraCache,
    Hooks,
    OnUpstreamNotification,
    QuestionHandler,
    QuestionOrigin,
    SentAhead,
    Session,
    UpstreamError,
    open_session,
)
from mcpx.config import ServerConfig, Settings

from ._oauth import OAuthWiring
from ._polls import LIST_FLAGS, Poller, follow_listen, left_out, poll_interval, poll_lists

__all__ = ["Instance"]

# What an instance holds for a call sent ahead on it: its count (``SentAhead.held``).
_COUNTED = "instance"

log = logging.getLogger("mcpx.pool")

# Each instance's own number, never reused in the daemon's life: /v1 names one by it.
_IDS = itertools.count(1)


class Instance:
    """A session to one server for one scope key."""

    def __init__(
        self,
        server: ServerConfig,
        scope_key: str,
        settings: Settings,
        *,
        cache: EraCache | None,
        hooks: Hooks,
        handler: QuestionHandler | None = None,
        oauth: OAuthWiring | None = None,
    ) -> None:
        self.id = next(_IDS)
        self.server = server
        self.scope_key = scope_key
        self._oauth = oauth
        self.settings = settings
        self._cache = cache
        # Questions and notifications are told which instance they came from:
        # attribution to a call is per scope key.
        self._hooks = replace(hooks, on_notification=_scoped_notifications(hooks, scope_key))
        self._handler = None if handler is None else _Scoped(handler, scope_key)
        self.session: Session | None = None
        self.state = "starting"
        self.error: str | None = None
        self.failure: Exception | None = None  # why it failed to start (a login needed …)
        self.started_at = time.time()
        self.last_used = time.monotonic()
        self.calls = 0
        self.in_flight = 0
        self._idle: anyio.Event | None = None  # set when in_flight reaches 0, if awaited
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        # The scopes of the calls in flight, so that a stopping daemon (or an operator)
        # can end them, and why they were ended.
        self._calls: set[anyio.CancelScope] = set()
        self._ending = "mcpx is stopping"

    @property
    def ended(self) -> anyio.Event:
        """Set once the instance has ended (stopped, broken or failed to start)."""
        return self._ended

    @property
    def usable(self) -> bool:
        return (
            self.state == "ready" and self.session is not None and self.session.conn.broken is None
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the session, report started (ready or failed), hold it until
        stopped or broken. Never raises: the pool's task group must survive."""
        # This task inherits the context of the call that asked for the instance: its
        # requests (the start's, the polls') are not that call's to be traced.
        REQUEST_WATCH.set(None)
        started = False
        try:
            async with open_session(
                self.server,
                self.settings,
                handler=self._handler,
                cache=self._cache,
                hooks=self._hooks,
                # The tokens of a `scope: identity` server are its caller's own.
                oauth_store=self._oauth.store if self._oauth else None,
                authorizer=self._oauth.authorizer(self.server, self.scope_key)
                if self._oauth
                else None,
                user=self.scope_key,
                sign_in_first=True,
            ) as session:
                await self._set_log_level(session)
                self.session = session
                self.state = "ready"
                # Idle from now, not from before a start that may outlast pool.idleTimeout:
                # whoever started it (the catalogue's listing) is about to use it.
                self.last_used = time.monotonic()
                started = True
                task_status.started()
                await self._hold(session)
        except Exception as exc:  # the boundary of an owned task: recorded, not raised
            self.error = str(exc) or type(exc).__name__
            self.failure = exc
            self.state = "failed" if not started else "broken"
            log.warning("%s: %s", self.server.name, self.error)
        finally:
            if self.state == "ready":
                self.state = "closed"
            self._ended.set()
            if not started:
                task_status.started()

    async def _hold(self, session: Session) -> None:
        async with anyio.create_task_group() as tg:

            async def on_broken() -> None:
                await session.conn.broken_event.wait()
                self.state = "broken"
                self.error = session.conn.broken
                tg.cancel_scope.cancel()

            tg.start_soon(on_broken)
            filter_ = _list_changes(session)
            if filter_:
                tg.start_soon(self._listen, session, filter_)
            await self._stop.wait()
            if session.conn.broken is not None:
                # It broke before it was stopped (the pool stops a broken one): broken.
                self.state, self.error = "broken", session.conn.broken
            tg.cancel_scope.cancel()

    async def _set_log_level(self, session: Session) -> None:
        # A legacy server sends log messages per its connection's level: mcpx's own
        # (log.level), so that hosts asking for that much can be given them. A modern
        # one is told per request instead (the host's logLevel, or mcpx's if lower).
        negotiated = session.negotiated
        if session.modern or negotiated is None or "logging" not in negotiated.capabilities:
            return
        level = str(self.settings["log.level"])
        try:
            await session.request("logging/setLevel", {"level": level})
        except (UpstreamError, wire.McpError) as exc:
            log.info("%s: logging/setLevel %s refused: %s", self.server.name, level, exc)

    async def _listen(self, session: Session, notifications: dict[str, Any]) -> None:
        # A modern upstream tells of list changes only on a listen stream: hold one for
        # the instance's life, and hand what it says to the hooks as a legacy one's is.
        # The kinds its acknowledgement leaves out are polled instead (C-SUB-3).
        name = self.server.name

        def notified(method: str, params: dict[str, Any]) -> None:
            self._hooks.on_notification(name, method, params)

        def poller(acknowledged: Mapping[str, Any]) -> Poller | None:
            kinds = left_out(notifications, acknowledged)
            if not kinds:
                return None
            log.info("%s acknowledged no %s list changes: polling", name, kinds)
            interval = poll_interval(self.settings)
            return partial(poll_lists, session, kinds, interval, lambda m: notified(m, {}))

        async with session.listen(notifications) as stream:
            await follow_listen(stream, notified, poller)

    async def stop(self) -> None:
        """Close the session (process ended, HTTP session deleted) and wait."""
        self._stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(15):
            await self._ended.wait()

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float,
        host_capabilities: dict[str, Any] | None = None,
        log_level: str | None = None,
        relay_input: bool = False,
        as_task: bool = False,
    ) -> dict[str, Any]:
        """One upstream call on this instance (``as_task``: see ``Session.request``).

        Raises:
            McpError: the upstream answered with a JSON-RPC error.
            UpstreamError: the call failed (timeout, broken instance).
        """
        session = self.session
        if session is None or not self.usable:
            raise UpstreamError(f"{self.server.name}: {self.error or 'instance not ready'}")
        ahead = SENT_AHEAD.get()
        if (
            ahead is None
            or ahead.conn is not session.conn
            or not ahead.about(method, params)
            or ahead.adopt(_COUNTED) is None
        ):
            self.calls += 1  # (one sent ahead here was counted when it was sent)
            self.in_flight += 1
        self.last_used = time.monotonic()
        scope = anyio.CancelScope()
        self._calls.add(scope)
        try:
            with scope:
                return await session.request(
                    method,
                    params,
                    timeout=timeout,
                    host_capabilities=host_capabilities,
                    log_level=log_level,
                    relay_input=relay_input,
                    as_task=as_task,
                )
            # Only end_calls cancels this scope: its caller is told why.
            raise UpstreamError(
                f"{self.server.name}: {self._ending}, and {method} was ended before it finished"
            )
        finally:
            self._calls.discard(scope)
            self._call_ended()

    def _call_ended(self) -> None:
        """One call of this instance ended."""
        self.in_flight -= 1
        self.last_used = time.monotonic()
        if not self.in_flight and self._idle is not None:
            self._idle.set()

    def send_ahead(
        self,
        method: str,
        params: dict[str, Any],
        *,
        log_level: str | None = None,
        host_capabilities: dict[str, Any] | None = None,
    ) -> SentAhead | None:
        """``method`` written now for the call about to be made here with the same
        params, log level and host capabilities (``Session.send_ahead``), counted as a
        call in flight from now (its ``request`` takes the count over); None: nothing
        was."""
        session = self.session
        if session is None or not self.usable:
            return None
        ahead = session.send_ahead(
            method, params, log_level=log_level, host_capabilities=host_capabilities
        )
        if ahead is not None:
            self.calls += 1
            self.in_flight += 1
            self.last_used = time.monotonic()
            ahead.held[_COUNTED] = self._call_ended
        return ahead

    async def drained(self) -> None:
        """Until no call is in flight (the instance is being retired)."""
        if self.in_flight:
            self._idle = anyio.Event()
            await self._idle.wait()

    def end_calls(self, why: str = "mcpx is stopping") -> None:
        """End the calls in flight (the daemon is stopping, or an operator stops this
        instance): each fails with an UpstreamError saying ``why``, and the upstream is
        told of the cancellation."""
        self._ending = why
        for scope in list(self._calls):
            scope.cancel()

    def status(self) -> dict[str, Any]:
        negotiated = self.session.negotiated if self.session else None
        described = self.session.conn.transport.describe() if self.session else {}
        return {
            "id": self.id,
            "scope": self.scope_key or "shared",
            "state": self.state,
            "era": negotiated.era.value if negotiated else None,
            "revision": negotiated.revision if negotiated else None,
            "eraSource": negotiated.source if negotiated else None,
            "transport": negotiated.transport if negotiated else self.server.transport,
            "pid": described.get("pid"),
            "url": described.get("url"),
            "httpRequests": described.get("httpRequests"),
            "uptime": round(time.time() - self.started_at, 3),
            "calls": self.calls,
            "inFlight": self.in_flight,
            "lastError": self.error,
        }


def _list_changes(session: Session) -> dict[str, Any]:
    """The listen filter for the list changes a modern upstream declared it sends."""
    negotiated = session.negotiated
    if not session.modern or negotiated is None:
        return {}
    caps = negotiated.capabilities
    return {
        flag: True
        for kind, flag in LIST_FLAGS.items()
        if isinstance(caps.get(kind), dict) and caps[kind].get("listChanged") is True
    }


def _scoped_notifications(hooks: Hooks, scope_key: str) -> OnUpstreamNotification:
    def notified(server: str, method: str, params: dict[str, Any], *, scope: str = "") -> None:
        hooks.on_notification(server, method, params, scope=scope or scope_key)

    return notified


@dataclass(frozen=True)
class _Scoped:
    """The daemon's question handler, told the scope key of the instance that asks."""

    inner: QuestionHandler
    scope_key: str

    def capabilities(self, revision: str) -> dict[str, Any]:
        return self.inner.capabilities(revision)

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        return await self.inner.answer(method, params, replace(asked, scope=self.scope_key))
