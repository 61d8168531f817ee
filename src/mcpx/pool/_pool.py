"""The warm upstream pool: one instance per (server, scope key).

Invariants:
- Started on first use; concurrent first calls start one instance, not several
  (a lock per key).
- Kept warm while used; reaped after ``pool.idleTimeout`` without calls or
  calls in flight.
- At most ``pool.max`` instances per server; past it the least recently used
  idle instance is stopped to make room, and if none is idle the call is
  refused with a clear error.
- A broken instance is dropped; the next call starts a fresh one, unless it keeps
  failing: then starts are paused, bounded by ``pool.restartBackoff`` (``_restarts``).
- Every instance task is owned by the pool's task group.
- An instance holding resource subscriptions is not idle (``_watch``).
- Once ``stop_calls`` is called no call starts, and none outlives its grace.
- An instance an operator stops (``stop_instance``) is out of the pool before it ends:
  its calls in flight fail with an error saying why, and the next call starts a fresh
  one, as after any stop.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskGroup, TaskStatus

from mcpx.client import EraCache, Hooks, QuestionHandler, UpstreamError
from mcpx.config import ServerConfig, Settings

from ._budget import call_budget
from ._errors import PoolFull, UnknownServer
from ._instance import Instance
from ._oauth import OAuthWiring
from ._restarts import Restarts
from ._watch import Watches

__all__ = ["Pool", "PoolFull", "UnknownServer", "open_pool"]

log = logging.getLogger("mcpx.pool")

Key = tuple[str, str]

# How long calls ended at a stop get to unwind: telling the upstream is one write.
_UNWIND: Final = 2.0
_LIFECYCLE: Final = 4096  # instance starts and crashes remembered


class Pool:
    def __init__(
        self,
        servers: Mapping[str, ServerConfig],
        settings: Settings,
        tg: TaskGroup,
        *,
        cache: EraCache | None = None,
        hooks: Hooks | None = None,
        handler: QuestionHandler | None = None,
        on_ready: Callable[[str], None] | None = None,
        oauth: OAuthWiring | None = None,
    ) -> None:
        self.servers = dict(servers)
        # Where OAuth upstreams' tokens are kept and how a login reaches a person.
        self.oauth = oauth
        # Told when an instance of a server becomes ready (the catalogue refreshes).
        self.on_ready = on_ready
        self.settings = settings
        self._tg = tg
        self._cache = cache
        self._hooks = hooks or Hooks()
        self._handler = handler
        self._instances: dict[Key, Instance] = {}
        self._locks: dict[Key, anyio.Lock] = {}
        self._live: dict[Key, Instance] = {}  # the last started per key, until it ends
        self._stopping: float | None = None  # when calls in flight are ended, once stopping
        self._in_flight = 0
        self._drained = anyio.Event()  # set when stopping and no call is left
        self.started_at = time.time()
        self.restarts = Restarts(settings)
        # (wall clock, server, "start" | "crash"), newest last: `mcpx stats` counts them.
        self.lifecycle: deque[tuple[float, str, str]] = deque(maxlen=_LIFECYCLE)
        # Resource subscriptions upstream, counted across hosts.
        self.watches = Watches(self.instance, self.spawn, settings, self._hooks)

    def server(self, name: str) -> ServerConfig:
        try:
            return self.servers[name]
        except KeyError:
            raise UnknownServer(name, sorted(self.servers)) from None

    def scope_key(self, server: ServerConfig, identity: str | None) -> str:
        return identity or "anonymous" if server.scope == "identity" else ""

    def ready(self, name: str, identity: str | None = None) -> Instance | None:
        """The instance ``instance`` would hand over now without waiting: ready, and
        nobody replacing it. None: it would have to start one, wait or refuse."""
        server = self.servers.get(name)
        if server is None or self._stopping is not None:
            return None
        key = (name, self.scope_key(server, identity))
        current = self._instances.get(key)
        if current is None or not current.usable:
            return None
        lock = self._locks.get(key)
        return current if lock is None or not lock.locked() else None

    async def instance(self, name: str, identity: str | None = None) -> Instance:
        """The ready instance for ``name`` and the caller's scope, started if needed.

        Raises:
            UnknownServer: no such server.
            UpstreamError: it could not be started (the message says why).
        """
        server = self.server(name)
        if self._stopping is not None:
            raise UpstreamError(f"{name}: mcpx is stopping and takes no new calls")
        current = self.ready(name, identity)
        if current is not None:
            return current  # the common case, lock-free
        key = (name, self.scope_key(server, identity))
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        async with lock:
            current = self._instances.get(key)
            if current is not None and current.usable:
                return current
            if current is not None:
                self._instances.pop(key, None)
                await current.stop()
            last = self._live.get(key)
            if last is not None and not last.usable:
                await last.stop()  # a broken one's end counts before the next start
            self.restarts.check(key)
            await self._make_room(name)
            inst = Instance(
                server,
                key[1],
                self.settings,
                cache=self._cache,
                hooks=self._hooks,
                handler=self._handler,
                oauth=self.oauth,
            )
            await self._tg.start(self._run, key, inst)
            if not inst.usable:
                # Chained: a login needed is found behind it (client.login_needed).
                raise UpstreamError(f"{name} could not be started: {inst.error}") from inst.failure
            self._instances[key] = inst
        if self.on_ready is not None:
            self.on_ready(name)
        return inst

    async def _run(
        self, key: Key, inst: Instance, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED
    ) -> None:
        self._live[key] = inst
        self.lifecycle.append((time.time(), key[0], "start"))
        try:
            await inst.run(task_status=task_status)
        finally:
            if inst.state in ("failed", "broken"):
                self.lifecycle.append((time.time(), key[0], "crash"))
            self.restarts.ended(key, inst)
            if self._live.get(key) is inst:
                del self._live[key]

    async def _make_room(self, name: str) -> None:
        mine = [i for (n, _), i in self._instances.items() if n == name]
        if len(mine) < int(self.settings["pool.max"]):
            return
        idle = sorted(
            (i for i in mine if i.in_flight == 0 and not self.watches.holds(i)),
            key=lambda i: i.last_used,
        )
        if not idle:
            raise PoolFull(
                f"{name} has {len(mine)} instances (pool.max) and all are busy; try again"
            )
        await self._drop(idle[0])

    async def _drop(self, inst: Instance) -> None:
        key = (inst.server.name, inst.scope_key)
        self._instances.pop(key, None)
        # Its lock goes too, unless held (then someone is starting the next instance):
        # one lock per scope key ever seen would grow with every session and request.
        lock = self._locks.get(key)
        if lock is not None and not lock.locked():
            del self._locks[key]
        await inst.stop()

    async def stop_instance(self, inst: Instance, why: str) -> None:
        """Stop ``inst`` now, at an operator's word (``why`` says so to its calls in flight).

        Under its key's lock: a call arriving meanwhile waits, then starts a fresh instance.
        Its ended calls unwind (the upstream is told) before the process is stopped.
        """
        key = (inst.server.name, inst.scope_key)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        async with lock:
            if self._instances.get(key) is inst:
                del self._instances[key]
            inst.end_calls(why)
            with anyio.move_on_after(_UNWIND):
                await inst.drained()
            await inst.stop()
        log.info("%s: instance %d stopped (%s)", key[0], inst.id, why)

    async def request(
        self,
        name: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        identity: str | None = None,
        timeout: float | None = None,
        host_capabilities: dict[str, Any] | None = None,
        log_level: str | None = None,
        relay_input: bool = False,
        as_task: bool = False,
        handed: Callable[[Instance], None] | None = None,
    ) -> dict[str, Any]:
        """One upstream call, bounded by the call budget (``timeout`` can only lower it).

        ``host_capabilities``: a 2026-07-28 host's own, which narrow what mcpx declares
        to a modern upstream for this call.

        ``as_task``: a ``tools/call`` sent as an upstream task (``Session.request``);
        ``timeout`` then bounds the whole task and may exceed ``pool.callTimeout``, which
        bounds each of its exchanges.

        ``handed``: told the instance once the pool has one for the call (a started one,
        or started for it), before anything is sent (the call log times the wait).

        Raises:
            UnknownServer, McpError, UpstreamError: as for ``instance`` and the call.
        """
        inst = await self.instance(name, identity)
        if handed is not None:
            handed(inst)
        self._in_flight += 1
        try:
            budget = call_budget(self.settings, timeout)
            if as_task and timeout is not None and timeout > budget:
                budget = float(timeout)  # a task's whole life, not one exchange
            return await inst.request(
                method, params, budget, host_capabilities, log_level, relay_input, as_task
            )
        finally:
            self._in_flight -= 1
            if self._stopping is not None and not self._in_flight:
                self._drained.set()
            key = (name, inst.scope_key)
            if not inst.usable and self._instances.get(key) is inst:
                # Only this one: a newer instance may already stand under the key.
                self._instances.pop(key)

    def holds(self, identity: str) -> bool:
        """Whether any instance is scoped to ``identity`` (there is something to release)."""
        return any(i.scope_key == identity for i in self._instances.values())

    async def release(self, identity: str) -> int:
        """Stop the idle instances scoped to ``identity`` (its client is gone); how many.

        A busy one finishes its calls and is reaped as idle later.
        """
        gone = [i for i in self._instances.values() if i.scope_key == identity and i.in_flight == 0]
        for inst in gone:
            await self._drop(inst)
        return len(gone)

    def apply(self, servers: Mapping[str, ServerConfig]) -> dict[str, list[str]]:
        """Serve ``servers`` from now on (the config file changed); what changed, by name.

        New calls to a changed server start an instance of its new entry. The instances
        of changed and removed servers are retired: a busy one finishes its calls
        (bounded by ``pool.callTimeout``), then stops; an idle one stops now.
        """
        old = self.servers
        changes = {
            "added": sorted(set(servers) - set(old)),
            "removed": sorted(set(old) - set(servers)),
            "changed": sorted(n for n in set(old) & set(servers) if old[n] != servers[n]),
        }
        self.servers = dict(servers)
        for name in changes["removed"]:
            self.watches.forget(name)
        for name in (*changes["removed"], *changes["changed"]):
            self.restarts.forget(name)
        for name in (*changes["removed"], *changes["changed"]):
            for key in [k for k in self._instances if k[0] == name]:
                self._tg.start_soon(self._retire, self._instances.pop(key))
        return changes

    async def _retire(self, inst: Instance) -> None:
        with anyio.move_on_after(call_budget(self.settings) + 1):
            await inst.drained()
        log.info("%s: retired (its entry changed or went)", inst.server.name)
        await inst.stop()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, object]], *args: object) -> None:
        """Run ``fn`` in the pool's task group (owned, ended with the pool)."""
        self._tg.start_soon(fn, *args)

    def instances(self, name: str | None = None) -> list[Instance]:
        return [i for (n, _), i in self._instances.items() if name is None or n == name]

    async def reap_idle(self) -> int:
        """Stop instances idle longer than pool.idleTimeout; returns how many."""
        limit = float(self.settings["pool.idleTimeout"])
        now = time.monotonic()
        stale = [
            i
            for i in list(self._instances.values())
            if not i.usable
            or (i.in_flight == 0 and now - i.last_used >= limit and not self.watches.holds(i))
        ]
        for inst in stale:
            log.info("%s: reaping (%s)", inst.server.name, inst.state)
            await self._drop(inst)
        return len(stale)

    async def _reaper(self) -> None:
        interval = max(0.05, min(5.0, float(self.settings["pool.idleTimeout"]) / 4))
        while True:
            await anyio.sleep(interval)
            await self.reap_idle()

    async def stop_calls(self, grace: float) -> None:
        """The daemon is stopping: no new calls; those in flight get ``grace`` seconds
        to finish, then are ended, each with an error saying so (rather than a host
        left waiting until its connection drops). Called again, it waits for the same
        deadline: the grace is counted once, from the first call."""
        if self._stopping is None:
            self._stopping = time.monotonic() + grace
        if self._in_flight:
            with anyio.move_on_after(self._stopping - time.monotonic()):
                await self._drained.wait()
        for inst in self._instances.values():
            inst.end_calls()
        if self._in_flight:
            # The ended calls unwind (the upstream is told) and their callers take the
            # error, before whatever runs them (a task, a host's channel) is cancelled.
            with anyio.move_on_after(_UNWIND):
                await self._drained.wait()

    async def close(self) -> None:
        # All at once: each stop may wait out its graces (stdin closed, then SIGTERM),
        # and one after another that added up to seconds per upstream at shutdown.
        async with anyio.create_task_group() as tg:
            for inst in list(self._instances.values()):
                tg.start_soon(self._drop, inst)


@asynccontextmanager
async def open_pool(
    servers: Mapping[str, ServerConfig],
    settings: Settings,
    *,
    cache: EraCache | None = None,
    hooks: Hooks | None = None,
    handler: QuestionHandler | None = None,
    oauth: OAuthWiring | None = None,
) -> AsyncIterator[Pool]:
    """A pool whose instances and reaper live for the context."""
    async with anyio.create_task_group() as tg:
        pool = Pool(servers, settings, tg, cache=cache, hooks=hooks, handler=handler, oauth=oauth)
        tg.start_soon(pool._reaper)
        try:
            yield pool
        finally:
            with anyio.CancelScope(shield=True):
                await pool.close()
            tg.cancel_scope.cancel()
