"""Downgrade of the things results carry: content blocks, tools, prompts,
resources, templates, resource contents, implementations and annotations.

Each function takes one item in the newest shape and returns it spelled for
``rev``: the item itself when ``rev`` defines everything in it, otherwise a new
object (copy-on-write, see ``_copy_on_write``). Which revision defines which field is the
matrix's answer (``_copy_on_write.has``), never a list of revisions written here.

A content block of a type ``rev`` lacks is said another way, so the information
survives in a form every revision reads: a resource link becomes an embedded
text/plain resource with its uri that names the link; audio becomes a text block
with its media type and size.

What is spelled here must be well formed first: ``call_result_problem`` says what is
wrong with an upstream's ``CallToolResult`` (the members every revision requires, each
block of a type some revision defines), so that a malformed one is refused, not relayed.
"""

from __future__ import annotations

from typing import Any, Final

from ._copy_on_write import JSON, has, map_key, map_list, strip
from ._matrix_gaps import pending

__all__ = [
    "annotations_for",
    "block",
    "call_result_problem",
    "implementation",
    "prompt",
    "prompt_argument",
    "prompt_message",
    "resource",
    "resource_contents",
    "resource_template",
    "tool",
    "without_nulls",
]

# Block type -> its schema definition. The three in every revision carry no
# content-type row in the matrix; only types a revision added do.
_BLOCK_DEFS: Final = {
    "text": "TextContent",
    "image": "ImageContent",
    "audio": "AudioContent",
    "resource_link": "ResourceLink",
    "resource": "EmbeddedResource",
}
_ADDED_TYPES: Final = frozenset({"audio", "resource_link"})


def annotations_for(value: Any, rev: str) -> Any:
    """``Annotations`` (audience, priority, lastModified) for ``rev``."""
    if not isinstance(value, dict):
        return value
    return strip(value, "Annotations", ("lastModified",), rev)


def _annotated(obj: JSON, rev: str) -> JSON:
    return map_key(obj, "annotations", lambda a: annotations_for(a, rev))


def resource_contents(contents: Any, rev: str) -> Any:
    """One entry of ``resources/read`` contents or an embedded resource."""
    if not isinstance(contents, dict):
        return contents
    definition = "BlobResourceContents" if "blob" in contents else "TextResourceContents"
    return strip(contents, definition, ("_meta",), rev)


def _link_text(link: JSON) -> str:
    # Everything a reader needs to fetch it later: the uri above all.
    parts = [f"[resource link: {link.get('uri', '')}"]
    if link.get("name"):
        parts.append(f" name={link['name']!r}")
    if link.get("title"):
        parts.append(f" title={link['title']!r}")
    if link.get("mimeType"):
        parts.append(f" mimeType={link['mimeType']}")
    if link.get("size") is not None:
        parts.append(f" size={link['size']}")
    parts.append("]")
    if link.get("description"):
        parts.append(f" {link['description']}")
    return "".join(parts)


def _audio_text(audio: JSON) -> str:
    size = len(audio.get("data") or "")
    return (
        f"[audio omitted: {audio.get('mimeType', 'unknown type')}, {size} base64 characters; "
        "this MCP revision cannot carry audio content]"
    )


def _as_text(blk: JSON, rev: str) -> JSON:
    """A block of a type ``rev`` lacks, said another way: a resource link as an
    embedded text/plain resource naming the link (so its uri stays a resource uri),
    audio as a text block saying what was omitted."""
    if blk.get("type") == "resource_link":
        embedded = {"uri": blk.get("uri", ""), "mimeType": "text/plain", "text": _link_text(blk)}
        out: JSON = {"type": "resource", "resource": embedded}
    else:
        out = {"type": "text", "text": _audio_text(blk)}
    if isinstance(blk.get("annotations"), dict):
        out["annotations"] = annotations_for(blk["annotations"], rev)
    return out


def block(blk: Any, container: str, rev: str) -> Any:
    """One content block inside ``container`` (``CallToolResult`` or ``PromptMessage``)."""
    if not isinstance(blk, dict):
        return blk
    kind = blk.get("type")
    if kind in _ADDED_TYPES and not has(f"{container}.content[type={kind}]", rev):
        return _as_text(blk, rev)
    definition = _BLOCK_DEFS.get(str(kind))
    if definition is None:
        return blk  # not ours to judge: a type no revision defines passes as sent
    out = _annotated(blk, rev)
    if kind == "resource_link":
        # ResourceLink came with its _meta; only icons came later.
        return strip(out, "ResourceLink", ("icons",), rev)
    out = strip(out, definition, ("_meta",), rev)
    if kind == "resource":
        out = map_key(out, "resource", lambda c: resource_contents(c, rev))
    return out


# Block type -> its members that must be strings (an embedded resource: see below).
_BLOCK_STRINGS: Final = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": (),
}


def call_result_problem(result: JSON) -> str | None:
    """What is wrong with ``result`` as a ``CallToolResult``, or None. Shallow: the
    members the schema requires and their types, per block; nothing nested further.
    ``structuredContent`` may be any JSON value (2026-07-28): older revisions get one
    that is no object as text (``_downgrade``)."""
    content = result.get("content")
    if not isinstance(content, list):
        got = _kind(content) if "content" in result else "nothing"
        return f"content must be a list of content blocks (got {got})"
    for i, blk in enumerate(content):
        problem = _block_problem(blk)
        if problem is not None:
            return f"content[{i}]: {problem}"
    # A null member is read as absent (``without_nulls`` drops it before relaying).
    if result.get("isError") is not None and not isinstance(result["isError"], bool):
        return f"isError must be a boolean (got {_kind(result['isError'])})"
    return None


def without_nulls(result: JSON) -> JSON:
    """``result`` (a ``CallToolResult`` that passed ``call_result_problem``) without the
    members set to null in it, its content blocks and their embedded resources: some
    servers send ``"annotations": null`` or ``"_meta": null``, which no revision's schema
    allows, so mcpx would relay an invalid frame. ``result`` itself when it has none."""
    content = result["content"]
    blocks = [_no_nulls(b) for b in content]
    changed = any(a is not b for a, b in zip(blocks, content, strict=True))
    if not changed and not any(v is None for k, v in result.items() if k != "structuredContent"):
        return result
    out = {k: v for k, v in result.items() if v is not None or k == "structuredContent"}
    return {**out, "content": blocks}


def _no_nulls(blk: JSON) -> JSON:
    embedded = blk.get("resource")
    inner = _no_nulls(embedded) if isinstance(embedded, dict) else embedded
    if inner is embedded and not any(v is None for v in blk.values()):
        return blk
    out = {k: v for k, v in blk.items() if v is not None}
    return {**out, "resource": inner} if inner is not None else out


def _block_problem(blk: object) -> str | None:
    if not isinstance(blk, dict):
        return f"a content block must be an object (got {_kind(blk)})"
    kind = blk.get("type")
    strings = _BLOCK_STRINGS.get(kind) if isinstance(kind, str) else None
    if strings is None:
        shown = repr(kind[:40]) if isinstance(kind, str) else _kind(kind)
        return f"type must be one of {', '.join(_BLOCK_STRINGS)} (got {shown})"
    for name in strings:
        if not isinstance(blk.get(name), str):
            got = _kind(blk[name]) if name in blk else "nothing"
            return f"a {kind} block's {name} must be a string (got {got})"
    if kind == "resource":
        embedded = blk.get("resource")
        if not isinstance(embedded, dict) or not isinstance(embedded.get("uri"), str):
            return "a resource block's resource must be an object with a string uri"
        if not any(isinstance(embedded.get(k), str) for k in ("text", "blob")):
            return "a resource block's resource must have a string text or blob"
    return None


_JSON_TYPES: Final = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _kind(value: object) -> str:
    # The JSON type, never the value: an upstream's value may be long, or deep.
    return _JSON_TYPES.get(type(value), type(value).__name__)


def implementation(impl: Any, rev: str) -> Any:
    """``Implementation`` (serverInfo): name and version, plus what ``rev`` adds."""
    if not isinstance(impl, dict):
        return impl
    return strip(impl, "Implementation", ("title", "description", "icons", "websiteUrl"), rev)


def _structured_output(schema: Any, rev: str) -> bool:
    """Whether ``rev`` can carry this ``outputSchema`` (older ones: object roots only)."""
    return pending("Tool.outputSchema[any]", rev) or (
        isinstance(schema, dict) and schema.get("type") == "object"
    )


def tool(t: Any, rev: str) -> Any:
    """One listed ``Tool``."""
    if not isinstance(t, dict):
        return t
    fields = ("title", "annotations", "outputSchema", "_meta", "icons", "execution")
    out = strip(t, "Tool", fields, rev)
    if "outputSchema" in out and not _structured_output(out["outputSchema"], rev):
        out = {k: v for k, v in out.items() if k != "outputSchema"}
    return out


def prompt_argument(arg: Any, rev: str) -> Any:
    if not isinstance(arg, dict):
        return arg
    return strip(arg, "PromptArgument", ("title",), rev)


def prompt(p: Any, rev: str) -> Any:
    """One listed ``Prompt`` and its arguments."""
    if not isinstance(p, dict):
        return p
    out = strip(p, "Prompt", ("title", "icons", "_meta"), rev)
    return map_key(out, "arguments", lambda args: map_list(args, lambda a: prompt_argument(a, rev)))


def resource(r: Any, rev: str) -> Any:
    """One listed ``Resource``."""
    if not isinstance(r, dict):
        return r
    return _annotated(strip(r, "Resource", ("title", "icons", "_meta"), rev), rev)


def resource_template(r: Any, rev: str) -> Any:
    """One listed ``ResourceTemplate``."""
    if not isinstance(r, dict):
        return r
    return _annotated(strip(r, "ResourceTemplate", ("title", "icons", "_meta"), rev), rev)


def prompt_message(msg: Any, rev: str) -> Any:
    """A ``PromptMessage``: its single content block."""
    if not isinstance(msg, dict):
        return msg
    return map_key(msg, "content", lambda b: block(b, "PromptMessage", rev))
