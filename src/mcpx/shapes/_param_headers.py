"""``x-mcp-header``: tool parameters mirrored into ``Mcp-Param-{Name}`` headers.

2026-07-28 Streamable HTTP. A tool's ``inputSchema`` may mark a primitive
parameter, reachable from the root through ``properties`` keys only, with
``x-mcp-header: Name``; a client sends its value as ``Mcp-Param-Name`` (encoded
by ``wire.header_value_for``). A tool whose annotations break the rules is
invalid as a whole: an HTTP client drops it from ``tools/list``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcpx.wire import MCP_PARAM_PREFIX, header_value_for

__all__ = ["InvalidHeaderAnnotation", "ParamHeader", "param_header_values", "param_headers"]

# RFC 9110 token: 1*tchar.
_TOKEN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})
_KEY: Final = "x-mcp-header"


class InvalidHeaderAnnotation(ValueError):
    """A tool's x-mcp-header annotations break a rule; the tool is invalid."""


@dataclass(frozen=True)
class ParamHeader:
    header: str
    path: tuple[str, ...]


def param_headers(input_schema: Mapping[str, Any]) -> list[ParamHeader]:
    """Every annotated parameter of a tool, with its property path.

    Raises:
        InvalidHeaderAnnotation: an annotation is misplaced, malformed,
            duplicated (case-insensitively), or on a non-primitive type.
    """
    found = list(_reachable(input_schema, ()))
    _check_nowhere_else(input_schema, {id(node) for node, _ in found})
    seen: set[str] = set()
    out = []
    for node, path in found:
        name = node[_KEY]
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise InvalidHeaderAnnotation(
                f"x-mcp-header {name!r} at {'.'.join(path)} is not a token"
            )
        if name.lower() in seen:
            raise InvalidHeaderAnnotation(f"x-mcp-header {name!r} is used twice")
        if node.get("type") not in _PRIMITIVE:
            raise InvalidHeaderAnnotation(
                f"x-mcp-header {name!r} is on a {node.get('type', 'untyped')} parameter;"
                " only string, integer and boolean may be mirrored"
            )
        seen.add(name.lower())
        out.append(ParamHeader(f"{MCP_PARAM_PREFIX}{name}", path))
    return out


def _reachable(
    node: Any, path: tuple[str, ...]
) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    if not isinstance(node, dict):
        return
    if _KEY in node and path:
        yield node, path
    props = node.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            yield from _reachable(sub, (*path, key))


def _check_nowhere_else(node: Any, allowed: set[int]) -> None:
    """An annotation off the properties chain (items, anyOf, $defs…) is invalid."""
    if isinstance(node, dict):
        if _KEY in node and id(node) not in allowed:
            raise InvalidHeaderAnnotation(
                "x-mcp-header is only allowed on a property reachable through properties"
            )
        for value in node.values():
            _check_nowhere_else(value, allowed)
    elif isinstance(node, list):
        for value in node:
            _check_nowhere_else(value, allowed)


def param_header_values(headers: list[ParamHeader], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for one call; absent and null values are omitted."""
    out = {}
    for h in headers:
        value: Any = arguments
        for key in h.path:
            value = value.get(key) if isinstance(value, Mapping) else None
        text = header_value_for(value)
        if text is not None:
            out[h.header] = text
    return out
