"""Answers built against what a question asked: its requested schema's fields.

An elicitation's ``requestedSchema`` lists the fields wanted; an answer is made from
``key=value`` pairs, ``--json``, or one terminal prompt per field. A sampling question
is answered with a ``CreateMessageResult``, a roots question with a list of URIs.

Invariants:

- A value is converted by its field's type: string, number (finite), integer, boolean
  (true/false, yes/no, …), a choice (by its value or its display title), a multi-select
  list (comma-separated). A value that is not one raises ``Refused`` naming the field.
  Ranges, lengths and required fields are left to the daemon, which checks the whole
  answer against the schema: one judge of what is valid, not two that could disagree.
- A pair for a field the question does not have, a malformed pair or malformed
  ``--json`` is a ``click.UsageError`` (status 2): the command was mistyped.
- A sampling answer is the ``CreateMessageResult`` itself (the broker passes it on as
  it is): ``--json`` with the whole result, or ``text=…`` (and ``model=…``).
- Prompting asks once per field, again until the value converts; Enter leaves an
  optional field out. Callers prompt only on a terminal; Ctrl-C or end of input at a
  prompt raises ``click.Abort``.
- Only the standard library and click: the CLI starts fast.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlsplit

import click

__all__ = [
    "ELICIT",
    "ROOTS",
    "SAMPLE",
    "Field",
    "Refused",
    "given_content",
    "is_url_elicitation",
    "prompted_content",
    "requested_fields",
    "sampling_reply",
]

ELICIT: Final = "elicitation/create"
SAMPLE: Final = "sampling/createMessage"
ROOTS: Final = "roots/list"
_TRUE: Final = frozenset({"true", "yes", "y", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "n", "off", "0"})


class Refused(Exception):
    """An answer that cannot be right: ``field`` and why (the question stays open)."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


# -- what was asked ------------------------------------------------------------------


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


# -- answers from the command line ---------------------------------------------------


def given_content(
    question: dict[str, Any], pairs: tuple[str, ...], raw_json: str | None
) -> dict[str, Any]:
    """The answer ``--json`` (``-``: stdin) and ``key=value`` pairs make; pairs win.

    Raises:
        click.UsageError: malformed JSON or pair, or a field the question does not have.
        Refused: a value of the wrong type or not among the choices; a sampling answer
            that is not a ``CreateMessageResult``.
    """
    content = _loaded_json(raw_json) if raw_json is not None else {}
    content |= _content_from_pairs(question, pairs) if pairs else {}
    if question.get("method") == SAMPLE:
        _check_sampled(content)
    return content


def sampling_reply(text: str, model: str | None = None) -> dict[str, Any]:
    """A person's reply to a sampling question, as the ``CreateMessageResult`` it is."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model or "human",
    }


def _pair(pair: str) -> tuple[str, str]:
    key, sep, raw = pair.partition("=")
    if not sep or not key:
        raise click.UsageError(f"expected key=value, got {pair!r}")
    return key, raw


def _content_from_pairs(question: dict[str, Any], pairs: Iterable[str]) -> dict[str, Any]:
    method = question.get("method")
    if method == SAMPLE:
        return _sampled_from_pairs(dict(_pair(p) for p in pairs))
    if method != ELICIT or is_url_elicitation(question):
        raise click.UsageError(
            f"a {method} answer has no fields: give it with --json"
            if method != ELICIT
            else "a URL elicitation has no fields: answer it with no values once done"
        )
    fields = {f.name: f for f in requested_fields(question)}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, raw = _pair(pair)
        found = fields.get(key)
        if found is None:
            known = ", ".join(fields) or "none"
            raise click.UsageError(f"the question has no field {key!r} (its fields: {known})")
        try:
            out[key] = found.convert(raw)
        except ValueError as exc:
            raise Refused(key, str(exc)) from None
    return out


def _sampled_from_pairs(given: dict[str, str]) -> dict[str, Any]:
    unknown = sorted(set(given) - {"text", "model"})
    if unknown or "text" not in given:
        raise click.UsageError(
            "a sampling answer takes text=… (and model=…), or the whole result as --json"
        )
    return sampling_reply(given["text"], given.get("model"))


def _check_sampled(content: dict[str, Any]) -> None:
    # Refused here: the server would choke on anything else, after the question closed.
    missing = [key for key in ("role", "content", "model") if key not in content]
    if missing:
        raise Refused(
            missing[0],
            "required: a sampling answer is a CreateMessageResult "
            '{"role": "assistant", "content": {...}, "model": "..."}',
        )


def _loaded_json(raw: str) -> dict[str, Any]:
    text = sys.stdin.read() if raw == "-" else raw
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.UsageError(f"--json is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise click.UsageError("--json must be a JSON object")
    return value


# -- answers asked for on a terminal -------------------------------------------------


class _Omitted:
    """An optional field left empty at its prompt: not part of the answer."""


_OMIT: Final = _Omitted()


class _FieldType(click.ParamType[Any]):
    """A prompt's answer converted as ``Field.convert`` does; empty omits an optional field."""

    name = "value"

    def __init__(self, field: Field) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default, already of its type
        if not value and not self.field.required:
            return _OMIT
        try:
            return self.field.convert(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class _Choice(click.Choice[str]):
    """click.Choice, where an optional field may be left empty."""

    def __init__(self, choices: list[str], optional: bool) -> None:
        super().__init__(choices)
        self.optional = optional

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "" and self.optional:
            return _OMIT
        return super().convert(value, param, ctx)


def prompted_content(question: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to ``question``, asked for on the terminal; None: not answered now.

    Raises:
        click.Abort: Ctrl-C or end of input at a prompt.
    """
    method = question.get("method")
    params = question.get("params") or {}
    if method == SAMPLE:
        return sampling_reply(click.prompt("  Reply (as the assistant)"))
    if method == ROOTS:
        raw = click.prompt("  Root URIs (comma-separated; empty: none)", default="")
        return {"roots": [{"uri": u.strip()} for u in raw.split(",") if u.strip()]}
    if is_url_elicitation(question):
        click.echo(f"  Open: {params.get('url', '')}")
        return {"action": "accept"} if click.confirm("  Done there?", default=True) else None
    out: dict[str, Any] = {}
    for found in requested_fields(question):
        value = _prompt_field(found)
        if value is not _OMIT:
            out[found.name] = value
    return out


def _prompt_field(field: Field) -> Any:
    """Ask for one field; ``_OMIT`` when an optional one is left empty."""
    hint = f"  {field.label()} — {field.describe()}"
    if field.description:
        hint += f" — {field.description}"
    click.echo(hint)
    default = field.default
    skippable = "" if field.required else " (Enter to skip)"
    if field.kind == "boolean":
        fallback = None if field.required else False
        given = default if isinstance(default, bool) else fallback
        return click.confirm(field.label(), default=given)
    choices = field.choices()
    if choices and field.kind != "array":
        titled = [f"{v} = {t}" for v, t in choices if t is not None and t != str(v)]
        if titled:
            click.echo("    " + "; ".join(titled))
        picked = click.prompt(
            field.label() + skippable,
            type=_Choice([str(v) for v, _ in choices], optional=not field.required),
            default=_prompt_default(field),
            show_default=default is not None,
        )
        return picked if picked is _OMIT else field.convert(str(picked))
    if choices:
        click.echo("    choose from: " + ", ".join(str(v) for v, _ in choices))
    return click.prompt(
        field.label() + skippable,
        type=_FieldType(field),
        default=_prompt_default(field),
        show_default=default is not None,
    )


def _prompt_default(field: Field) -> Any:
    """What Enter gives: the field's default, else "" (omitted) for an optional one."""
    default = field.default
    if isinstance(default, list):
        return ",".join(map(str, default))
    if default is not None:
        return str(default) if field.choices() else default
    return None if field.required else ""


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
