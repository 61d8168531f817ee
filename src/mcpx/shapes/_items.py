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
"""

from __future__ import annotations

from typing import Any, Final

from ._copy_on_write import JSON, has, map_key, map_list, strip
from ._matrix_gaps import pending

__all__ = [
    "annotations_for",
    "block",
    "implementation",
    "prompt",
    "prompt_argument",
    "prompt_message",
    "resource",
    "resource_contents",
    "resource_template",
    "tool",
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
