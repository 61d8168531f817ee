"""The revision matrix as data: floor, ceiling and removal of every method,
capability and differing field.

Invariant: this table is the one place that says which revision defines what.
Code asks it (``defined``, ``removed``); ``GET /v1/protocol`` and ``mcpx
protocol`` serve it; documents defer to it. A test cross-checks every method
row against each official schema's request and notification unions, and every
capability and field row against the schema's definitions, so the data cannot
drift from the schemas.

Names:
- requests and notifications: the method, with a direction (``client`` sends
  it to a server, or ``server`` sends it to a client). The same method can have
  two rows: ``notifications/progress`` from a client ended with 2026-07-28,
  from a server it did not.
- ``input`` rows: what a 2026-07-28 server asks inside ``inputRequests``
  (not a JSON-RPC request on the wire).
- capabilities: a dotted path under ``ClientCapabilities`` or
  ``ServerCapabilities`` (direction ``client`` or ``server``).
- fields: ``Definition.property[.property…]``; a segment ``[type=x]`` names the
  union member of a content list whose ``type`` is ``x``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from ._policy import Policy
from ._revisions import HEADERLESS, NEWEST, OLDEST, REVISIONS, era_of, index

__all__ = [
    "MATRIX",
    "RELATED_TASK",
    "TASKS_EXTENSION",
    "Row",
    "defined",
    "protocol_json",
    "removed",
    "rows",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
# The _meta key that ties a message to its task (2025-11-25 core tasks).
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

_KINDS: Final = ("request", "notification", "input", "capability", "field")


@dataclass(frozen=True)
class Row:
    kind: str
    name: str
    direction: str | None
    floor: str
    removed_in: str | None = None
    note: str = ""
    extension: str | None = None

    @property
    def ceiling(self) -> str | None:
        """The last revision that defines it; None while the newest still does."""
        if self.removed_in is None:
            return None
        return REVISIONS[index(self.removed_in) - 1]

    def defined_in(self, rev: str) -> bool:
        i = index(rev)
        if i < index(self.floor):
            return False
        return self.removed_in is None or i < index(self.removed_in)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "direction": self.direction,
            "floor": self.floor,
            "ceiling": self.ceiling,
            "removedIn": self.removed_in,
            "revisions": [r for r in REVISIONS if self.defined_in(r)],
        }
        if self.extension:
            out["extension"] = self.extension
        if self.note:
            out["note"] = self.note
        return out


_V1, _V2, _V3, _V4, _V5 = REVISIONS
_C, _S = "client", "server"


def _methods(kind: str, direction: str, table: dict[str, tuple[str, str | None]]) -> list[Row]:
    return [Row(kind, name, direction, f, rm) for name, (f, rm) in table.items()]


# 2025-11-25 core tasks run both ways (a server can task-augment a
# client-hosted sampling or elicitation); the 2026 extension replaced them.
_TASKS_CORE: Final = {
    m: (_V4, _V5) for m in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
}


_REQUESTS: Final = [
    *_methods(
        "request",
        _C,
        {
            "initialize": (_V1, _V5),
            "ping": (_V1, _V5),
            "server/discover": (_V5, None),
            "subscriptions/listen": (_V5, None),
            "resources/list": (_V1, None),
            "resources/templates/list": (_V1, None),
            "resources/read": (_V1, None),
            "resources/subscribe": (_V1, _V5),
            "resources/unsubscribe": (_V1, _V5),
            "prompts/list": (_V1, None),
            "prompts/get": (_V1, None),
            "tools/list": (_V1, None),
            "tools/call": (_V1, None),
            "logging/setLevel": (_V1, _V5),
            "completion/complete": (_V1, None),
            **_TASKS_CORE,
        },
    ),
    *_methods(
        "request",
        _S,
        {
            "ping": (_V1, _V5),
            "sampling/createMessage": (_V1, _V5),
            "roots/list": (_V1, _V5),
            "elicitation/create": (_V3, _V5),
            **_TASKS_CORE,
        },
    ),
    # 2026-07-28: a server asks inside an input_required result instead.
    *_methods(
        "input",
        _S,
        {
            "sampling/createMessage": (_V5, None),
            "roots/list": (_V5, None),
            "elicitation/create": (_V5, None),
        },
    ),
    *(
        Row("request", m, _C, _V5, extension=TASKS_EXTENSION)
        for m in ("tasks/get", "tasks/update", "tasks/cancel")
    ),
]

_NOTIFICATIONS: Final = [
    *_methods(
        "notification",
        _C,
        {
            "notifications/cancelled": (_V1, None),
            "notifications/initialized": (_V1, _V5),
            "notifications/progress": (_V1, _V5),
            "notifications/roots/list_changed": (_V1, _V5),
            "notifications/tasks/status": (_V4, _V5),
        },
    ),
    *_methods(
        "notification",
        _S,
        {
            "notifications/cancelled": (_V1, None),
            "notifications/progress": (_V1, None),
            "notifications/message": (_V1, None),
            "notifications/resources/list_changed": (_V1, None),
            "notifications/resources/updated": (_V1, None),
            "notifications/prompts/list_changed": (_V1, None),
            "notifications/tools/list_changed": (_V1, None),
            "notifications/tasks/status": (_V4, _V5),
            "notifications/elicitation/complete": (_V4, _V5),
            "notifications/subscriptions/acknowledged": (_V5, None),
        },
    ),
    Row("notification", "notifications/tasks", _S, _V5, extension=TASKS_EXTENSION),
]

_CAPABILITIES: Final = [
    *_methods(
        "capability",
        _C,
        {
            "experimental": (_V1, None),
            "roots": (_V1, None),
            "roots.listChanged": (_V1, _V5),
            "sampling": (_V1, None),
            "sampling.context": (_V4, None),
            "sampling.tools": (_V4, None),
            "elicitation": (_V3, None),
            "elicitation.form": (_V4, None),
            "elicitation.url": (_V4, None),
            "tasks": (_V4, _V5),
            "extensions": (_V5, None),
        },
    ),
    *_methods(
        "capability",
        _S,
        {
            "experimental": (_V1, None),
            "logging": (_V1, None),
            "prompts": (_V1, None),
            "prompts.listChanged": (_V1, None),
            "resources": (_V1, None),
            "resources.subscribe": (_V1, None),
            "resources.listChanged": (_V1, None),
            "tools": (_V1, None),
            "tools.listChanged": (_V1, None),
            "completions": (_V2, None),
            "tasks": (_V4, _V5),
            "extensions": (_V5, None),
        },
    ),
]


def _fields(table: dict[str, tuple[str, str | None]]) -> list[Row]:
    return [Row("field", name, None, f, rm) for name, (f, rm) in table.items()]


_CACHEABLE: Final = (
    "ListToolsResult",
    "ListPromptsResult",
    "ListResourcesResult",
    "ListResourceTemplatesResult",
    "ReadResourceResult",
)

_FIELDS: Final = _fields(
    {
        # Content blocks.
        "CallToolResult.content[type=audio]": (_V2, None),
        "CallToolResult.content[type=resource_link]": (_V3, None),
        "PromptMessage.content[type=audio]": (_V2, None),
        "PromptMessage.content[type=resource_link]": (_V3, None),
        "SamplingMessage.content[type=audio]": (_V2, None),
        "SamplingMessage.content[type=tool_use]": (_V4, None),
        "SamplingMessage.content[type=tool_result]": (_V4, None),
        "SamplingMessage._meta": (_V4, None),
        "TextContent._meta": (_V3, None),
        "ImageContent._meta": (_V3, None),
        "AudioContent._meta": (_V3, None),
        "EmbeddedResource._meta": (_V3, None),
        "TextResourceContents._meta": (_V3, None),
        "BlobResourceContents._meta": (_V3, None),
        "ResourceLink.icons": (_V4, None),
        "Annotations.lastModified": (_V3, None),
        # Tools and their results.
        "Tool.annotations": (_V2, None),
        "Tool.title": (_V3, None),
        "Tool.outputSchema": (_V3, None),
        "Tool._meta": (_V3, None),
        "Tool.icons": (_V4, None),
        "Tool.execution": (_V4, _V5),
        "CallToolResult.structuredContent": (_V3, None),
        "CallToolRequest.params.task": (_V4, _V5),
        "CallToolRequest.params.inputResponses": (_V5, None),
        "CallToolRequest.params.requestState": (_V5, None),
        "GetPromptRequest.params.inputResponses": (_V5, None),
        "GetPromptRequest.params.requestState": (_V5, None),
        "ReadResourceRequest.params.inputResponses": (_V5, None),
        "ReadResourceRequest.params.requestState": (_V5, None),
        # Results: the 2026-07-28 envelope and its cache hints.
        "Result.resultType": (_V5, None),
        **{f"{r}.ttlMs": (_V5, None) for r in _CACHEABLE},
        **{f"{r}.cacheScope": (_V5, None) for r in _CACHEABLE},
        "ElicitResult._meta": (_V3, _V5),
        "ListRootsResult._meta": (_V1, _V5),
        # Metadata on listed things.
        "Implementation.title": (_V3, None),
        "Implementation.description": (_V4, None),
        "Implementation.icons": (_V4, None),
        "Implementation.websiteUrl": (_V4, None),
        "Prompt.title": (_V3, None),
        "Prompt.icons": (_V4, None),
        "Prompt._meta": (_V3, None),
        "PromptArgument.title": (_V3, None),
        "PromptReference.title": (_V3, None),
        "Resource.title": (_V3, None),
        "Resource.icons": (_V4, None),
        "Resource._meta": (_V3, None),
        "ResourceTemplate.title": (_V3, None),
        "ResourceTemplate.icons": (_V4, None),
        "ResourceTemplate._meta": (_V3, None),
        "Root._meta": (_V3, None),
        # Requests and notifications whose params changed.
        "ProgressNotification.params.message": (_V2, None),
        "CompleteRequest.params.context": (_V3, None),
        "CreateMessageRequest.params.tools": (_V4, None),
        "CreateMessageRequest.params.toolChoice": (_V4, None),
        "CreateMessageRequest.params.task": (_V4, _V5),
        "ElicitRequestFormParams.task": (_V4, _V5),
        "ElicitRequestFormParams._meta": (_V4, _V5),
        "ElicitRequestURLParams._meta": (_V4, _V5),
        "ElicitRequestURLParams.task": (_V4, _V5),
        "ElicitRequestURLParams.elicitationId": (_V4, _V5),
        "StringSchema.default": (_V4, None),
        "NumberSchema.default": (_V4, None),
    }
)

MATRIX: Final[tuple[Row, ...]] = (*_REQUESTS, *_NOTIFICATIONS, *_CAPABILITIES, *_FIELDS)

_BY_KEY: Final = {(r.kind, r.name, r.direction): r for r in MATRIX}


def rows(kind: str | None = None) -> Iterator[Row]:
    """Rows of one kind, or every row, in table order."""
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"unknown matrix kind {kind!r}; kinds: {', '.join(_KINDS)}")
    return (r for r in MATRIX if kind is None or r.kind == kind)


def defined(kind: str, name: str, rev: str, direction: str | None = None) -> bool:
    """Whether ``rev`` defines the row; a name with no row is defined nowhere.

    Extension rows count as defined only for peers that negotiate the
    extension; the caller checks the negotiation.
    """
    row = _BY_KEY.get((kind, name, direction))
    return row is not None and row.defined_in(rev)


def removed(kind: str, name: str, rev: str, direction: str | None = None) -> bool:
    """Whether ``rev`` (or an older revision) removed what an older one had.

    A removed method is method-not-found to a peer on that revision, even
    though mcpx would answer it for an older peer (the rule stops at removal).
    """
    row = _BY_KEY.get((kind, name, direction))
    return row is not None and row.removed_in is not None and not row.defined_in(rev)


def protocol_json(policy: Policy | None = None) -> dict[str, Any]:
    """What ``GET /v1/protocol`` serves: revisions, the matrix, the policy."""
    policy = policy or Policy()
    return {
        "revisions": [{"revision": r, "era": era_of(r).value} for r in REVISIONS],
        "oldest": OLDEST,
        "headerless": HEADERLESS,
        "newest": NEWEST,
        "spec": policy.as_json(),
        "methods": [r.as_json() for r in MATRIX if r.kind in ("request", "notification", "input")],
        "capabilities": [r.as_json() for r in MATRIX if r.kind == "capability"],
        "fields": [r.as_json() for r in MATRIX if r.kind == "field"],
    }
