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

import platformdirs

from mcpx.spec import REVISIONS

from ._kinds import (
    BooleanKind,
    ChoiceKind,
    DurationKind,
    IntegerKind,
    RevisionKind,
    RevisionListKind,
    StringKind,
    StringListKind,
)
from ._setting import Computed, Setting, unknown_setting

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
# Who may use the daemon's TCP port (daemon.auth); the unix socket is the user's own.
AUTH_MODES: Final = ("none", "token", "oauth")
# The MCP logging levels (RFC 5424 severities), least severe first.
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

_DURATION: Final = DurationKind()
_BOOLEAN: Final = BooleanKind()
_STRINGS: Final = StringListKind()
_REVISIONS: Final = RevisionListKind()


def _duration(name: str, default: str, doc: str) -> Setting:
    # Defaults are written as a user would write them and parsed once, here.
    return Setting(name, _DURATION, _DURATION.parse(default), doc)


def _integer(name: str, default: int, doc: str, minimum: int | None = None) -> Setting:
    return Setting(name, IntegerKind(minimum), default, doc)


def _flag(name: str, doc: str) -> Setting:
    return Setting(name, _BOOLEAN, False, doc)


def _oauth(name: str, doc: str) -> Setting:
    return Setting(
        f"daemon.oauth.{name}", StringKind(allow_empty=True), "", "daemon.auth=oauth: " + doc
    )


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


def _state_dir() -> str:
    return platformdirs.user_state_dir("mcpx")


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
    _duration(
        "pool.callTimeout",
        "120s",
        "Longest one upstream call may run; paused while a question is pending.",
    ),
    _duration(
        "pool.startTimeout", "60s", "Longest an upstream server may take to start and answer."
    ),
    _duration("pool.idleTimeout", "5m", "How long an unused upstream instance is kept warm."),
    _integer("pool.max", 4, "Most instances of one upstream server running at once.", 1),
    _duration(
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
    _duration(
        "upstream.probeTimeout", "2s", "How long the era probe waits before trying the other."
    ),
    Setting(
        "upstream.eraCache",
        _BOOLEAN,
        True,
        "Remember each upstream's era per server configuration, in memory and in state.dir.",
    ),
    Setting(
        "proto.native",
        _BOOLEAN,
        True,
        "Ask the calling host first when an upstream elicits or samples; the broker is the "
        "fallback.",
    ),
    _duration("proto.askTimeout", "10m", "How long one client request may be held asking."),
    _integer("proto.askRounds", 8, "How many times one call may come back asking.", 1),
    _integer(
        "proto.questionsOpen",
        16,
        "How many sampling and elicitation questions one server may have open at once.",
        1,
    ),
    _integer(
        "proto.questionRate",
        5,
        "How many questions a second one server may put, on average (bursts of 4 times it).",
        1,
    ),
    _duration(
        "proto.askTTL",
        "15m",
        "How long a parked call waits for an answer, and then how long its result is kept.",
    ),
    _duration("proto.stateTTL", "30m", "How long a requestState may be resumed with."),
    _duration("proto.sessionIdle", "30m", "How long an idle client session's state is kept."),
    _integer(
        "proto.maxSessions",
        10000,
        "Most legacy /mcp sessions kept at once; a new one ends the least recently used idle "
        "session (503 when none is idle).",
        1,
    ),
    _integer(
        "proto.maxSessionStreams",
        4,
        "Most GET event streams one legacy /mcp session may hold open (409 beyond).",
        1,
    ),
    _integer(
        "proto.maxConcurrentCalls",
        64,
        "Most requests one client (a legacy /mcp session, a stdio host) may have running at "
        "once; on /mcp one more is refused (429), a batch's and a stdio host's wait in line.",
        1,
    ),
    _integer(
        "proto.maxBatch",
        64,
        "Most messages in one 2025-03-26 JSON-RPC batch (a longer one is refused whole), and "
        "most batched requests one client may have waiting or running.",
        1,
    ),
    _integer(
        "proto.maxSubscriptions",
        1024,
        "Most resource URIs one client connection may subscribe to.",
        1,
    ),
    _integer(
        "proto.maxTasks",
        1024,
        "Most calls running as tasks (outliving their request) at once, and most finished "
        "ones kept.",
        1,
    ),
    _duration(
        "protoMessages.listMaxAge",
        "1m",
        "ttlMs of list results (public cache scope) sent to 2026-07-28 clients.",
    ),
    _duration(
        "protoMessages.readMaxAge",
        "0s",
        "ttlMs of resources/read results (private cache scope) sent to 2026-07-28 clients.",
    ),
    _duration(
        "protoMessages.taskAfter",
        "2s",
        "How long a call to a tool that declared no task support runs before it becomes a task.",
    ),
    _duration(
        "transport.sseKeepAlive",
        "15s",
        "Silence after which a slow POST turns into an event stream, and its keep-alive interval.",
    ),
    _duration(
        "transport.stdioDrain",
        "30s",
        "When a stdio host's input ends, how long its requests in flight get to answer.",
    ),
    Setting(
        "transport.allowedOrigins",
        _STRINGS,
        (),
        "Origins allowed on HTTP requests besides loopback and the daemon's own address.",
    ),
    Setting(
        "transport.allowedHosts",
        _STRINGS,
        (),
        "Host headers the TCP port accepts besides loopback names and its own address, each "
        "host (any port) or host:port: the names a proxy or another machine reaches it by.",
    ),
    _integer("mcp.pageSize", 100, "Items per page of the list results mcpx serves.", 1),
    Setting(
        "mcp.passthrough",
        _STRINGS,
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
    _integer("events.history", 1024, "Events kept for replay on /v1/events.", 0),
    _integer("events.maxSubscribers", 64, "Most /v1/events streams open at once (503 beyond).", 1),
    _duration("exec.timeout", "120s", "Longest one script run (mcpx_exec) may take."),
    _integer(
        "http.maxBody",
        16 * 1024 * 1024,
        "Largest request body of /mcp, /v1/call, /v1/prompts/get and question answers; a "
        "larger one is refused (413) before it is read.",
        1,
    ),
    _integer(
        "http.maxSmallBody",
        64 * 1024,
        "Largest request body of every other route (413 beyond).",
        1,
    ),
    _integer(
        "http.maxHeaderBytes",
        64 * 1024,
        "Largest request head, its request line and header fields (431 beyond).",
        1024,
    ),
    _integer("http.maxHeaders", 100, "Most header fields one request may carry (431 beyond).", 1),
    Setting(
        "daemon.port",
        IntegerKind(0, 65535),
        0,
        "TCP port the daemon listens on; 0 picks a free one.",
        aliases=("--port",),
    ),
    Setting(
        "daemon.address",
        StringKind(allow_empty=False),
        "127.0.0.1",
        "Address the daemon listens on; beyond loopback, whoever can reach it can run tools.",
        aliases=("--address",),
    ),
    Setting(
        "daemon.auth",
        ChoiceKind(AUTH_MODES),
        "none",
        "Who may use the TCP port: none (anyone who reaches it; loopback only), token "
        "(Authorization: Bearer, one of daemon.tokens) or oauth (access tokens of "
        "daemon.oauth.issuer). The unix socket needs none.",
    ),
    Setting(
        "daemon.tokens",
        _STRINGS,
        (),
        "Names of the bearer tokens daemon.auth=token accepts, never the tokens: NAME reads "
        "MCPX_TOKEN_NAME, NAME=VAR reads $VAR (upper case); each at least 32 characters.",
    ),
    _oauth("issuer", "the authorization server whose tokens the port accepts (iss)."),
    _oauth(
        "resource",
        "this daemon's resource URI, the audience its tokens name; empty: "
        "http://ADDRESS:PORT/mcp as the request reached the port.",
    ),
    _oauth("jwksUri", "the issuer's keys; empty: jwks_uri of its RFC 8414/OpenID metadata."),
    _oauth(
        "introspectionUrl",
        "check tokens by RFC 7662 introspection there instead of as JWTs (as clientId).",
    ),
    _oauth("clientId", "the client id mcpx introspects tokens as."),
    _oauth("clientSecretEnv", "the variable holding that client's secret (never the secret)."),
    Setting("daemon.oauth.scopes", _STRINGS, (), "daemon.auth=oauth: scopes a token must carry."),
    Setting(
        "daemon.oauth.algorithms",
        _STRINGS,
        ("RS256", "ES256"),
        "daemon.auth=oauth: JWT signature algorithms accepted (never none).",
    ),
    Setting(
        "daemon.insecureNoAuth",
        _BOOLEAN,
        False,
        "Listen beyond loopback with daemon.auth=none: whoever reaches the port can run "
        "tools as you. Warned about at every start.",
        aliases=("--insecure-no-auth",),
    ),
    _duration(
        "daemon.configPoll",
        "2s",
        "How often the daemon looks at its config file: a server added, changed or removed "
        "there takes effect without a restart (0: never; settings still need one).",
    ),
    _duration(
        "daemon.stopGrace",
        "3s",
        "When the daemon stops, how long calls in flight get to finish before they are "
        "ended with an error.",
    ),
    Setting(
        "log.level",
        ChoiceKind(LOG_LEVELS),
        "info",
        "Least severe MCP logging level that is logged.",
    ),
    Setting(
        "log.frames",
        StringKind(allow_empty=True),
        "",
        "File the daemon appends every MCP frame it sends a host to, as JSON lines "
        "(revision, frame); empty: off. For debugging and the test suite's schema sweep.",
    ),
    Setting(
        "log.payloads",
        _BOOLEAN,
        False,
        "Keep calls' arguments and results in the call log (<state>/calls.db); values of "
        "keys that look secret (token, password, key …) are hidden either way.",
    ),
    _integer("log.keep", 7, "Days the call log keeps a call.", minimum=0),
    _integer("log.keepRows", 100_000, "Calls the call log keeps at most.", minimum=1),
    _flag("telemetry.enabled", "Export OpenTelemetry traces and metrics without OTEL_* set."),
    _flag("telemetry.payloads", "Tool arguments and results on spans, secret-looking keys hidden."),
    Setting(
        "state.dir",
        StringKind(allow_empty=False),
        # Computed when settings are resolved: platformdirs reads the environment
        # (XDG_STATE_HOME), which may change between import and use.
        Computed(_state_dir, "the platform's user state directory for mcpx"),
        "Directory of the daemon's state (era cache, socket); created with mode 0700.",
    ),
)

SETTINGS: Final[Mapping[str, Setting]] = _declare(_SEED)

_BY_FLAG: Final = MappingProxyType({flag: s for s in _SEED for flag in s.flags})


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
