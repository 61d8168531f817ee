"""``mcpx elicit``: the questions upstream servers asked that no present host could answer.

The daemon's broker keeps them (``/v1/questions``); ``list``, ``show``, ``answer``,
``decline`` and ``cancel`` live here; questions are shown by ``_question_view`` and
settled by ``_question_settle``, answers are built by ``_answer_content`` against the
fields of ``_requested_fields``, and ``watch`` follows the questions as they come in
``_elicit_watch``.

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

import sys
from collections.abc import Callable
from typing import Any, Final

import click

from ._answer_content import Refused, given_content, prompted_content
from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._question_settle import daemon_get, say_refused, settle_or_fail
from ._question_view import aligned_columns, brief, show_question, summary, time_left
from ._requested_fields import ELICIT, is_url_elicitation, requested_fields
from ._views import show_response

__all__ = ["elicit_group"]


# -- the commands --------------------------------------------------------------------


def _client(params: dict[str, Any]) -> DaemonClient:
    return DaemonClient(load_settings(params))


def list_command(as_json: bool, **params: Any) -> None:
    """The questions waiting for an answer, one line each."""
    doc = daemon_get(_client(params), "/v1/questions")
    if as_json:
        show_response("json", doc, as_json)
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
    for line in aligned_columns(rows):
        click.echo(line)


def show_command(qid: str, as_json: bool, **params: Any) -> None:
    """One question in full, and the commands that answer it."""
    question = daemon_get(_client(params), f"/v1/questions/{qid}")
    if as_json:
        show_response("json", question, as_json)
    else:
        show_question(question)


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
        say_refused(refused, qid)
        raise SystemExit(1) from None
    except click.Abort:
        click.echo(f"\nmcpx: not answered; question {qid} is still open", err=True)
        raise SystemExit(1) from None
    if content is None:
        click.echo(f"mcpx: not answered; question {qid} is still open", err=True)
        raise SystemExit(1)
    settle_or_fail(client, qid, "answer", content)


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
    settle_or_fail(_client(params), qid, "decline")


def cancel_command(qid: str, **params: Any) -> None:
    """Dismiss a question without choosing."""
    settle_or_fail(_client(params), qid, "cancel")


def watch_command(as_json: bool, count: int | None, **params: Any) -> None:
    """Show the waiting questions, then each new one as it is asked.

    On a terminal each question is offered to answer, decline, cancel or skip;
    otherwise (or with --json) one line per question asked or closed.
    Ctrl-C stops.
    """
    # Imported here, not at the top: no other command needs it, and the CLI starts fast.
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
