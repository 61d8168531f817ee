"""The daemon's own settings (events, scripts, HTTP limits, the daemon, its log and
telemetry, the state dir), declared in display order after the protocol's (``_registry``)."""

from __future__ import annotations

from typing import Final

import platformdirs

from ._kinds import ChoiceKind, IntegerKind, StringKind
from ._setting import Computed, Setting
from ._setting_makers import BOOLEAN, STRING_LIST, duration, flag, integer

__all__ = ["AUTH_MODES", "DAEMON_SETTINGS", "LOG_LEVELS"]

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


def _oauth(name: str, doc: str) -> Setting:
    return Setting(
        f"daemon.oauth.{name}", StringKind(allow_empty=True), "", "daemon.auth=oauth: " + doc
    )


def _state_dir() -> str:
    return platformdirs.user_state_dir("mcpx")


DAEMON_SETTINGS: Final[tuple[Setting, ...]] = (
    integer("events.history", 1024, "Events kept for replay on /v1/events.", 0),
    integer("events.maxSubscribers", 64, "Most /v1/events streams open at once (503 beyond).", 1),
    duration("exec.timeout", "120s", "Longest one script run (mcpx_exec) may take."),
    duration(
        "exec.maxTimeout",
        "1h",
        "Longest run a caller may ask for with timeoutSec (a script that waits for a person).",
    ),
    integer(
        "exec.maxOutput",
        1024 * 1024,
        "Bytes of a script's stdout kept (and as many of its stderr); the rest is cut, "
        "saying how much.",
        1,
    ),
    integer("exec.memory", 1024 * 1024 * 1024, "A script's address space, bytes (RLIMIT_AS).", 1),
    integer("exec.processes", 64, "Processes a script may run at once (RLIMIT_NPROC).", 1),
    integer("exec.maxRuns", 16, "Scripts the daemon runs at once (429 beyond).", 1),
    Setting(
        "exec.sandbox",
        ChoiceKind(("auto", "bwrap", "none")),
        "auto",
        "How scripts are confined: bwrap (bubblewrap: no network, no home, no state dir), "
        "none, or auto (bwrap where installed; without it mcpx_exec is refused to MCP hosts, "
        "and mcpx exec at a terminal runs unconfined with a warning).",
    ),
    integer(
        "http.maxBody",
        16 * 1024 * 1024,
        "Largest request body of /mcp, /v1/call, /v1/prompts/get and question answers; a "
        "larger one is refused (413) before it is read.",
        1,
    ),
    integer(
        "http.maxSmallBody",
        64 * 1024,
        "Largest request body of every other route (413 beyond).",
        1,
    ),
    integer(
        "http.maxHeaderBytes",
        64 * 1024,
        "Largest request head, its request line and header fields (431 beyond).",
        1024,
    ),
    integer("http.maxHeaders", 100, "Most header fields one request may carry (431 beyond).", 1),
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
        STRING_LIST,
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
    Setting(
        "daemon.oauth.scopes", STRING_LIST, (), "daemon.auth=oauth: scopes a token must carry."
    ),
    Setting(
        "daemon.oauth.algorithms",
        STRING_LIST,
        ("RS256", "ES256"),
        "daemon.auth=oauth: JWT signature algorithms accepted (never none).",
    ),
    Setting(
        "daemon.insecureNoAuth",
        BOOLEAN,
        False,
        "Listen beyond loopback with daemon.auth=none: whoever reaches the port can run "
        "tools as you. Warned about at every start.",
        aliases=("--insecure-no-auth",),
    ),
    Setting(
        "daemon.endpoint",
        StringKind(allow_empty=True),
        "",
        "The daemon every command talks to: unix:///path/mcpx.sock, http(s)://host:port "
        "(bearer token from $MCPX_DAEMON_TOKEN) or ssh://[user@]host[:port]; empty: this "
        "state dir's own (started on demand). One configured is never replaced by a local one.",
        aliases=("--daemon",),
    ),
    Setting(
        "daemon.sshCommand",
        StringKind(allow_empty=False),
        "ssh",
        "The ssh client a ssh:// daemon.endpoint runs, split as a shell would (ssh -F FILE).",
    ),
    duration(
        "daemon.configPoll",
        "2s",
        "How often the daemon looks at its config file: a server added, changed or removed "
        "there takes effect without a restart (0: never; settings still need one).",
    ),
    duration(
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
        BOOLEAN,
        False,
        "Keep calls' arguments and results in the call log (<state>/calls.db); values of "
        "keys that look secret (token, password, key …) are hidden either way.",
    ),
    integer("log.keep", 7, "Days the call log keeps a call.", minimum=0),
    integer("log.keepRows", 100_000, "Calls the call log keeps at most.", minimum=1),
    flag("telemetry.enabled", "Export OpenTelemetry traces and metrics without OTEL_* set."),
    flag("telemetry.payloads", "Tool arguments and results on spans, secret-looking keys hidden."),
    Setting(
        "state.dir",
        StringKind(allow_empty=False),
        # Computed when settings are resolved: platformdirs reads the environment
        # (XDG_STATE_HOME), which may change between import and use.
        Computed(_state_dir, "the platform's user state directory for mcpx"),
        "Directory of the daemon's state (era cache, socket); created with mode 0700.",
    ),
)
