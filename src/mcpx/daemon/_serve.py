"""Running the daemon: one app on a unix socket (mode 0600) and a TCP port.

Invariants:
- ``<state>/daemon.json`` (pid, socket, url) exists while the daemon serves,
  so clients find it; it is removed on a clean exit, with the sockets.
- The pool, the catalogue and every upstream live inside the app's lifespan,
  owned by its task group; they end before the daemon does.
- Logs are JSON lines in ``<state>/daemon.log``, upstream stderr among them,
  tagged by server.
- One event bus per daemon: upstream stderr, notifications and client events are
  published on it (``/v1/events``); its streams end when the daemon stops.
- The state dir is 0700 whenever the daemon runs (tightened if it was looser).
- Upstream process groups a killed daemon left running are ended before anything is
  spawned; this daemon's are on record in ``<state>/upstream-groups`` while they run.
- Nothing is bound until ``exposure`` and ``daemon.auth`` allow it: a refusal goes to
  stderr and ``daemon.log`` and the daemon exits (``StartRefused``); the TCP port's every
  request passes the ``FrontDoor`` (Host, Origin, auth, content type) first.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import json
import logging
import math
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Final, NoReturn

import anyio
import uvicorn
from starlette.applications import Starlette

from mcpx import __version__
from mcpx.client import EraCache, Hooks
from mcpx.config import ServerConfig, Settings, StateDiskFull
from mcpx.events import EventBus, frames_log, publish_notification
from mcpx.ops import Catalogue, OpContext, open_call_log
from mcpx.pool import open_pool
from mcpx.questions import Broker, CallsInFlight, Question, QuestionRouter, StateSigner, Throttle
from mcpx.server import Audience
from mcpx.tasks import TaskRecords, Tasks
from mcpx.transport import reap_groups, recording_groups

from ._app import build_app
from ._daemon_auth import StartRefused, admit
from ._guard import FrontDoor, routed
from ._hand_back import HandBacks
from ._head_limits import limited_protocol
from ._limits import BodyLimits
from ._login_asker import oauth_wiring
from ._mcp import McpEndpoint
from ._paths import EX_STATE_FULL, DaemonPaths, demo_server, setup_log
from ._reload import ConfigFollower, applying
from ._stdio_accept import serve_stdio_channel
from ._telemetry_wiring import running_telemetry
from ._timers import Timers

__all__ = ["StartRefused", "serve"]

log = logging.getLogger("mcpx.daemon")
upstream_log = logging.getLogger("mcpx.upstream")


class DaemonRunning(Exception):
    """Another daemon holds this state dir."""


def _only_daemon(paths: DaemonPaths) -> int:
    """The state dir's lock, held (its fd) by this process.

    Raises:
        DaemonRunning: another daemon holds it.
    """
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        try:
            pid = json.loads(paths.info.read_text()).get("pid", "?")
        except (OSError, ValueError):
            pid = "?"
        raise DaemonRunning(
            f"a daemon already runs for {paths.state} (pid {pid}); `mcpx stop` ends it"
        ) from None
    return fd


def _unix_socket(path: Path) -> socket.socket:
    if path.exists() or path.is_symlink():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: only this user may talk to the daemon
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def _tcp_socket(address: str, port: int) -> socket.socket:
    """A listening TCP socket.

    Raises:
        StartRefused: the address or port cannot be bound (the message says which).
    """
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns TCP_NODELAY on only then, and without it
    # every small response waits ~40 ms for Nagle's algorithm.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise StartRefused(
            f"mcpx: cannot listen on {address} port {port}: {exc.strerror or exc}; "
            "choose another with --address / --port (daemon.address, daemon.port)"
        ) from None
    sock.listen(128)
    return sock


def _state_dir(state: Path) -> None:
    """The state dir, made or tightened to 0700: it holds the sockets, the log, tasks.

    Raises:
        StartRefused: it cannot be made private (another user's directory).
    """
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        if state.stat().st_mode & 0o077:
            os.chmod(state, 0o700)
    except OSError as exc:
        raise StartRefused(
            f"mcpx: the state dir {state} cannot be made private (mode 0700): {exc.strerror}; "
            "choose another with --state-dir"
        ) from None


def _hooks(
    catalogue: list[Catalogue],
    audience: Audience,
    calls: CallsInFlight,
    settings: Settings,
    events: EventBus,
) -> Hooks:
    full = settings["mcp.surface"] == "full"  # every server's tools are listed to hosts

    def on_stderr(server: str, line: str) -> None:
        upstream_log.info(line, extra={"server": server})
        events.publish("server.log", {"source": "stderr", "message": line}, server=server)

    def on_notification(
        server: str, method: str, params: dict[str, Any], *, scope: str = ""
    ) -> None:
        if method.endswith("/list_changed") and catalogue:
            catalogue[0].invalidate(server)
            # After the invalidation: a host that lists again sees the new list.
            audience.upstream_notified(server, method, settings["mcp.passthrough"], every=full)
        # Progress and log lines back to the hosts whose calls are running.
        calls.upstream_notified(server, method, params, scope)
        if method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            audience.resource_updated(server, params["uri"])
        if method == "notifications/message":
            upstream_log.info("log: %s", params.get("data"), extra={"server": server})
        publish_notification(events, server, method, params)

    def on_event(kind: str, data: dict[str, Any]) -> None:
        log.info("event %s %s", kind, json.dumps(data))
        events.publish(kind, data, server=data.get("server"), uri=data.get("uri"))

    return Hooks(on_stderr=on_stderr, on_event=on_event, on_notification=on_notification)


def _question_events(events: EventBus) -> Callable[[str, Question], None]:
    def publish(kind: str, question: Question) -> None:
        if kind == "question.asked":
            data = question.as_json()
        else:
            data = {"id": question.id, "state": question.state, "server": question.server}
        events.publish(kind, data, server=question.server)

    return publish


def _frame_trace(
    settings: Settings,
) -> Callable[[str | None, Mapping[str, Any], str | None], None] | None:
    return frames_log(str(settings["log.frames"]))  # never raises (events._frames_log)


def serve(
    settings: Settings,
    servers: Mapping[str, ServerConfig],
    state: Path,
    *,
    config_file: Path | None = None,
    warn: Any = print,
) -> None:
    """Serve until stopped (SIGTERM or SIGINT); blocks. ``config_file``: the file the servers
    came from, followed while the daemon runs (``daemon.configPoll``).

    Raises:
        DaemonRunning, StartRefused: the daemon cannot start (the message says why).
        SystemExit: with ``EX_STATE_FULL`` (7), the state dir's disk has no room for the
            daemon's files; said through ``warn`` first.
    """
    default = {"demo": demo_server()}
    paths = DaemonPaths(state)
    _state_dir(state)
    # A full collection walks every live object, and the daemon may hold proto.maxSessions
    # sessions: at 50,000 each one paused it for 200 ms, every 2 s under load (p99 x2.5).
    # Young collections this much rarer let a request's objects die before a collection
    # promotes them, so the old generation barely grows and is almost never walked.
    gc.set_threshold(20_000, 20, 100)
    # Before anything is bound or removed: a second daemon must not take the first's
    # socket away from it. Held until the process ends.
    lock = _only_daemon(paths)
    setup_log(paths.log, str(settings["log.level"]))
    # What a killed daemon's upstreams started lives on: ended before anything is spawned.
    reap_groups(paths.upstream_groups)
    address, port = str(settings["daemon.address"]), int(settings["daemon.port"])
    try:
        auth = admit(settings, os.environ, warn)
        tcp = _tcp_socket(address, port)
    except StartRefused as exc:
        log.error("%s", exc)  # the caller says it on stderr
        raise
    unix = _unix_socket(paths.socket)
    host, bound = tcp.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
    holder: list[OpContext] = []
    stopping: list[bool] = []  # non-empty once the daemon began to stop
    catalogues: list[Catalogue] = []
    trace = _frame_trace(settings)
    audience = Audience(settings.policy(), trace)
    calls = CallsInFlight()
    events = EventBus(int(settings["events.history"]))
    later = Timers()
    hand_backs = HandBacks()
    paths.restarting.unlink(missing_ok=True)  # a restart that did not finish
    keep = float(settings["proto.askTTL"])
    try:  # before serving: a state dir with no room for them is said at once
        broker = Broker(paths.questions, on_change=_question_events(events))
        records = TaskRecords(paths.tasks, keep)
    except StateDiskFull as exc:
        _state_full(paths, exc, warn)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        cache = EraCache(paths.eras) if settings["upstream.eraCache"] else None
        hooks = _hooks(catalogues, audience, calls, settings, events)
        # Upstream questions: the calling host first, the broker after.
        handler = QuestionRouter(
            broker,
            calls,
            lambda: holder[0].pool if holder else None,
            lambda: bool(stopping),
            Throttle.configured(settings),
        )
        oauth = oauth_wiring(paths.state / "oauth.db", handler, f"{url}/oauth/callback")
        async with (
            # Outlives the pool: the calls ended at a stop are still written.
            open_call_log(paths.state / "calls.db", settings) as call_log,
            open_pool(
                servers, settings, cache=cache, hooks=hooks, handler=handler, oauth=oauth
            ) as pool,
            running_telemetry(
                settings, pool, broker, lambda: holder[0].tasks, events=events, router=handler
            ) as telemetry,
            anyio.create_task_group() as running,
        ):
            # Calls that outlive their request run here, and end before the upstreams do.
            most = int(settings["proto.maxTasks"])
            tasks = Tasks(running, keep, records, most, events=events)
            catalogue = Catalogue(paths.catalogue, pool)
            pool.on_ready = catalogue.server_started
            catalogues.append(catalogue)
            if config_file is not None and float(settings["daemon.configPoll"]) > 0:
                follower = ConfigFollower(
                    config_file,
                    default,
                    tuple(settings["mcp.passthrough"]),
                    applying(
                        pool,
                        catalogue,
                        audience,
                        settings["mcp.passthrough"],
                        every=settings["mcp.surface"] == "full",
                    ),
                    lambda kind, data: events.publish(kind, data),
                )
                running.start_soon(follower.follow, float(settings["daemon.configPoll"]))
            holder.append(
                OpContext(
                    pool,
                    catalogue,
                    settings,
                    trace=trace,
                    calls=calls,
                    audience=audience,
                    events=events,
                    broker=broker,
                    tasks=tasks,
                    signer=StateSigner(float(settings["proto.stateTTL"])),
                    recorder=call_log,
                    telemetry=telemetry,
                    socket=paths.socket,
                )
            )
            log.info("serving %d servers on %s and %s", len(servers), paths.socket, url)
            # Inside the pool's context: stdio hosts end before the upstreams they use.
            async with anyio.create_task_group() as channels:
                await channels.start(later.run)
                await channels.start(
                    serve_stdio_channel, paths.stdio_socket, lambda: holder[0], hand_backs
                )
                try:
                    yield
                finally:
                    # The stdio hosts' calls in flight are answered before their
                    # channel goes (stop_calls began at the stop signal: one grace).
                    with anyio.CancelScope(shield=True):
                        await pool.stop_calls(float(settings["daemon.stopGrace"]))
                        # A restart: the hosts' answers are written and they go back
                        # to their shims, before the channel goes.
                        await hand_backs.wait(_HAND_BACK)
                    channels.cancel_scope.cancel()
                    running.cancel_scope.cancel()
                    # Here rather than after serving: uvicorn re-raises the stop signal
                    # once it has shut down, and the process ends with it.
                    _remove(paths)

    # Its own URL is a trusted Origin: a page the daemon served may call /mcp.
    mcp = McpEndpoint(lambda: holder[0], own=[url], later=later, audience=audience)
    inner = build_app(
        lambda: holder[0],
        lifespan,
        later=later,
        mcp=mcp,
        limits=BodyLimits.configured(settings),
    )
    app = FrontDoor(
        inner,
        own_origins=[url],
        allowed_origins=[str(o) for o in settings["transport.allowedOrigins"]],
        allowed_hosts=[str(h) for h in settings["transport.allowedHosts"]],
        auth=auth,
        routed=routed(inner.routes),
    )
    info = {
        "pid": os.getpid(),
        "socket": str(paths.socket),
        "url": url,
        "version": __version__,
        "startedAt": time.time(),
    }
    try:
        paths.info.write_text(json.dumps(info))
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        _state_full(paths, StateDiskFull(paths.info), warn)
    os.chmod(paths.info, 0o600)
    grace = float(settings["daemon.stopGrace"])

    def hand_back() -> None:
        # `mcpx restart` said so before the signal: hosts go back to their shims.
        if paths.restarting.exists():
            paths.restarting.unlink(missing_ok=True)
            hand_backs.begin()

    def end_calls() -> None:
        # Calls in flight get the grace to finish, then an error: answered, not dropped.
        if holder:
            holder[0].pool.spawn(holder[0].pool.stop_calls, grace)

    config = uvicorn.Config(
        app,
        lifespan="on",
        http=limited_protocol(settings),  # each head bounded; refusals closed in stages
        log_config=None,
        access_log=False,
        # A host that does not let go of a stream gets this long after the graceful end;
        # the calls' errors are written before it.
        timeout_graceful_shutdown=math.ceil(grace) + 2,
    )
    try:
        on_stop = [
            lambda: stopping.append(True),
            hand_back,
            end_calls,
            audience.close,
            mcp.close,
            events.close,
        ]
        # Set before uvicorn's event loop exists: every task's context is copied from here.
        with recording_groups(paths.upstream_groups):
            _Server(config, on_stop=on_stop).run(sockets=[unix, tcp])
    finally:
        _remove(paths)
        os.close(lock)


class _Server(uvicorn.Server):
    """uvicorn, telling the long-lived streams to end before it waits for them."""

    def __init__(self, config: uvicorn.Config, on_stop: list[Callable[[], None]]) -> None:
        super().__init__(config)
        self._on_stop = on_stop

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Listen streams end gracefully (their result) and GET streams end, so that
        # waiting for running requests does not wait for hosts that never hang up.
        for stop in self._on_stop:
            stop()
        await super().shutdown(sockets)


# How long a restart waits for the hosts to be given back, after the calls' grace.
_HAND_BACK: Final = 5.0


def _state_full(paths: DaemonPaths, exc: StateDiskFull, warn: Any) -> NoReturn:
    """No room in the state dir to start: said on stderr (and in the log if it fits),
    nothing left behind that passes for a running daemon, and exit 7 (the README's)."""
    said = f"mcpx: the daemon cannot start: {exc}"
    log.error("%s", said)
    _remove(paths)
    with suppress(OSError):  # stderr may be a file on that same full disk
        warn(said)
    raise SystemExit(EX_STATE_FULL) from exc


def _remove(paths: DaemonPaths) -> None:
    for path in (paths.info, paths.socket, paths.stdio_socket):
        path.unlink(missing_ok=True)
    log.info("stopped")
