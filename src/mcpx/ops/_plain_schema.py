"""A quick yes for the plain JSON Schemas that arguments are checked against on every call.

jsonschema walks a schema through a generic keyword machinery, tens of microseconds
per call even for ``{"type": "object", "properties": {...}, "required": [...]}``, and
almost every call is valid. ``plain_check`` compiles a schema made only of a few plain
keywords into a predicate that says "valid" quickly.

Invariants:

- A predicate returns True only for an instance jsonschema also accepts; False means
  "not sure", and the caller runs jsonschema, whose errors (and messages) are the only
  ones reported. So a schema or an instance outside the plain subset costs what it
  always did, and no answer changes.
- A schema with any keyword outside the subset compiles to None (no quick check):
  ``$schema``, references, combinators, ``enum``, ``items``, patterns, formats, ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["QuickCheck", "plain_check"]

QuickCheck = Callable[[object], bool]

# Keywords that never make an instance invalid (annotations).
_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)
_BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_TYPES: Final[dict[str, QuickCheck]] = {
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
    # Floats are left to jsonschema: 1.0 is an integer to it, and bounds compare exactly.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def plain_check(schema: object) -> QuickCheck | None:
    """A predicate that is True only for instances valid against ``schema``; None when
    ``schema`` is not plain enough to have one."""
    if schema is True or schema == {}:
        return lambda v: True
    if not isinstance(schema, Mapping):
        return None
    known = {"type", "properties", "required", "additionalProperties", *_BOUNDS}
    if any(k not in known and k not in _ANNOTATIONS and not k.startswith("x-") for k in schema):
        return None
    checks: list[QuickCheck] = []
    kind = schema.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind not in _TYPES:
            return None
        checks.append(_TYPES[kind])
    bounds = _bounds(schema)
    if bounds is None:
        return None
    checks += bounds
    members = _members(schema)
    if members is None:
        return None
    checks += members
    return lambda v: all(check(v) for check in checks)


def _bounds(schema: Mapping[str, Any]) -> list[QuickCheck] | None:
    out: list[QuickCheck] = []
    for key in _BOUNDS:
        if key not in schema:
            continue
        limit = schema[key]
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            return None
        out.append(_bound(key, limit))
    return out


def _bound(key: str, limit: float) -> QuickCheck:
    def check(v: object) -> bool:
        # Bounds apply to numbers only; anything else passes them.
        if isinstance(v, bool) or not isinstance(v, int | float):
            return True
        if key == "minimum":
            return v >= limit
        if key == "maximum":
            return v <= limit
        return v > limit if key == "exclusiveMinimum" else v < limit

    return check


def _members(schema: Mapping[str, Any]) -> list[QuickCheck] | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    if not all(isinstance(r, str) for r in required) or not isinstance(extra, bool):
        return None
    subs: dict[str, QuickCheck] = {}
    for name, sub in properties.items():
        quick = plain_check(sub)
        if quick is None:
            return None
        subs[name] = quick
    if not subs and not required and extra:
        return []
    names = tuple(required)

    def check(v: object) -> bool:
        # Object keywords apply to objects only; anything else passes them.
        if not isinstance(v, dict):
            return True
        if not all(n in v for n in names):
            return False
        for key, value in v.items():
            sub = subs.get(key)
            if sub is None:
                if not extra:
                    return False
            elif not sub(value):
                return False
        return True

    return [check]
