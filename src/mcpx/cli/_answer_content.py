"""An answer's content, built against what a question asked: from the command line
(``key=value`` pairs, ``--json``) or from one terminal prompt per field.

An elicitation is answered with its requested fields (``_requested_fields``), a sampling
question with a ``CreateMessageResult``, a roots question with a list of URIs.

Invariants:

- A value is converted by its field's type (``Field.convert``); one that is not of it
  raises ``Refused`` naming the field. The daemon judges the whole answer.
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
import sys
from collections.abc import Iterable
from typing import Any, Final

import click

from ._requested_fields import ELICIT, ROOTS, SAMPLE, Field, is_url_elicitation, requested_fields

__all__ = ["Refused", "given_content", "prompted_content", "sampling_reply"]


class Refused(Exception):
    """An answer that cannot be right: ``field`` and why (the question stays open)."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


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
