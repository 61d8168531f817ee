"""Which revision each request is served as, and how a result is spelled for it.

The demo server is dual-era on one stdio connection: ``initialize`` picks a legacy revision
for the connection, and a request that restates itself in ``_meta`` is served statelessly as
2026-07-28. This module is the one place that decides which; the handlers only ever see the
answer (``Call.revision``) and ask the matrix (``mcpx.spec``) what that revision defines.

Invariants:

- A request is modern when its ``_meta`` names a protocol version or client capabilities, or
  when its method exists only in the modern era. It is served as the version it names, or
  refused: -32602 for a missing or malformed required key, -32022 for a version this
  server does not serve per request. Nothing from earlier requests is consulted.
- Any other request is served at the connection's negotiated revision, or at ``spec.OLDEST``
  on a connection that never initialized (the design record's "Oldest": guessing down is
  recoverable, guessing up is not).
- A method the revision in force removed is -32601: the "accept liberally" rule stops at
  removal.
- ``finish`` is the only place results gain the 2026-07-28 envelope (``resultType``, the
  ``serverInfo`` ``_meta``, ``ttlMs``/``cacheScope``), and only for a revision defining it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from mcpx import __version__, spec, wire
from mcpx.config import LOG_LEVELS as CONFIG_LOG_LEVELS

__all__ = [
    "LOG_LEVELS",
    "Call",
    "Session",
    "capabilities",
    "finish",
    "gate",
    "read_call",
    "server_info",
    "titled",
]

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

# Any of these in a request's _meta means the client meant it as a modern request, so a
# missing required key is its mistake (-32602), not a sign that it is legacy.
_MODERN_KEYS: Final = (PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL)

# RFC 5424 severities, least severe first: a level admits itself and everything after it.
LOG_LEVELS: Final = CONFIG_LOG_LEVELS

# Error responses without an id (the request's id could not be read) are valid from this
# revision on; the older schemas require an id and none of them allows null.
_IDLESS_ERRORS_FROM: Final = "2025-11-25"
# The one revision whose stdio lines may carry a JSON-RPC batch.
_BATCH_REVISION: Final = "2025-03-26"

NAME: Final = "mcpx-demo"
TITLE: Final = "mcpx demo server"

# Cache hints for the cacheable 2026-07-28 results: (result type, ttlMs, cacheScope).
# Lists and discovery depend only on this program, never on the caller, so any cache may
# share them; reads are "private" as the design record asks, since a read answers one caller.
_CACHE: Final[dict[str, tuple[str, int, str]]] = {
    "server/discover": ("DiscoverResult", 60_000, "public"),
    "tools/list": ("ListToolsResult", 60_000, "public"),
    "prompts/list": ("ListPromptsResult", 60_000, "public"),
    "resources/list": ("ListResourcesResult", 60_000, "private"),
    "resources/templates/list": ("ListResourceTemplatesResult", 60_000, "public"),
    "resources/read": ("ReadResourceResult", 0, "private"),
}


@dataclass
class Session:
    """What one stdio connection remembers: only legacy state, never a modern request's."""

    revision: str | None = None  # negotiated by initialize; None until then
    log_level: str | None = None  # set by logging/setLevel; None sends no log messages
    served_modern: bool = False  # a modern request arrived; used only to frame errors

    def unreadable_revision(self) -> str:
        """The revision to frame an answer in when the frame declared nothing readable.

        A connection that negotiated is that revision. One that never did but has spoken
        2026-07-28 is a modern client (modern clients never initialize); otherwise Oldest.
        """
        if self.revision is not None:
            return self.revision
        return spec.NEWEST if self.served_modern else spec.OLDEST

    def idless_errors(self) -> bool:
        """Whether an error without an id may be sent on this connection."""
        return spec.at_or_after(self.unreadable_revision(), _IDLESS_ERRORS_FROM)

    def batches(self) -> bool:
        """Whether a JSON array line is a batch here (only after a 2025-03-26 handshake)."""
        return self.revision is not None and spec.only(self.revision, _BATCH_REVISION)


@dataclass(frozen=True, slots=True)
class Call:
    """One request, judged: everything a handler may know about who asked and how."""

    request_id: wire.RequestId
    method: str
    params: dict[str, Any]
    revision: str
    progress_token: wire.RequestId | None
    log_level: str | None

    @property
    def modern(self) -> bool:
        return spec.era_of(self.revision) is spec.Era.MODERN


def read_call(
    request_id: wire.RequestId, method: str, params: dict[str, Any], session: Session
) -> Call:
    """Judge a request: the revision it is served as, its progress token and log level.

    Raises:
        InvalidParams: a modern request lacks a required ``_meta`` key or has a bad one.
        UnsupportedProtocolVersion: it names a version not served per request.
    """
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    token = _progress_token(meta.get("progressToken"))
    if not (any(key in meta for key in _MODERN_KEYS) or _modern_only(method)):
        revision = session.revision or spec.OLDEST
        return Call(request_id, method, params, revision, token, session.log_level)
    session.served_modern = True
    revision = _modern_revision(meta)
    return Call(request_id, method, params, revision, token, _log_level(meta))


def gate(call: Call) -> None:
    """Refuse a method the revision in force removed.

    Raises:
        MethodNotFound: ``call.revision`` removed ``call.method``.
    """
    if spec.removed("request", call.method, call.revision, "client"):
        raise wire.MethodNotFound(f"{call.method} is not part of {call.revision}")


def finish(call: Call, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` spelled for ``call.revision``: the modern envelope added where defined."""
    if not call.modern:
        return result
    if spec.defined("field", "Result.resultType", call.revision):
        result["resultType"] = "complete"
    cache = _CACHE.get(call.method)
    if cache is not None and _cacheable(cache[0], call.revision):
        result["ttlMs"], result["cacheScope"] = cache[1], cache[2]
    result["_meta"] = {**result.get("_meta", {}), SERVER_INFO: server_info(call.revision)}
    return result


def server_info(revision: str) -> dict[str, Any]:
    """The ``Implementation`` of this server, with ``title`` where the revision has it."""
    return titled({"name": NAME, "version": __version__}, "Implementation", TITLE, revision)


def capabilities(revision: str) -> dict[str, Any]:
    """What this server declares: no list ever changes and nothing is subscribable, so no
    ``listChanged`` or ``subscribe``; ``completions`` only where the revision defines it."""
    declared: dict[str, Any] = {"tools": {}, "prompts": {}, "resources": {}, "logging": {}}
    if spec.defined("capability", "completions", revision, "server"):
        declared["completions"] = {}
    return declared


def titled(obj: dict[str, Any], definition: str, title: str, revision: str) -> dict[str, Any]:
    """``obj`` with ``title`` added when ``definition.title`` exists in ``revision``."""
    if spec.defined("field", f"{definition}.title", revision):
        obj["title"] = title
    return obj


def _cacheable(result_type: str, revision: str) -> bool:
    # DiscoverResult has no matrix row: it exists only in revisions that have the hints.
    if result_type == "DiscoverResult":
        return True
    return spec.defined("field", f"{result_type}.ttlMs", revision)


def _modern_only(method: str) -> bool:
    # A method no legacy revision has can only be meant as a modern request.
    newest = spec.defined("request", method, spec.NEWEST, "client")
    return newest and not any(spec.defined("request", method, r, "client") for r in spec.LEGACY)


def _modern_revision(meta: dict[str, Any]) -> str:
    if PROTOCOL_VERSION not in meta:
        raise wire.InvalidParams(f'a 2026-07-28 request needs _meta["{PROTOCOL_VERSION}"]')
    declared = meta[PROTOCOL_VERSION]
    if not (isinstance(declared, str) and declared in spec.MODERN):
        # Legacy revisions are negotiated with initialize, never named per request.
        shown = declared if isinstance(declared, str) else wire.dumps(declared).decode()
        raise wire.UnsupportedProtocolVersion.for_versions(spec.MODERN, shown[:40])
    if not isinstance(meta.get(CLIENT_CAPABILITIES), dict):
        raise wire.InvalidParams(
            f'a {declared} request needs _meta["{CLIENT_CAPABILITIES}"] as an object'
        )
    return declared


def _log_level(meta: dict[str, Any]) -> str | None:
    level = meta.get(LOG_LEVEL)
    if level is None:
        return None
    if level in LOG_LEVELS:
        return str(level)
    raise wire.InvalidParams(f'_meta["{LOG_LEVEL}"] must be one of {", ".join(LOG_LEVELS)}')


def _progress_token(value: object) -> wire.RequestId | None:
    # A token of the wrong type cannot be echoed in a valid notification: no progress then.
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None
