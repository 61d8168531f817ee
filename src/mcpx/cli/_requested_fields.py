"""What a question asks for: the fields of an elicitation's ``requestedSchema``.

An elicitation's ``requestedSchema`` lists the fields wanted; each ``Field`` says how a
person is shown it (label, type and constraints, an example) and converts a value typed
for it. A URL elicitation has no fields: it sends a person to a site, said plainly.
``ELICIT``, ``SAMPLE`` and ``ROOTS`` name the kinds of question a person may be asked.

Invariants:

- A value is converted by its field's type: string, number (finite), integer, boolean
  (true/false, yes/no, …), a choice (by its value or its display title), a multi-select
  list (comma-separated). A value that is not one raises ``ValueError`` saying why.
  Ranges, lengths and required fields are left to the daemon, which checks the whole
  answer against the schema: one judge of what is valid, not two that could disagree.
- Fields come in the order the schema lists them; a schema without properties asks for
  none.
- Only the standard library: the CLI starts fast.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = [
    "ELICIT",
    "ROOTS",
    "SAMPLE",
    "Field",
    "is_url_elicitation",
    "requested_fields",
    "url_site",
]

ELICIT: Final = "elicitation/create"
SAMPLE: Final = "sampling/createMessage"
ROOTS: Final = "roots/list"
_TRUE: Final = frozenset({"true", "yes", "y", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "n", "off", "0"})


class Field:
    """One field of an elicitation's ``requestedSchema``."""

    __slots__ = ("name", "required", "schema")

    def __init__(self, name: str, schema: dict[str, Any], required: bool) -> None:
        self.name = name
        self.schema = schema
        self.required = required

    @property
    def kind(self) -> str:
        kind = self.schema.get("type")
        if isinstance(kind, str):
            return kind
        return "string" if self.choices() else "any"

    @property
    def title(self) -> str | None:
        title = self.schema.get("title")
        return title if isinstance(title, str) and title else None

    @property
    def description(self) -> str | None:
        text = self.schema.get("description")
        return text if isinstance(text, str) and text else None

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    def choices(self) -> list[tuple[Any, str | None]]:
        """(value, display title) of each choice; empty when the value is free."""
        schema = self.schema
        if schema.get("type") == "array":
            items = schema.get("items")
            schema = items if isinstance(items, dict) else {}
            if isinstance(schema.get("anyOf"), list):
                return _titled(schema["anyOf"])
        if isinstance(schema.get("oneOf"), list):
            return _titled(schema["oneOf"])
        values = schema.get("enum")
        if not isinstance(values, list):
            return []
        names = schema.get("enumNames")
        names = names if isinstance(names, list) else []
        return [(v, str(names[i]) if i < len(names) else None) for i, v in enumerate(values)]

    def label(self) -> str:
        """What a prompt calls the field: its title, and its name when that differs."""
        title = self.title
        if title is None or title.lower() == self.name.lower():
            return title or self.name
        return f"{title} ({self.name})"

    def describe(self) -> str:
        """Its type and constraints in a few words: ``integer, required, 1..10``."""
        kind = self.kind
        if kind == "array":
            kind = "list (comma-separated)"
        elif self.choices():
            kind = "choice"
        if isinstance(self.schema.get("format"), str):
            kind += f" ({self.schema['format']})"
        parts = [kind, "required" if self.required else "optional"]
        low, high = self.schema.get("minimum"), self.schema.get("maximum")
        if low is not None or high is not None:
            parts.append(f"{'' if low is None else low}..{'' if high is None else high}")
        for key, what in (("minLength", "at least {} characters"), ("maxLength", "at most {}")):
            if isinstance(self.schema.get(key), int):
                parts.append(what.format(self.schema[key]))
        for key, what in (("minItems", "pick at least {}"), ("maxItems", "pick at most {}")):
            if isinstance(self.schema.get(key), int):
                parts.append(what.format(self.schema[key]))
        return ", ".join(parts)

    def placeholder(self) -> str:
        """What goes after ``name=`` in an example command."""
        choices = self.choices()
        if choices:
            sep = "," if self.kind == "array" else "|"
            return "<" + sep.join(str(v) for v, _ in choices) + ">"
        if self.kind == "boolean":
            return "<true|false>"
        fmt = self.schema.get("format")
        return f"<{fmt if isinstance(fmt, str) else self.kind}>"

    def example(self) -> Any:
        """A value of the right type for an example ``--json`` answer."""
        if self.default is not None:
            return self.default
        choices = self.choices()
        if choices:
            return [choices[0][0]] if self.kind == "array" else choices[0][0]
        low = self.schema.get("minimum")
        number = low if isinstance(low, int | float) else 0
        return {"boolean": False, "integer": number, "number": number, "array": []}.get(
            self.kind, self.placeholder()
        )

    def convert(self, raw: str) -> Any:
        """``raw`` (as typed) as the value the schema asks for.

        Raises:
            ValueError: it is not one; the message says why.
        """
        if self.kind == "array":
            picked = [part.strip() for part in raw.split(",") if part.strip()]
            return [self._choose(p) for p in picked] if self.choices() else picked
        if self.choices():
            return self._choose(raw)
        if self.kind == "boolean":
            word = raw.strip().lower()
            if word in _TRUE or word in _FALSE:
                return word in _TRUE
            raise ValueError(f"{raw!r} is not a boolean (true/false, yes/no)")
        if self.kind == "integer":
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{raw!r} is not an integer") from None
        if self.kind == "number":
            return _number(raw)
        if self.kind == "string":
            return raw
        try:  # a type the restricted schema does not have: JSON if it is JSON
            return json.loads(raw)
        except ValueError:
            return raw

    def _choose(self, raw: str) -> Any:
        for value, _ in self.choices():
            if raw == str(value):
                return value
        for value, title in self.choices():  # by its display title, as a person might
            if title is not None and raw.strip().lower() == title.lower():
                return value
        names = ", ".join(str(v) for v, _ in self.choices())
        raise ValueError(f"{raw!r} is not one of: {names}")


def _titled(options: list[Any]) -> list[tuple[Any, str | None]]:
    return [
        (o.get("const"), o["title"] if isinstance(o.get("title"), str) else None)
        for o in options
        if isinstance(o, dict) and "const" in o
    ]


def _number(raw: str) -> int | float:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{raw!r} is not a finite number")
    return value


def requested_fields(question: dict[str, Any]) -> list[Field]:
    """The fields an elicitation asks for, in the order it lists them."""
    schema = (question.get("params") or {}).get("requestedSchema")
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = schema.get("required")
    wanted = set(required) if isinstance(required, list) else set()
    return [
        Field(name, prop if isinstance(prop, dict) else {}, name in wanted)
        for name, prop in schema["properties"].items()
    ]


def is_url_elicitation(question: dict[str, Any]) -> bool:
    """An elicitation done at a URL: its answer has no fields, only "done"."""
    params = question.get("params") or {}
    return question.get("method") == ELICIT and params.get("mode") == "url"


def url_site(url: object) -> str | None:
    """The host a URL question would send a person to, said plainly, with a warning when
    it may not be what it looks like (C-ELIC-15): a punycode label (``xn--``) or letters
    outside ASCII (a look-alike), or a user part before the host."""
    if not isinstance(url, str):
        return None
    parts = urlsplit(url)
    host = parts.hostname or "(none)"
    warnings = []
    if any(label.startswith("xn--") for label in host.split(".")):
        warnings.append("punycode: the name may imitate another")
    if not host.isascii():
        warnings.append("letters outside ASCII: the name may imitate another")
    if parts.username is not None:
        warnings.append(f"it carries a user part ({parts.username}@) before the host")
    if parts.scheme != "https":
        warnings.append(f"{parts.scheme or 'no'} scheme, not https")
    return host if not warnings else f"{host}  (careful: {'; '.join(warnings)})"
