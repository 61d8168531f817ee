"""The settings registry: every named setting mcpx has, declared once, in display order.

Invariants: ``SETTINGS`` is read-only and ordered as declared here; no two settings share a
name, an environment variable or a flag (aliases included), and none takes the names the
config file's own selection uses (``--config``, ``MCPX_CONFIG``). Both are checked when this
module is imported, so a clash is a failed import, not a surprise at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from mcpx.spec import REVISIONS

from ._daemon_settings import AUTH_MODES, DAEMON_SETTINGS, LOG_LEVELS
from ._kinds import (
    ChoiceKind,
    IntegerKind,
    RevisionKind,
    RevisionListKind,
    StringKind,
)
from ._setting import Setting, unknown_setting
from ._setting_makers import BOOLEAN, STRING_LIST, duration, integer

__all__ = [
    "AUTH_MODES",
    "CONFIG_ENV",
    "CONFIG_FLAG",
    "LOG_LEVELS",
    "SETTINGS",
    "SURFACES",
    "UPSTREAM_PROTOCOLS",
    "by_flag",
    "setting",
]

# The config file is chosen before settings exist, so its names are not settings.
CONFIG_ENV: Final = "MCPX_CONFIG"
CONFIG_FLAG: Final = "--config"

# What tools/list offers MCP hosts (mcp.surface).
SURFACES: Final = ("gateway", "lean", "full")
UPSTREAM_PROTOCOLS: Final = (
    "prefer-discover",
    "prefer-initialize",
    "force-discover",
    "force-initialize",
)

_REVISIONS: Final = RevisionListKind()


def _declare(settings: Iterable[Setting]) -> Mapping[str, Setting]:
    registry: dict[str, Setting] = {}
    taken: dict[str, str] = {CONFIG_ENV: "the config file", CONFIG_FLAG: "the config file"}
    for s in settings:
        for spelled in (s.name, *s.envs, *s.flags):
            if spelled in taken:
                raise ValueError(f"{s.name}: {spelled} is already {taken[spelled]}'s")
            taken[spelled] = s.name
        registry[s.name] = s
    return MappingProxyType(registry)


_SEED: Final[tuple[Setting, ...]] = (
    Setting(
        "spec.precedence",
        _REVISIONS,
        tuple(reversed(REVISIONS)),
        "Revisions in the order their rules win a conflict the peer's revision does not "
        "settle; a partial list is completed with the rest, newest first.",
    ),
    Setting(
        "spec.first",
        RevisionKind(),
        None,
        "Move this revision to the front of spec.precedence.",
        aliases=("--mcp-spec", "MCPX_MCP_SPEC"),
    ),
    Setting("spec.lenient", _REVISIONS, (), "Revisions mcpx does not hold strictly."),
    duration(
        "pool.callTimeout",
        "120s",
        "Longest one upstream call may run; paused while a question is pending.",
    ),
    duration(
        "pool.startTimeout", "60s", "Longest an upstream server may take to start and answer."
    ),
    duration("pool.idleTimeout", "5m", "How long an unused upstream instance is kept warm."),
    integer("pool.max", 4, "Most instances of one upstream server running at once.", 1),
    duration(
        "pool.restartBackoff",
        "30s",
        "Longest pause before starting again an upstream that keeps failing at start or "
        "soon after; the pause doubles from 500ms up to this (0: no pause).",
    ),
    Setting(
        "pool.maxArguments",
        # Never above the 64 MiB frame the transports carry (transport.MAX_FRAME_BYTES),
        # with a MiB left for the rest of the frame.
        IntegerKind(1, 63 * 1024 * 1024),
        16 * 1024 * 1024,
        "Largest arguments (bytes of JSON) one tool call may send an upstream; a larger call "
        "is refused before it is sent.",
    ),
    Setting(
        "upstream.protocol",
        ChoiceKind(UPSTREAM_PROTOCOLS),
        "prefer-discover",
        "How an upstream's era is found: probe modern (server/discover) or legacy "
        "(initialize) first, or use only one.",
    ),
    duration(
        "upstream.probeTimeout", "2s", "How long the era probe waits before trying the other."
    ),
    Setting(
        "upstream.eraCache",
        BOOLEAN,
        True,
        "Remember each upstream's era per server configuration, in memory and in state.dir.",
    ),
    Setting(
        "proto.native",
        BOOLEAN,
        True,
        "Ask the calling host first when an upstream elicits or samples; the broker is the "
        "fallback.",
    ),
    duration("proto.askTimeout", "10m", "How long one client request may be held asking."),
    integer("proto.askRounds", 8, "How many times one call may come back asking.", 1),
    integer(
        "proto.questionsOpen",
        16,
        "How many sampling and elicitation questions one server may have open at once.",
        1,
    ),
    integer(
        "proto.questionRate",
        5,
        "How many questions a second one server may put, on average (bursts of 4 times it).",
        1,
    ),
    duration(
        "proto.askTTL",
        "15m",
        "How long a parked call waits for an answer, and then how long its result is kept.",
    ),
    duration("proto.stateTTL", "30m", "How long a requestState may be resumed with."),
    duration("proto.sessionIdle", "30m", "How long an idle client session's state is kept."),
    integer(
        "proto.maxSessions",
        10000,
        "Most legacy /mcp sessions kept at once; a new one ends the least recently used idle "
        "session (503 when none is idle).",
        1,
    ),
    integer(
        "proto.maxSessionStreams",
        4,
        "Most GET event streams one legacy /mcp session may hold open (409 beyond).",
        1,
    ),
    integer(
        "proto.maxConcurrentCalls",
        64,
        "Most requests one client (a legacy /mcp session, a stdio host) may have running at "
        "once; on /mcp one more is refused (429), a batch's and a stdio host's wait in line.",
        1,
    ),
    integer(
        "proto.maxBatch",
        64,
        "Most messages in one 2025-03-26 JSON-RPC batch (a longer one is refused whole), and "
        "most batched requests one client may have waiting or running.",
        1,
    ),
    integer(
        "proto.maxSubscriptions",
        1024,
        "Most resource URIs one client connection may subscribe to.",
        1,
    ),
    integer(
        "proto.maxTasks",
        1024,
        "Most calls running as tasks (outliving their request) at once, and most finished "
        "ones kept.",
        1,
    ),
    duration(
        "protoMessages.listMaxAge",
        "1m",
        "ttlMs of list results (public cache scope) sent to 2026-07-28 clients.",
    ),
    duration(
        "protoMessages.readMaxAge",
        "0s",
        "ttlMs of resources/read results (private cache scope) sent to 2026-07-28 clients.",
    ),
    duration(
        "protoMessages.taskAfter",
        "2s",
        "How long a call to a tool that declared no task support runs before it becomes a task.",
    ),
    duration(
        "transport.sseKeepAlive",
        "15s",
        "Silence after which a slow POST turns into an event stream, and its keep-alive interval.",
    ),
    duration(
        "transport.stdioDrain",
        "30s",
        "When a stdio host's input ends, how long its requests in flight get to answer.",
    ),
    duration(
        "transport.stdioAnswerWait",
        "50ms",
        "How long a stdio host's plain tools/call, sent upstream as its line is read, waits"
        " for a plain result before a task of its own serves it (its timeout counts from"
        " then).",
    ),
    Setting(
        "transport.allowedOrigins",
        STRING_LIST,
        (),
        "Origins allowed on HTTP requests besides loopback and the daemon's own address.",
    ),
    Setting(
        "transport.allowedHosts",
        STRING_LIST,
        (),
        "Host headers the TCP port accepts besides loopback names and its own address, each "
        "host (any port) or host:port: the names a proxy or another machine reaches it by.",
    ),
    integer("mcp.pageSize", 100, "Items per page of the list results mcpx serves.", 1),
    Setting(
        "mcp.passthrough",
        STRING_LIST,
        (),
        "Configured servers whose own tools, prompts and resources /mcp offers as themselves.",
        aliases=("--passthrough",),
    ),
    Setting(
        "mcp.profile",
        StringKind(allow_empty=True),
        "",
        "The profile MCP hosts get when they name none (empty: the default profile, "
        "every server whose mcpx.default holds).",
    ),
    Setting(
        "mcp.surface",
        ChoiceKind(SURFACES),
        "gateway",
        "What tools/list offers: gateway (mcpx's tools and pass-through servers), lean "
        "(only search, describe and call) or full (every upstream tool, prefixed).",
    ),
)

SETTINGS: Final[Mapping[str, Setting]] = _declare((*_SEED, *DAEMON_SETTINGS))

_BY_FLAG: Final = MappingProxyType({f: s for s in SETTINGS.values() for f in s.flags})


def setting(name: str) -> Setting:
    """The setting called ``name``.

    Raises:
        UnknownSettingError: no setting has that name (the message suggests a close one).
    """
    try:
        return SETTINGS[name]
    except KeyError:
        raise unknown_setting(name, SETTINGS) from None


def by_flag(flag: str) -> Setting:
    """The setting a flag (derived or alias, e.g. ``--port``) sets.

    Raises:
        UnknownSettingError: no setting has that flag (the message suggests a close one).
    """
    try:
        return _BY_FLAG[flag]
    except KeyError:
        raise unknown_setting(flag, _BY_FLAG, what="setting flag") from None
