"""``downgrade``: every result, built once in the newest shape, spelled for the
peer's revision at the edge.

Invariants (ARCHITECTURE principle 2, design record §2.3):
- the input is never edited. Stored task results are read many times; an
  in-place edit would downgrade them for every later reader;
- a revision that defines everything in the result gets the same object back
  (identity, no copy); an older one gets a new object whose changed parts are
  new containers, with unchanged subtrees shared (see ``_copy_on_write``);
- which revision defines what is the matrix's answer; the few rows it lacks
  are in ``_matrix_gaps``.

The envelope of 2026-07-28 (``resultType``, cache hints, the serverInfo
``_meta`` key) is removed here for older peers; ``_envelope`` adds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from mcpx import spec

from ._capabilities import capabilities_for
from ._copy_on_write import JSON, has, map_key, map_list, put, strip, without
from ._items import (
    block,
    implementation,
    prompt,
    prompt_message,
    resource,
    resource_contents,
    resource_template,
    tool,
)
from ._matrix_gaps import pending

__all__ = ["RESULT_DEFINITIONS", "downgrade", "downgrade_notification"]

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# Method -> the schema definition of its result (for matrix rows).
RESULT_DEFINITIONS: Final = {
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "completion/complete": "CompleteResult",
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
}

Body = Callable[[JSON, str], JSON]


def _list_of(key: str, item: Callable[[Any, str], Any]) -> Body:
    def body(result: JSON, rev: str) -> JSON:
        return map_key(result, key, lambda items: map_list(items, lambda x: item(x, rev)))

    return body


def _structured(result: JSON, rev: str) -> JSON:
    """``structuredContent``: absent before its floor; an object only, before SEP-2106."""
    if "structuredContent" not in result:
        return result
    value = result["structuredContent"]
    if has("CallToolResult.structuredContent", rev) and (
        isinstance(value, dict) or pending("CallToolResult.structuredContent[any]", rev)
    ):
        return result
    return _as_json_text(result, value)


def _as_json_text(result: JSON, value: Any) -> JSON:
    """``result`` without ``structuredContent``, its value kept as a JSON text block.

    Revisions with structured content asked tools to send the same JSON as text
    too, so a well-behaved result already has it; only a missing one is added.
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except RecursionError:  # an upstream's value nested ~1000 deep: no text can say it
        text = "[structuredContent omitted: nested too deep to be written as text]"
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    if not any(isinstance(b, dict) and b.get("text") == text for b in blocks):
        blocks = [*blocks, {"type": "text", "text": text}]
    return {**without(result, ["structuredContent"]), "content": blocks}


def _call_tool(result: JSON, rev: str) -> JSON:
    out = map_key(
        result, "content", lambda c: map_list(c, lambda b: block(b, "CallToolResult", rev))
    )
    return _structured(out, rev)


def _prompt_get(result: JSON, rev: str) -> JSON:
    return map_key(result, "messages", lambda ms: map_list(ms, lambda m: prompt_message(m, rev)))


def _read(result: JSON, rev: str) -> JSON:
    return map_key(result, "contents", lambda cs: map_list(cs, lambda c: resource_contents(c, rev)))


def _initialize(result: JSON, rev: str) -> JSON:
    out = map_key(result, "capabilities", lambda c: capabilities_for(c, rev))
    return map_key(out, "serverInfo", lambda i: implementation(i, rev))


def _discover(result: JSON, rev: str) -> JSON:
    return map_key(result, "capabilities", lambda c: capabilities_for(c, rev))


_BODIES: Final[dict[str, Body]] = {
    "tools/list": _list_of("tools", tool),
    "tools/call": _call_tool,
    # Only a tools/call is run as a core task: its result comes back as one.
    "tasks/result": _call_tool,
    "prompts/list": _list_of("prompts", prompt),
    "prompts/get": _prompt_get,
    "resources/list": _list_of("resources", resource),
    "resources/templates/list": _list_of("resourceTemplates", resource_template),
    "resources/read": _read,
    "initialize": _initialize,
    "server/discover": _discover,
}


_CACHEABLE_ROWS: Final = frozenset(r.name for r in spec.rows("field") if r.name.endswith(".ttlMs"))


def _cache_hints_defined(method: str, rev: str) -> bool:
    definition = RESULT_DEFINITIONS.get(method)
    if definition == "DiscoverResult":
        return pending("DiscoverResult.ttlMs", rev)
    if definition is None or f"{definition}.ttlMs" not in _CACHEABLE_ROWS:
        return False
    return has(f"{definition}.ttlMs", rev)


def _meta(result: JSON, rev: str) -> JSON:
    """The result ``_meta``: the serverInfo key only where it is defined."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or SERVER_INFO_KEY not in meta:
        return result
    if pending(f"ResultMetaObject.{SERVER_INFO_KEY}", rev):
        info = implementation(meta[SERVER_INFO_KEY], rev)
        return put(result, "_meta", put(meta, SERVER_INFO_KEY, info))
    rest = without(meta, [SERVER_INFO_KEY])
    # An empty _meta says nothing; leave it out rather than send {}.
    return put(result, "_meta", rest) if rest else without(result, ["_meta"])


def _envelope(method: str, result: JSON, rev: str) -> JSON:
    out = strip(result, "Result", ("resultType",), rev)
    if not _cache_hints_defined(method, rev):
        # A task's ttlMs (CreateTaskResult, tasks/*) is its lifetime, not a cache hint.
        tasky = result.get("resultType") == "task" or method.startswith("tasks/")
        out = without(out, ["cacheScope"] if tasky else ["ttlMs", "cacheScope"])
    return _meta(out, rev)


# A CallToolResult of only these members (and a structuredContent object where ``rev``
# has one), each block a text block of only these, is spelled alike in every revision.
_PLAIN_RESULT: Final = frozenset({"content", "isError"})
_PLAIN_TEXT: Final = frozenset({"type", "text"})


def _plain_call_result(result: JSON, rev: str) -> bool:
    content = result.get("content")
    if not isinstance(content, list):
        return False
    if not result.keys() <= _PLAIN_RESULT and not (
        isinstance(result.get("structuredContent"), dict)
        and result.keys() - _PLAIN_RESULT == {"structuredContent"}
        and has("CallToolResult.structuredContent", rev)
    ):
        return False
    return all(
        isinstance(b, dict) and b.get("type") == "text" and b.keys() <= _PLAIN_TEXT for b in content
    )


def downgrade(method: str, result: JSON, rev: str, *, policy: spec.Policy | None = None) -> JSON:
    """``result`` (newest shape) answering ``method``, spelled for ``rev``.

    Returns ``result`` itself when ``rev`` defines everything in it, otherwise
    a new object; never edits ``result``. A method with no known body (e.g. an
    empty result) still loses the envelope fields ``rev`` lacks.

    Raises:
        UnknownRevisionError: ``rev`` is not a revision.
    """
    del policy  # no result-level conflict is precedence-governed today
    spec.parse_revision(rev, "downgrade")
    if method == "tools/call":
        if _plain_call_result(result, rev):
            return result  # most tool results: nothing in them any revision lacks
        if result.get("resultType") == "complete" and not has("Result.resultType", rev):
            # A newer server's plain result saying it is complete: the same, unsaid.
            told = without(result, ["resultType"])
            if _plain_call_result(told, rev):
                return told
    body = _BODIES.get(method)
    out = body(result, rev) if body is not None else result
    return _envelope(method, out, rev)


def downgrade_notification(
    method: str, params: JSON | None, rev: str, policy: spec.Policy | None = None
) -> JSON | None:
    """A server notification's ``params`` spelled for ``rev``; never edited in place.

    ``notifications/progress`` ``message``: 2024-11-05's schema lacks it, yet
    clients take it (design record §4.4). It is removed only when the peer's
    revision wins precedence and is held strictly (``--mcp-spec <rev>``).
    """
    spec.parse_revision(rev, "downgrade_notification")
    if params is None or method != "notifications/progress" or "message" not in params:
        return params
    if has("ProgressNotification.params.message", rev):
        return params
    policy = policy or spec.Policy()
    if policy.first() == rev and policy.strict(rev):
        return without(params, ["message"])
    return params
