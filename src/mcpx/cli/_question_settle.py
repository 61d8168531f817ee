"""Settling a broker question with the daemon: answer, decline or cancel, and its errors.

Invariants: an answer the daemon refuses (``invalid_answer``) is said with the field it
names and why, and the question stays open; any other daemon error is said on stderr.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NoReturn

import click

from ._answer_content import Refused
from ._daemon import DaemonClient
from ._http import Reply

__all__ = ["Settled", "daemon_get", "fail", "say_refused", "settle", "settle_or_fail"]

Settled = Literal["settled", "refused", "failed"]

_REFUSED_PREFIX: Final = "the answer does not match what was asked: "


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
        say_refused(_refusal(reply), qid)
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


def settle_or_fail(client: DaemonClient, qid: str, how: str, content: Any = None) -> None:
    """``settle`` for a command, which ends with status 1 unless it settled the question."""
    if settle(client, qid, how, content) != "settled":
        raise SystemExit(1)


def say_refused(refused: Refused, qid: str) -> None:
    click.echo(f"mcpx: answer refused: field {refused.field!r}: {refused.why}", err=True)
    click.echo(f"mcpx: question {qid} is still open (mcpx elicit show {qid})", err=True)
