"""``mcpx elicit``: the questions upstream servers asked that no present host could answer.

The daemon's broker keeps them (``/v1/questions``); ``list``, ``show``, ``answer``,
``decline`` and ``cancel`` live here with how questions are shown and settled;
answers are built in ``_answer_fields``, ``watch`` follows the questions as they
come in ``_elicit_watch``.

Invariants:

- The daemon judges every answer; one it refuses names the field and why, and the
  question stays open. A refused answer, an unknown or closed question and any other
  daemon error end a command with status 1; a usage error (an unknown field, a
  malformed pair) with status 2.
- ``answer`` with nothing given prompts for each field, only when stdin is a terminal:
  off a terminal nothing waits for input (a URL elicitation is then answered done, one
  with no fields with nothing; anything else is a usage error).
- Each subcommand is built only when it is named, and ``watch``'s module is loaded only
  when watching: every other mcpx command starts without them.
- Only the standard library and click: the CLI starts fast.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from typing import Any, Final, Literal, NoReturn

import click

from ._answer_fields import (
    ELICIT,
    ROOTS,
    SAMPLE,
    Refused,
    given_content,
    is_url_elicitation,
    prompted_content,
    requested_fields,
    sampling_reply,
    url_site,
)
from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._http import Reply
from ._ops import _show

__all__ = [
    "brief",
    "clock",
    "daemon_get",
    "elicit_group",
    "fail",
    "settle",
    "summary",
    "time_left",
]

Settled = Literal["settled", "refused", "failed"]

_SUMMARY: Final = 100  # characters of a question's text on its one line
_REFUSED_PREFIX: Final = "the answer does not match what was asked: "


# -- showing -------------------------------------------------------------------------


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


def _aligned_columns(rows: list[list[str]]) -> list[str]:
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


def _show_question(question: dict[str, Any]) -> None:
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


# -- talking to the daemon -----------------------------------------------------------


def _daemon_error(reply: Reply) -> tuple[str, str, dict[str, Any]]:
    """The code, message and whole body of the daemon's error (its text if not JSON)."""
    try:
        error = reply.json()["error"]
        return str(error.get("code", "")), str(error["message"]), error
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", reply.text.strip() or f"HTTP {reply.status_code}", {}


def fail(reply: Reply) -> NoReturn:
    """The daemon's error on stderr; status 1, whatever the HTTP status was."""
    click.echo(f"mcpx: {_daemon_error(reply)[1]}", err=True)
    raise SystemExit(1)


def daemon_get(client: DaemonClient, path: str) -> Any:
    """The daemon's JSON for ``GET path``; on an error, ``fail``."""
    reply = client.call("GET", path)
    if reply.status_code >= 400:
        fail(reply)
    return reply.json()


def settle(client: DaemonClient, qid: str, how: str, content: Any = None) -> Settled:
    """Answer (with ``content``), decline or cancel ``qid``; the outcome said on a line.

    "refused": the daemon refused the answer, the question stays open; "failed": the
    daemon's error (a closed or unknown question, say) is on stderr.
    """
    body = {"content": content} if how == "answer" else None
    reply = client.call("POST", f"/v1/questions/{qid}/{how}", json_body=body)
    if reply.status_code == 400 and _daemon_error(reply)[0] == "invalid_answer":
        _say_refused(_refusal(reply), qid)
        return "refused"
    if reply.status_code >= 400:
        click.echo(f"mcpx: {_daemon_error(reply)[1]}", err=True)
        return "failed"
    click.echo(_settled_line(reply.json(), how))
    return "settled"


def _settled_line(done: dict[str, Any], how: str) -> str:
    what = {"answer": "answered", "decline": "declined", "cancel": "cancelled"}[how]
    line = f"{what} {done.get('id')} ({done.get('server')})"
    if how == "answer":
        line += ": " + json.dumps(done.get("result"), ensure_ascii=False)
    return line


def _refusal(reply: Reply) -> Refused:
    """A daemon's ``invalid_answer`` as the field it names and why."""
    _, message, error = _daemon_error(reply)
    why = message.removeprefix(_REFUSED_PREFIX)
    details = error.get("details")
    where = str((details if isinstance(details, dict) else {}).get("field") or "(answer)")
    if why.startswith(f"{where}: "):
        why = why[len(where) + 2 :]
    named = why.split("'")
    if where == "(answer)" and why.endswith("is a required property") and len(named) >= 3:
        # A missing property is an error of the whole answer: name the field itself.
        where, why = named[1], "required, not given"
    return Refused(where, why)


def _settle_or_fail(client: DaemonClient, qid: str, how: str, content: Any = None) -> None:
    """``settle`` for a command, which ends with status 1 unless it settled the question."""
    if settle(client, qid, how, content) != "settled":
        raise SystemExit(1)


def _say_refused(refused: Refused, qid: str) -> None:
    click.echo(f"mcpx: answer refused: field {refused.field!r}: {refused.why}", err=True)
    click.echo(f"mcpx: question {qid} is still open (mcpx elicit show {qid})", err=True)


# -- the commands --------------------------------------------------------------------


def _client(params: dict[str, Any]) -> DaemonClient:
    return DaemonClient(load_settings(params))


def list_command(as_json: bool, **params: Any) -> None:
    """The questions waiting for an answer, one line each."""
    doc = daemon_get(_client(params), "/v1/questions")
    if as_json:
        _show("json", doc, as_json)
        return
    questions = doc.get("questions") or []
    if not questions:
        click.echo("no questions are waiting")
        return
    rows = [["ID", "SERVER", "METHOD", "LEFT", "QUESTION"]]
    rows += [
        [q["id"], str(q.get("server")), str(q.get("method")), time_left(q), summary(q)]
        for q in questions
    ]
    for line in _aligned_columns(rows):
        click.echo(line)


def show_command(qid: str, as_json: bool, **params: Any) -> None:
    """One question in full, and the commands that answer it."""
    question = daemon_get(_client(params), f"/v1/questions/{qid}")
    if as_json:
        _show("json", question, as_json)
    else:
        _show_question(question)


def answer_command(qid: str, pairs: tuple[str, ...], raw_json: str | None, **params: Any) -> None:
    """Answer a question: KEY=VALUE per field, or --json.

    With neither, on a terminal, mcpx asks for each field in turn.

    Values are converted by the field's type: numbers, integers, booleans
    (true/false/yes/no), choices checked against the ones offered; a list is
    comma-separated. A sampling question takes text=… (the reply; model=… names
    the model, "human" by default) or the whole CreateMessageResult as --json.

    Exit status 1: the answer was refused (the question stays open), or the
    question is unknown or closed; 2: a usage error.
    """
    client = _client(params)
    question: dict[str, Any] = daemon_get(client, f"/v1/questions/{qid}")
    if question.get("state") != "pending":
        state = question.get("state")
        click.echo(f"mcpx: question {qid} is {state} already: it is closed", err=True)
        raise SystemExit(1)
    try:
        content = _content(question, pairs, raw_json)
    except Refused as refused:
        _say_refused(refused, qid)
        raise SystemExit(1) from None
    except click.Abort:
        click.echo(f"\nmcpx: not answered; question {qid} is still open", err=True)
        raise SystemExit(1) from None
    if content is None:
        click.echo(f"mcpx: not answered; question {qid} is still open", err=True)
        raise SystemExit(1)
    _settle_or_fail(client, qid, "answer", content)


def _content(
    question: dict[str, Any], pairs: tuple[str, ...], raw_json: str | None
) -> dict[str, Any] | None:
    """The answer the command line gives, or the one asked for on a terminal."""
    if raw_json is not None or pairs:
        return given_content(question, pairs, raw_json)
    if is_url_elicitation(question) and not sys.stdin.isatty():
        return {"action": "accept"}
    if (
        question.get("method") == ELICIT
        and not requested_fields(question)
        and not is_url_elicitation(question)
    ):
        return {}
    if not sys.stdin.isatty():
        raise click.UsageError(
            "give the answer as KEY=VALUE pairs or --json (on a terminal, mcpx asks); "
            f"see: mcpx elicit show {question['id']}"
        )
    brief(question)
    return prompted_content(question)


def decline_command(qid: str, **params: Any) -> None:
    """Decline a question: the server hears no."""
    _settle_or_fail(_client(params), qid, "decline")


def cancel_command(qid: str, **params: Any) -> None:
    """Dismiss a question without choosing."""
    _settle_or_fail(_client(params), qid, "cancel")


def watch_command(as_json: bool, count: int | None, **params: Any) -> None:
    """Show the waiting questions, then each new one as it is asked.

    On a terminal each question is offered to answer, decline, cancel or skip;
    otherwise (or with --json) one line per question asked or closed.
    Ctrl-C stops.
    """
    # Imported here: the watcher uses this module's showing and settling (a cycle at
    # import time), and no other command needs it.
    from ._elicit_watch import watch

    watch(_client(params), as_json, count)


# Each subcommand: its callback and the decorators of its parameters (top to bottom).
_JSON_OUT = click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")
_ID = click.argument("qid", metavar="ID")
_SUBCOMMANDS: Final[dict[str, tuple[Callable[..., None], tuple[Callable[[Any], Any], ...]]]] = {
    "list": (list_command, (_JSON_OUT,)),
    "show": (show_command, (_ID, _JSON_OUT)),
    "answer": (
        answer_command,
        (
            _ID,
            click.argument("pairs", nargs=-1, metavar="[KEY=VALUE]..."),
            click.option(
                "--json", "raw_json", metavar="JSON", help="The answer as JSON ('-': stdin)."
            ),
        ),
    ),
    "decline": (decline_command, (_ID,)),
    "cancel": (cancel_command, (_ID,)),
    "watch": (
        watch_command,
        (
            click.option("--json", "as_json", is_flag=True, help="JSON events, one a line."),
            click.option(
                "--count",
                type=click.IntRange(min=1),
                default=None,
                help="Stop after this many questions (those waiting at the start count).",
            ),
        ),
    ),
}


class _Elicit(click.Group):
    """Builds a subcommand only when it is named: each takes a flag per setting, and
    every other mcpx command would pay for building them at its start."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _SUBCOMMANDS:
            callback, decorators = _SUBCOMMANDS[cmd_name]
            built = settings_options(callback)
            for decorate in reversed(decorators):
                built = decorate(built)
            self.add_command(click.command(cmd_name)(built))
        return self.commands.get(cmd_name)


@click.group("elicit", cls=_Elicit, context_settings={"help_option_names": ["-h", "--help"]})
def elicit_group() -> None:
    """Questions servers asked that no present host could answer (the broker).

    An upstream server may ask mid-call for input (elicitation), for a model's reply
    (sampling) or for roots. When the host that made the call cannot be asked, mcpx
    keeps the question until it is answered, declined, cancelled or expires.
    """
