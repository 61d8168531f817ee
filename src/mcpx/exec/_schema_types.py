"""JSON Schema -> Python type expressions, for the generated client.

One ``TypeWriter`` serves one generated module: it answers the annotation of a schema
and collects the ``TypedDict`` definitions those annotations name, each written once.

Invariants:

- The expressions are evaluated at import time (a functional ``TypedDict`` is a call),
  so they use nothing but builtins, ``_t`` (the ``typing`` module) and TypedDicts
  defined earlier: a TypedDict is appended after the ones its fields name.
- An object with properties is a TypedDict (``total=False``, ``_t.Required[...]`` for
  the required keys); TypedDicts with the same body are one, named by the first use.
  Names come from where a TypedDict is first met (``EchoInput``...) or from its ``$defs``
  entry, and never equal a reserved name or each other.
- Only local references (``#/$defs/X``, ``#/definitions/X``, any ``#/`` pointer) are
  followed; one that leads back into itself (a cycle), an external or broken one, a
  schema nested over ``MAX_DEPTH`` levels, and anything not understood are ``_t.Any``.
- ``number`` is ``float`` (mypy takes an ``int`` for it); ``prefixItems`` (or the old
  array ``items``) is a ``tuple`` for an input whose length is fixed, else a ``list``
  of the union of its item types. The output is the same for the same input.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._pysource import identifier

__all__ = ["ANY", "MAX_DEPTH", "TypeWriter"]

ANY: Final = "_t.Any"
MAX_DEPTH: Final = 24

_SCALARS: Final = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
_LITERAL_TYPES: Final = (str, int, bool)


@dataclass(frozen=True)
class _Where:
    """Where a schema sits: the document its references resolve in, the references
    being expanded (a cycle's way back), how deep, and which way data flows."""

    root: Any
    refs: tuple[str, ...]
    depth: int
    for_input: bool

    def below(self, ref: str | None = None) -> _Where:
        refs = (*self.refs, ref) if ref is not None else self.refs
        return _Where(self.root, refs, self.depth + 1, self.for_input)


class TypeWriter:
    """Annotations for one module, and the TypedDicts they need (``definitions``)."""

    def __init__(self, reserved: Collection[str] = ()) -> None:
        self._taken = set(reserved)
        self._by_body: dict[str, str] = {}
        self.definitions: list[str] = []

    def annotation(
        self, schema: Any, *, root: Any = None, hint: str, for_input: bool = True
    ) -> str:
        """The type of values ``schema`` accepts; ``root``: the document its ``$ref``s
        point into (default: ``schema`` itself); ``hint``: words a TypedDict's name is
        made from (``"echo input"`` -> ``EchoInput``)."""
        where = _Where(schema if root is None else root, (), 0, for_input)
        return self._type(schema, where, hint)

    def _type(self, schema: Any, where: _Where, hint: str) -> str:
        if not isinstance(schema, Mapping) or where.depth > MAX_DEPTH:
            return ANY  # true, false, or not a schema at all
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._reference(ref, where)
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return _union(self._type(s, where.below(), hint) for s in schema[key])
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            return self._type(all_of[0], where.below(), hint) if len(all_of) == 1 else ANY
        literal = _literal(schema)
        if literal is not None:
            return literal
        found = _types(schema)
        if found is None:
            return ANY
        parts = [self._of_type(t, schema, where, hint) for t in found]
        if schema.get("nullable") is True:
            parts.append("None")
        return _union(parts)

    def _of_type(self, kind: str, schema: Mapping[str, Any], where: _Where, hint: str) -> str:
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "null":
            return "None"
        if kind == "array":
            return self._array(schema, where, hint)
        if kind == "object":
            return self._object(schema, where, hint)
        return ANY

    def _reference(self, ref: str, where: _Where) -> str:
        if ref in where.refs:
            return ANY  # a cycle: the type would have to contain itself
        target = _resolve(where.root, ref)
        if target is None:
            return ANY
        name = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        return self._type(target, where.below(ref), name)

    def _array(self, schema: Mapping[str, Any], where: _Where, hint: str) -> str:
        prefix = schema.get("prefixItems")
        rest = schema.get("items")
        if prefix is None and isinstance(rest, list):  # draft 4-7 spelling of prefixItems
            prefix, rest = rest, schema.get("additionalItems")
        item_hint = f"{hint} item"
        if not isinstance(prefix, list) or not prefix:
            return f"list[{self._type(rest, where.below(), item_hint)}]"
        kinds = [self._type(s, where.below(), item_hint) for s in prefix]
        fixed = rest is False or schema.get("maxItems") == len(prefix)
        if fixed and where.for_input and schema.get("minItems", len(prefix)) == len(prefix):
            return f"tuple[{', '.join(kinds)}]"
        if rest is not False:
            kinds.append(self._type(rest, where.below(), item_hint))
        return f"list[{_union(kinds)}]"

    def _object(self, schema: Mapping[str, Any], where: _Where, hint: str) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties")
            return f"dict[str, {self._type(extra, where.below(), f'{hint} value')}]"
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        fields: list[str] = []
        for key, sub in properties.items():
            kind = self._type(sub, where.below(), f"{hint} {key}")
            fields.append(f"{key!r}: {f'_t.Required[{kind}]' if key in needed else kind}")
        return self._typed_dict(hint, "{" + ", ".join(fields) + "}")

    def _typed_dict(self, hint: str, body: str) -> str:
        known = self._by_body.get(body)
        if known is not None:
            return known
        base = _camel(hint)
        name, n = base, 1
        while name in self._taken:
            n += 1
            name = f"{base}{n}"
        self._taken.add(name)
        self._by_body[body] = name
        self.definitions.append(f"{name} = _t.TypedDict({name!r}, {body}, total=False)")
        return name


def _literal(schema: Mapping[str, Any]) -> str | None:
    """``_t.Literal[...]`` of a ``const`` or an ``enum`` whose values Literal can hold;
    None when there is neither (or a value it cannot hold: a float, an object)."""
    if "const" in schema:
        values: Sequence[Any] = [schema["const"]]
    elif isinstance(schema.get("enum"), list) and schema["enum"]:
        values = schema["enum"]
    else:
        return None
    if not all(v is None or type(v) in _LITERAL_TYPES for v in values):
        return None
    kept = list(dict.fromkeys((type(v), v) for v in values if v is not None))
    parts = [f"_t.Literal[{', '.join(repr(v) for _, v in kept)}]"] if kept else []
    return _union([*parts, *(["None"] if None in values else [])])


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    """The schema's types, in order: its ``type``, else what its keywords imply."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        return list(dict.fromkeys(kind))
    if kind is None and ("properties" in schema or "additionalProperties" in schema):
        return ["object"]
    if kind is None and ("items" in schema or "prefixItems" in schema):
        return ["array"]
    return None


def _union(parts: Any) -> str:
    """``A | B | None``: repeats dropped, None last; anything with ``Any`` in it is Any."""
    seen = list(dict.fromkeys(parts))
    if not seen or ANY in seen:
        return ANY
    ordered = [p for p in seen if p != "None"] + (["None"] if "None" in seen else [])
    return " | ".join(ordered)


def _resolve(root: Any, ref: str) -> Any:
    """The node a local JSON pointer reference names, or None (external, broken)."""
    if not ref.startswith("#"):
        return None
    node = root
    for raw in ref[1:].split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _camel(hint: str) -> str:
    """``"fancy-name input"`` -> ``FancyNameInput``: a class-like name for a TypedDict."""
    words = identifier(hint.replace(" ", "_")).split("_")
    name = "".join(w[:1].upper() + w[1:] for w in words if w)
    if not name or name[0].isdigit():
        name = f"T{name}"
    return identifier(name)  # "None", "True", "False" are keywords
