"""What every operation handler is given: the pool, the catalogue, the settings."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpx import __version__
from mcpx.config import ServerConfig, Settings, UnknownProfile, profile_reach
from mcpx.events import EventBus
from mcpx.pool import Pool
from mcpx.questions import Broker, CallsInFlight, HostAsker, Notify, StateSigner
from mcpx.tasks import Tasks

from ._call_record import Caller, CallRecorder
from ._catalogue import Catalogue
from ._errors import OpError

if TYPE_CHECKING:
    from ._telemetry import Telemetry

__all__ = ["OpContext", "profiled"]


@dataclass
class OpContext:
    pool: Pool
    catalogue: Catalogue
    settings: Settings
    version: str = __version__
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)
    extra: dict[str, Any] = field(default_factory=dict)
    # Who the request is from: the pool's scope for servers with scope "identity".
    # A per-request copy carries it (dataclasses.replace); the daemon's own has None.
    identity: str | None = None
    # A 2026-07-28 host's declared capabilities, for its request: mcpx declares no more
    # than these to a modern upstream on its behalf. None: no host to narrow by.
    host_capabilities: dict[str, Any] | None = None
    # Upstream notifications during calls, back to their hosts (one per daemon).
    calls: CallsInFlight = field(default_factory=CallsInFlight)
    # Per request: how to tell its host something now (None: it cannot be told), the
    # log level the host asked for, and the host's own _meta (trace context, token).
    notify: Notify | None = None
    log_level: str | None = None
    caller_meta: dict[str, Any] | None = None
    # The durable question store.
    broker: Broker | None = None
    # Calls that outlive their request; None: none can.
    tasks: Tasks | None = None
    # Signs and checks 2026-07-28 hosts' requestState.
    signer: StateSigner | None = None
    # How the request's host can be asked an upstream's question (None: it cannot).
    asker: HostAsker | None = None
    # The script run (``mcpx_exec``) this request is a call of (None: its own caller's).
    run: str | None = None
    # The daemon's own unix socket, where a script's calls come back (None: the state
    # dir's, as the settings say).
    socket: Path | None = None
    # This connection's own mcp.passthrough (``mcpx serve --passthrough``); None: the
    # daemon's setting.
    passthrough: tuple[str, ...] | None = None
    # The hosts connected now (mcpx.server.Audience), for what is pushed to them: the
    # server's object, which ops only carries (typed where it is used, above ops).
    audience: Any = None
    # The daemon's event bus, where warnings and updates are published.
    events: EventBus | None = None
    # Sees every frame the server side sends a host: the revision it was spelled for
    # (None when none was judged yet), the frame, the method a result answers.
    trace: Callable[[str | None, Mapping[str, Any], str | None], None] | None = None

    # Who the request came from and through which door (None: the daemon itself), and
    # where each finished upstream call is recorded (the call log; None: nowhere).
    caller: Caller | None = None
    recorder: CallRecorder | None = None
    # Spans and metrics (ops._telemetry); None: none are made (the CLI, tests).
    telemetry: Telemetry | None = None

    # The profile bounding what this request reaches (None: every configured server).
    # Checked where the request came in: a name no server lists was refused there.
    profile: str | None = None

    def evolve(self, **changes: Any) -> OpContext:
        """A copy with ``changes``: ``dataclasses.replace`` for the per-request paths,
        without its cost (it reads every field and runs ``__init__``, 4 µs a copy, and a
        forwarded call makes two).

        Raises:
            TypeError: a name that is not a field.
        """
        if not _FIELDS.issuperset(changes):
            raise TypeError(f"OpContext has no field {sorted(set(changes) - _FIELDS)}")
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(changes)
        return copy

    def reach(self) -> frozenset[str] | None:
        """The servers this request may reach (None: all), as the config says now."""
        if self.profile is None:
            return None
        return _reach(self.pool.servers, self.profile)

    def visible(self, server: str) -> bool:
        """Whether ``server`` is configured and in this request's profile."""
        reach = self.reach()
        return server in self.pool.servers and (reach is None or server in reach)

    def server_names(self) -> list[str]:
        """The servers this request may reach, by name."""
        reach = self.reach()
        return sorted(s for s in self.pool.servers if reach is None or s in reach)

    def uptime(self) -> float:
        return round(time.time() - self.started, 3)


_FIELDS = frozenset(f.name for f in dataclasses.fields(OpContext))


def profiled(ctx: OpContext, profile: str | None) -> OpContext:
    """``ctx`` bounded by ``profile`` (None or empty: as it is).

    Raises:
        OpError: 400 ``unknown_profile``, naming the profiles there are.
    """
    if not profile:
        return ctx
    try:
        profile_reach(ctx.pool.servers, profile)
    except UnknownProfile as exc:
        raise OpError(400, "unknown_profile", str(exc), {"known": exc.known}) from exc
    return dataclasses.replace(ctx, profile=profile)


# Per profile: the servers mapping it was worked out from, and the reach. The mapping is
# replaced (never changed) when the config reloads, so "is" tells a stale entry.
_REACHES: dict[str, tuple[Mapping[str, ServerConfig], frozenset[str]]] = {}


def _reach(servers: Mapping[str, ServerConfig], profile: str) -> frozenset[str]:
    known = _REACHES.get(profile)
    if known is not None and known[0] is servers:
        return known[1]
    try:
        reach = profile_reach(servers, profile)
    except ValueError:
        reach = frozenset()  # the profile went with a reload: it reaches nothing now
    if len(_REACHES) >= 64:
        _REACHES.clear()
    _REACHES[profile] = (servers, reach)
    return reach
