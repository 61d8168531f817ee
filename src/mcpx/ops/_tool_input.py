"""A tool's arguments checked against its input schema before any upstream sees them.

The schema is the upstream's, so it is held to what a schema may be: a dialect
jsonschema knows (2020-12 when none is named), valid for it, references resolved within
the schema only (never fetched), and alternatives nested no deeper than a check can
afford. A schema that fails these makes the tool uncallable with a 502 that says why;
arguments that fail the schema are the caller's 400.

Arguments nested deeper than ``MAX_DEPTH`` levels are the caller's 400 too (-32602 on
MCP), refused before jsonschema is asked and before anything is sent (``check_depth``):
jsonschema's error messages ``repr`` the value (deep enough, that runs out of stack), and
the encoder writes 254 levels at most. Only arguments are measured, and only as deep as
the bound: valid ones once per call, in ``request_for_caller``.
"""

from __future__ import annotations

from typing import Any, Final

from mcpx import wire

from ._errors import OpError
from ._plain_schema import QuickCheck, plain_check

__all__ = [
    "MAX_DEPTH",
    "TOO_DEEP",
    "ArgumentsTooDeep",
    "check_arguments",
    "check_depth",
    "too_deep",
]

# Levels of objects and arrays in a call's arguments (the arguments object is the first):
# far beyond what a tool takes, far below what the schema checker and the encoder reach.
MAX_DEPTH: Final = 64
TOO_DEEP: Final = f"nested over {MAX_DEPTH} levels deep (objects and arrays), the limit"


class ArgumentsTooDeep(OpError):
    """Input nested over ``MAX_DEPTH`` levels: the caller's error; nothing was sent."""

    def __init__(self, field: str) -> None:
        message = f"{field}: {TOO_DEEP}"
        super().__init__(400, "invalid_input", message, {"field": field, "limit": MAX_DEPTH})


def too_deep(value: object) -> bool:
    """Whether ``value``'s objects and arrays nest over ``MAX_DEPTH`` levels: measured
    level by level, containers only, and no further than the bound."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        below: list[Any] = []
        for node in level:
            items = node.values() if isinstance(node, dict) else node
            below.extend(x for x in items if isinstance(x, dict | list))
        level = below
    return False


def check_depth(value: object, field: str = "arguments") -> None:
    """Refuse ``value`` (``field`` of a call's input) when it nests too deep.

    Raises:
        ArgumentsTooDeep: it does.
    """
    if too_deep(value):
        raise ArgumentsTooDeep(field)


_VALIDATORS: dict[str, tuple[Any, QuickCheck | None]] = {}
# The same, by the schema object itself (held, so its id is not reused): a catalogued
# tool's schema is one object call after call, and spelling it out as a key each time
# cost more than the check.
_BY_OBJECT: dict[int, tuple[Any, tuple[Any, QuickCheck | None]]] = {}
_NO_SCHEMA: dict[str, Any] = {"type": "object"}


def _validator(server: str, tool: dict[str, Any]) -> tuple[Any, QuickCheck | None]:
    """A compiled validator per distinct schema (compiling one per call is most of its
    cost), with the quick check for plain schemas in front of it.

    Raises:
        OpError: 502, the tool's schema cannot be used (an unknown ``$schema`` dialect,
            or not a valid schema): its arguments could not be checked.
    """
    schema = tool.get("inputSchema") or _NO_SCHEMA
    known = _BY_OBJECT.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    cached = _compiled(server, tool, schema)
    if len(_BY_OBJECT) > 4096:
        _BY_OBJECT.clear()
    _BY_OBJECT[id(schema)] = (schema, cached)
    return cached


def _compiled(server: str, tool: dict[str, Any], schema: Any) -> tuple[Any, QuickCheck | None]:
    import jsonschema
    from referencing import Registry

    if _branching_depth(schema) > _MAX_BRANCHING_DEPTH:
        # Each level of alternatives may double the work of a check (S-MSG-18), and of
        # checking the schema itself: measured first, which stops past the bound.
        why = f"alternatives (anyOf, oneOf) nested over {_MAX_BRANCHING_DEPTH} deep"
        raise _unusable(server, tool, why)
    key = wire.dumps(schema).decode()
    cached = _VALIDATORS.get(key)
    if cached is None:
        # 2020-12 when no $schema is named; a named dialect jsonschema does not know
        # is an error rather than a guess (it would fall back to 2020-12 with a warning).
        latest = jsonschema.Draft202012Validator
        kind = jsonschema.validators.validator_for(schema, default=_UNKNOWN_DIALECT)
        if kind is _UNKNOWN_DIALECT and "$schema" not in schema:
            kind = latest
        elif kind is _UNKNOWN_DIALECT:
            raise _unusable(server, tool, f"unknown $schema dialect {schema.get('$schema')!r}")
        try:
            kind.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise _unusable(server, tool, f"not a valid schema: {exc.message}") from exc
        if len(_VALIDATORS) > 4096:
            _VALIDATORS.clear()
        # An empty registry of our own: jsonschema's default one would fetch a network
        # $ref (C-SEC-8); with this one only references within the schema resolve.
        validator = kind(schema, registry=Registry())
        cached = _VALIDATORS[key] = (validator, plain_check(schema))
    return cached


_UNKNOWN_DIALECT: Any = object()
_MAX_BRANCHING_DEPTH = 8


def _branching_depth(node: Any, depth: int = 0) -> int:
    """How deep ``anyOf``/``oneOf`` alternatives nest in a schema (stops counting past
    the bound, so a hostile schema costs no more than that to measure)."""
    if depth > _MAX_BRANCHING_DEPTH:
        return depth
    if isinstance(node, list):
        return max((_branching_depth(item, depth) for item in node), default=depth)
    if not isinstance(node, dict):
        return depth
    deepest = depth
    for key, value in node.items():
        below = depth + 1 if key in ("anyOf", "oneOf") else depth
        deepest = max(deepest, _branching_depth(value, below))
    return deepest


def _unusable(server: str, tool: dict[str, Any], why: str) -> OpError:
    message = f"{server}/{tool['name']} cannot be called: its input schema is unusable ({why})"
    return OpError(502, "upstream_error", message, {"server": server, "tool": tool["name"]})


def check_arguments(server: str, tool: dict[str, Any], arguments: dict[str, Any]) -> None:
    """Refuse ``arguments`` that fail ``tool``'s input schema (or nest too deep to check).

    Valid ones pass the quick check alone: their depth is measured before they are sent
    (``request_for_caller``), so a call measures it once.

    Raises:
        OpError: 400 ``invalid_input`` naming the field (``ArgumentsTooDeep`` among them);
            502 when the schema is unusable.
    """
    validator, quick = _validator(server, tool)
    if quick is not None and quick(arguments):
        return
    check_depth(arguments)  # before jsonschema, whose messages repr the value
    from referencing.exceptions import Unresolvable

    try:
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except Unresolvable as exc:
        raise _unusable(server, tool, f"unresolvable $ref {exc}") from exc
    if problems:
        first = problems[0]
        where = ".".join(map(str, first.absolute_path)) or "(arguments)"
        raise OpError(
            400,
            "invalid_input",
            f"arguments for {server}/{tool['name']} do not match its input schema: "
            f"{where}: {first.message}",
            {"field": where, "problems": [p.message for p in problems[:10]]},
        )
