"""The 2026-07-28 result envelope: ``resultType``, the serverInfo ``_meta``
key, and the cache hints of cacheable results (design record §2.3, SEP-2549).

Invariants:
- every modern result says its ``resultType``: ``"complete"`` unless it
  already says ``"input_required"`` or ``"task"``;
- every modern result names the server in
  ``_meta["io.modelcontextprotocol/serverInfo"]``;
- a complete cacheable result carries the REQUIRED ``ttlMs`` (integer
  milliseconds) and ``cacheScope``; an interim answer (``input_required``, a
  task) carries no hints, because it is not the answer to cache;
- the input is not edited: a new dict comes back.

Scopes: lists that follow configuration rather than the caller are
``public``; ``resources/list`` includes the caller's own session artifacts and
``resources/read`` returns them, so both are ``private``.
"""

from __future__ import annotations

from typing import Any, Final

from mcpx.spec import RELATED_TASK

from ._copy_on_write import JSON, without

__all__ = ["CACHE_SCOPES", "envelope", "unrelated"]

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
_KEEP_TYPES: Final = frozenset({"input_required", "task"})

# Method -> (cacheScope, which age setting applies).
CACHE_SCOPES: Final = {
    "server/discover": ("public", "list"),
    "tools/list": ("public", "list"),
    "prompts/list": ("public", "list"),
    "resources/templates/list": ("public", "list"),
    "resources/list": ("private", "list"),
    "resources/read": ("private", "read"),
}


def _ttl_ms(age_s: float) -> int:
    # ttlMs is an integer >= 0; a negative setting means "stale now".
    return max(0, round(age_s * 1000))


def _result_type(result: JSON) -> str:
    given = result.get("resultType")
    return given if given in _KEEP_TYPES else "complete"


def _with_server_info(meta: Any, server_info: JSON) -> JSON:
    base = meta if isinstance(meta, dict) else {}
    # mcpx is the server this peer talks to, whatever an upstream said it was.
    return {**base, SERVER_INFO_KEY: server_info}


def envelope(
    method: str,
    result: JSON,
    *,
    server_info: JSON,
    list_max_age_s: float,
    read_max_age_s: float,
) -> JSON:
    """``result`` with the 2026-07-28 envelope, as a new dict.

    Args:
        server_info: mcpx's ``Implementation`` (name and version at least).
        list_max_age_s: protoMessages.listMaxAge, for lists and discover.
        read_max_age_s: protoMessages.readMaxAge, for resources/read.
    """
    kind = _result_type(result)
    # A task's ttlMs (CreateTaskResult, tasks/*) is its lifetime, not a cache hint.
    tasky = kind == "task" or method.startswith("tasks/")
    out = without(result, ["cacheScope"] if tasky else ["ttlMs", "cacheScope"])
    out = {**out, "resultType": kind, "_meta": _with_server_info(out.get("_meta"), server_info)}
    scope = CACHE_SCOPES.get(method)
    if scope is not None and kind == "complete":
        name, age = scope
        out["ttlMs"] = _ttl_ms(read_max_age_s if age == "read" else list_max_age_s)
        out["cacheScope"] = name
    return out


def unrelated(result: JSON) -> JSON:
    """``result`` without the related-task ``_meta`` key (a copy; ``result`` itself when it
    has none): a task's result handed out as the call's own, where the task is no news."""
    meta = result.get("_meta")
    if not (isinstance(meta, dict) and RELATED_TASK in meta):
        return result
    rest = {k: v for k, v in meta.items() if k != RELATED_TASK}
    out = {k: v for k, v in result.items() if k != "_meta"}
    return out | ({"_meta": rest} if rest else {})
