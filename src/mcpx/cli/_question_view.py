"""How a question from the broker is shown: one line, in full, or briefly before prompts.

Only the standard library and click: the CLI starts fast.
"""

from __future__ import annotations

import json
import shlex
import time
from typing import Any, Final

import click

from ._answer_content import sampling_reply
from ._requested_fields import (
    ELICIT,
    ROOTS,
    SAMPLE,
    is_url_elicitation,
    requested_fields,
    url_site,
)

__all__ = ["aligned_columns", "brief", "clock", "show_question", "summary", "time_left"]

_SUMMARY: Final = 100  # characters of a question's text on its one line


def summary(question: dict[str, Any]) -> str:
    """What is asked, in one line."""
    params = question.get("params") or {}
    method = question.get("method")
    if method == ELICIT:
        text = str(params.get("message", ""))
        if is_url_elicitation(question):
            text += f" <{params.get('url', '')}>"
    elif method == SAMPLE:
        messages = params.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        text = _texts(last.get("content"))
    elif method == ROOTS:
        text = "the host's roots (a list of URIs)"
    else:
        text = json.dumps(params, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY else text[: _SUMMARY - 1] + "…"


def _texts(content: Any) -> str:
    """The text of a message's content (one block or a list of them)."""
    blocks = content if isinstance(content, list) else [content]
    out = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            out.append(f"[{block.get('type', '?')}]")
    return " ".join(out)


def time_left(question: dict[str, Any]) -> str:
    """How long until the question expires: ``45s``, ``2m 05s``, ``1h 03m``, ``due``."""
    deadline = question.get("deadline")
    if isinstance(deadline, int | float):
        seconds = max(0.0, deadline - time.time())
    else:
        seconds = float(question.get("timeLeft") or 0)
    whole = int(seconds)
    if whole <= 0:
        return "due"
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def clock(ts: Any) -> str:
    """A timestamp (seconds since the epoch) as local ``HH:MM:SS``."""
    return time.strftime("%H:%M:%S", time.localtime(float(ts or 0)))


def aligned_columns(rows: list[list[str]]) -> list[str]:
    """Rows as lines, each column but the last padded to its widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]) for r in rows
    ]


def _answer_commands(question: dict[str, Any]) -> list[str]:
    qid = question["id"]
    base = f"mcpx elicit answer {qid}"
    method = question.get("method")
    if method == SAMPLE:
        example = sampling_reply("<reply>")
        return [f"{base} text=<reply>", f"{base} --json {shlex.quote(json.dumps(example))}"]
    if method != ELICIT:
        return [f"{base} --json {shlex.quote(json.dumps({'roots': [{'uri': 'file:///…'}]}))}"]
    if is_url_elicitation(question):
        return [f"{base}    (once done at the URL)"]
    fields = requested_fields(question)
    if not fields:
        return [f"{base}    (nothing to fill in)"]
    pairs = [
        f"{f.name}={f.placeholder()}" if f.required else f"[{f.name}={f.placeholder()}]"
        for f in fields
    ]
    shown = [f for f in fields if f.required] or fields
    filled = json.dumps({f.name: f.example() for f in shown}, ensure_ascii=False)
    return [
        f"{base} {' '.join(pairs)}",
        f"{base} --json {shlex.quote(filled)}",
        f"{base}    (on a terminal: asks for each field)",
    ]


def _show_fields(question: dict[str, Any]) -> None:
    fields = requested_fields(question)
    if not fields:
        return
    click.echo("\nFields:")
    width = max(len(f.name) for f in fields)
    for f in fields:
        click.echo(f"  {f.name.ljust(width)}  {f.describe()}")
        pad = " " * (width + 4)
        for label, value in (("title", f.title), ("description", f.description)):
            if value:
                click.echo(f"{pad}{label}: {value}")
        choices = f.choices()
        if choices:
            named = [str(v) if t in (None, str(v)) else f"{v} ({t})" for v, t in choices]
            click.echo(f"{pad}choices: {', '.join(named)}")
        if f.default is not None:
            click.echo(f"{pad}default: {json.dumps(f.default, ensure_ascii=False)}")


def _show_sampling(params: dict[str, Any]) -> None:
    click.echo("\nMessages:")
    for message in params.get("messages") or []:
        if isinstance(message, dict):
            click.echo(f"  {message.get('role', '?')}: {_texts(message.get('content'))}")
    if params.get("systemPrompt"):
        click.echo(f"  system prompt: {params['systemPrompt']}")
    if params.get("maxTokens") is not None:
        click.echo(f"  max tokens: {params['maxTokens']}")
    hints = (params.get("modelPreferences") or {}).get("hints") or []
    names = [str(h.get("name")) for h in hints if isinstance(h, dict) and h.get("name")]
    if names:
        click.echo(f"  model hints: {', '.join(names)}")


def show_question(question: dict[str, Any]) -> None:
    """A question in full: who asked what, its fields, and how to settle it."""
    qid, state = question["id"], question.get("state")
    params = question.get("params") or {}
    status = f"pending, {time_left(question)} left" if state == "pending" else state
    click.echo(f"Question {qid}  ({status})")
    rows = [
        ("server", question.get("server")),
        ("method", question.get("method")),
        ("for", question.get("identity")),
        ("routing", question.get("routing")),
        ("asked", clock(question.get("created"))),
    ]
    if question.get("method") == ELICIT:
        rows.append(("message", params.get("message")))
        if is_url_elicitation(question):
            rows.append(("url", params.get("url")))
            rows.append(("site", url_site(params.get("url"))))
    for name, value in rows:
        if value is not None:
            click.echo(f"  {name + ':':<9} {value}")
    if question.get("method") == SAMPLE:
        _show_sampling(params)
    else:
        _show_fields(question)
    if state != "pending":
        click.echo(f"\nOutcome: {json.dumps(question.get('result'), ensure_ascii=False)}")
        return
    click.echo("\nTo answer:")
    for line in _answer_commands(question):
        click.echo(f"  {line}")
    click.echo("Or:")
    click.echo(f"  mcpx elicit decline {qid}")
    click.echo(f"  mcpx elicit cancel {qid}     (dismiss without choosing)")


def brief(question: dict[str, Any]) -> None:
    """A question before its prompts: who asks, what, how long is left."""
    click.echo(
        f"{question.get('server')} asks ({question.get('method')}, "
        f"{time_left(question)} left, id {question['id']}):"
    )
    params = question.get("params") or {}
    if question.get("method") == SAMPLE:
        _show_sampling(params)
    elif question.get("method") == ELICIT:
        click.echo(f"  {params.get('message', '')}")
    else:
        click.echo(f"  {summary(question)}")
