"""Copy-on-write edits of JSON values, and the matrix questions downgrade asks.

Invariant: no function here edits its argument. Each returns the very object it
was given when nothing changes, and a new container otherwise, so a chain of
them yields the input itself when a revision defines everything (no copy, no
cost) and a fresh spine of containers down to every edit when it does not.
Subtrees that did not change are shared with the input, never edited; results
are immutable by convention once built.

Field questions go to the revision matrix (``mcpx.spec.defined``). A name the
matrix has no row for is a programming error here, not "defined nowhere": a
silent ``False`` would strip a field from every revision, so ``has`` raises.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

from mcpx import spec

__all__ = [
    "JSON",
    "MissingRow",
    "capability_row",
    "has",
    "map_key",
    "map_list",
    "put",
    "strip",
    "without",
]

JSON = dict[str, Any]
T = TypeVar("T")

_FIELD_ROWS: Final = frozenset(r.name for r in spec.rows("field"))
_SERVER_CAPS: Final = frozenset(r.name for r in spec.rows("capability") if r.direction == "server")


class MissingRow(LookupError):
    """downgrade asked the matrix about a field it has no row for."""


@functools.cache  # the matrix is fixed at import; downgrade asks the same few rows per call
def has(name: str, rev: str) -> bool:
    """Whether ``rev`` defines the field row ``name`` (``Definition.field``).

    Raises:
        MissingRow: the matrix has no such row (ask for one; don't guess).
    """
    if name not in _FIELD_ROWS:
        raise MissingRow(f"the revision matrix has no field row {name!r}")
    return spec.defined("field", name, rev)


def capability_row(path: str) -> bool:
    """Whether the matrix has a server capability row for the dotted ``path``."""
    return path in _SERVER_CAPS


def without(obj: JSON, keys: Iterable[str]) -> JSON:
    """``obj`` minus ``keys``; ``obj`` itself when it has none of them."""
    gone = [k for k in keys if k in obj]
    if not gone:
        return obj
    return {k: v for k, v in obj.items() if k not in gone}


def strip(obj: JSON, definition: str, fields: Iterable[str], rev: str) -> JSON:
    """``obj`` minus each of ``fields`` that ``rev``'s ``definition`` lacks."""
    # Ask only about fields that are present: absent ones cost nothing.
    return without(obj, [f for f in fields if f in obj and not has(f"{definition}.{f}", rev)])


def put(obj: JSON, key: str, value: Any) -> JSON:
    """``obj`` with ``key`` set to ``value``; ``obj`` itself if already so (by identity)."""
    if key in obj and obj[key] is value:
        return obj
    return {**obj, key: value}


def map_key(obj: JSON, key: str, fn: Callable[[Any], Any]) -> JSON:
    """``obj`` with ``fn`` applied to ``obj[key]`` when present."""
    if key not in obj:
        return obj
    return put(obj, key, fn(obj[key]))


def map_list(items: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` over a list; the same list when ``fn`` changed no item.

    A non-list is returned as is: downgrade spells shapes, it does not
    validate them (a malformed result stays malformed, visibly).
    """
    if not isinstance(items, list):
        return items
    out = [fn(item) for item in items]
    if all(a is b for a, b in zip(out, items, strict=True)):
        return items
    return out
