"""Resource subscriptions upstream, counted per URI across every host.

Invariants:

- The upstream sees one client, mcpx: the first watcher of (server, uri) subscribes,
  the last one unsubscribes; hosts in between change nothing upstream.
- A server that did not declare ``resources.subscribe`` is never sent a subscription
  (that would ask for an undeclared capability); ``watch`` says why nothing will come.
- Subscriptions live on the server's shared instance, in the mechanism of its era:
  ``resources/subscribe`` and ``resources/unsubscribe`` (legacy), or one
  ``subscriptions/listen`` whose ``resourceSubscriptions`` is the wanted set, opened
  again whenever the set changes (2026-07-28).
- While a server has wanted subscriptions a guard keeps an instance for them: one that
  ends (a restart, a crash) is replaced at once and given every subscription still
  wanted, since nobody else would start it and the updates would stop without a word;
  one that keeps ending is started again only after the pool's pause (``_restarts``).
- What the upstream says on the listen stream reaches the hooks, as a legacy
  server's unsolicited notifications do. The URIs its acknowledgement leaves out are
  polled (``_polls``): a changed read reaches the hooks as ``resources/updated``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final

import anyio

from mcpx import wire
from mcpx.client import Hooks, Session, UpstreamError
from mcpx.config import Settings

from ._errors import UnknownServer
from ._instance import Instance
from ._polls import Poller, follow_listen, poll_interval, poll_resources, unacknowledged_uris
from ._restarts import BackingOff

__all__ = ["Watches"]

log = logging.getLogger("mcpx.pool")

_RETRY_FIRST: Final = 0.5
_RETRY_MAX: Final = 30.0


class Watches:
    """The resource URIs wanted per server, and the guards that keep them subscribed."""

    def __init__(
        self,
        instance: Callable[[str], Awaitable[Instance]],
        spawn: Callable[..., None],
        settings: Settings,
        hooks: Hooks,
    ) -> None:
        # The pool's instance() and spawn(), not the pool: the pool holds this object.
        self._instance = instance
        self._spawn = spawn
        self._settings = settings
        self._hooks = hooks
        self._wanted: dict[str, dict[str, int]] = {}
        self._changed: dict[str, anyio.Event] = {}

    def wanted(self, server: str) -> set[str]:
        return set(self._wanted.get(server, {}))

    def holds(self, inst: Instance) -> bool:
        """Whether ``inst`` carries wanted subscriptions (then it is not idle)."""
        return inst.scope_key == "" and bool(self._wanted.get(inst.server.name))

    async def watch(self, server: str, uri: str) -> str | None:
        """Count one more watcher of ``uri`` on ``server``.

        Returns None when updates will come, else why they will not (nothing is
        counted then).

        Raises:
            UnknownServer, UpstreamError: as ``Pool.instance``.
        """
        inst = await self._instance(server)
        session = inst.session
        caps = session.negotiated.capabilities if session and session.negotiated else {}
        resources = caps.get("resources")
        if not (isinstance(resources, dict) and resources.get("subscribe") is True):
            return f"{server} did not declare resources.subscribe"
        counts = self._wanted.setdefault(server, {})
        counts[uri] = counts.get(uri, 0) + 1
        if counts[uri] == 1:
            self._signal(server)
        return None

    def unwatch(self, server: str, uri: str) -> None:
        """One watcher fewer; the last one's leaving unsubscribes upstream."""
        counts = self._wanted.get(server)
        if counts is None or uri not in counts:
            return
        counts[uri] -= 1
        if counts[uri] <= 0:
            del counts[uri]
            if not counts:
                del self._wanted[server]
            self._signal(server)

    def forget(self, server: str) -> None:
        """``server`` left the config: nothing of it is wanted any more (its guard ends)."""
        if self._wanted.pop(server, None) is not None:
            self._signal(server)

    def _signal(self, server: str) -> None:
        event = self._changed.get(server)
        if event is not None:
            event.set()  # the guard reconciles
            return
        self._changed[server] = anyio.Event()
        self._spawn(self._guard, server)

    async def _guard(self, server: str) -> None:
        """Keep ``server``'s wanted subscriptions on a live instance, while any are."""
        pause = _RETRY_FIRST
        try:
            while self._wanted.get(server):
                try:
                    inst = await self._instance(server)
                    await self._hold(server, inst)
                    pause = _RETRY_FIRST
                except BackingOff as exc:
                    # The pool pauses the starts of an upstream that keeps failing: the
                    # guard waits that pause out rather than asking again and again.
                    log.info("%s: subscriptions wait (%s)", server, exc)
                    await anyio.sleep(exc.retry_in)
                except UnknownServer:
                    log.warning("%s left the config: its subscriptions are dropped", server)
                    self._wanted.pop(server, None)
                except (UpstreamError, wire.McpError) as exc:
                    log.warning("%s: subscriptions not held (%s); retrying", server, exc)
                    await anyio.sleep(pause)
                    pause = min(pause * 2, _RETRY_MAX)
        finally:
            self._changed.pop(server, None)
            if self._wanted.get(server):  # wanted again as this guard was leaving
                self._signal(server)

    async def _hold(self, server: str, inst: Instance) -> None:
        # Returns when the instance ended (the guard starts another) or nothing is wanted.
        session = inst.session
        assert session is not None
        if session.modern:
            await self._hold_listen(server, inst, session)
        else:
            await self._hold_legacy(server, inst, session)

    async def _hold_legacy(self, server: str, inst: Instance, session: Session) -> None:
        current: set[str] = set()
        while inst.usable:
            want = self.wanted(server)
            for uri in sorted(want - current):
                await session.request("resources/subscribe", {"uri": uri})
            for uri in sorted(current - want):
                await session.request("resources/unsubscribe", {"uri": uri})
            current = want
            if not want:
                return
            await self._until_changed(server, inst)

    async def _hold_listen(self, server: str, inst: Instance, session: Session) -> None:
        while inst.usable:
            want = self.wanted(server)
            if not want:
                return
            asked = sorted(want)
            async with (
                anyio.create_task_group() as tg,
                session.listen({"resourceSubscriptions": asked}) as stream,
            ):
                tg.start_soon(self._forward, server, session, asked, stream)
                await self._until_changed(server, inst)
                tg.cancel_scope.cancel()

    async def _forward(self, server: str, session: Session, asked: list[str], stream: Any) -> None:
        # What the listen stream says reaches the hooks; the URIs its acknowledgement
        # leaves out are read again and again instead (C-SUB-3), a changed read being
        # the resources/updated that never came.
        def notified(method: str, params: dict[str, Any]) -> None:
            self._hooks.on_notification(server, method, params)

        def updated(uri: str) -> None:
            notified("notifications/resources/updated", {"uri": uri})

        def poller(acknowledged: Mapping[str, Any]) -> Poller | None:
            uris = unacknowledged_uris(asked, acknowledged)
            if not uris:
                return None
            log.info("%s acknowledged no subscription to %s: polling", server, uris)
            interval = poll_interval(self._settings)
            return partial(poll_resources, session, uris, interval, updated)

        await follow_listen(stream, notified, poller)

    async def _until_changed(self, server: str, inst: Instance) -> None:
        event = self._changed.setdefault(server, anyio.Event())
        async with anyio.create_task_group() as tg:

            async def ended() -> None:
                await inst.ended.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(ended)
            await event.wait()
            tg.cancel_scope.cancel()
        if event.is_set():
            self._changed[server] = anyio.Event()
