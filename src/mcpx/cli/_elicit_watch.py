"""``mcpx elicit watch``: the broker's questions, followed as they are asked and closed.

Invariants:

- It subscribes to ``/v1/events`` (``question.asked``, ``question.closed``) before it
  lists what is pending: no question asked meanwhile is missed, and none is shown
  twice (a question is shown again only once closed and asked anew). Questions already
  waiting come first (with ``--json``: as ``question.asked`` events without a
  ``seq``); a ``gap`` in the stream lists them again.
- On a terminal (and without ``--json``) each question is offered: answer, decline,
  cancel or skip. An answer the daemon refuses is asked for again; a question settled
  here is not said closed a second time when its event comes. Off a terminal it
  prints one line per question asked or closed and settles nothing.
- ``--count N`` ends it after N questions shown (status 0); so do Ctrl-C, end of
  input at a prompt, the daemon ending the stream and a closed stdout. A daemon that
  cannot be reached or vanishes mid-stream is an error (status 1).
- Only the standard library and click: the CLI starts fast.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import click

from ._answer_content import prompted_content
from ._daemon import DaemonClient
from ._events import data_lines, stream_ends
from ._http import Reply
from ._question_settle import daemon_get, fail, settle
from ._question_view import brief, clock, summary, time_left

__all__ = ["watch"]

_KINDS: Final = "question.asked,question.closed"


def watch(client: DaemonClient, as_json: bool, count: int | None) -> None:
    """Show the waiting questions, then each new one, until Ctrl-C or ``count``."""
    watcher = _Watcher(client, as_json, count, not as_json and sys.stdin.isatty())

    def interrupted() -> None:
        if watcher.interactive:
            click.echo("")  # off the line the prompt left

    with stream_ends(interrupted):
        watcher.run()


class _Done(Exception):
    """``--count`` questions were shown."""


class _Watcher:
    """What ``watch`` has shown, and how it shows the next question."""

    def __init__(
        self, client: DaemonClient, as_json: bool, count: int | None, interactive: bool
    ) -> None:
        self.client = client
        self.as_json = as_json
        self.count = count
        self.interactive = interactive
        self.seen: set[str] = set()  # questions shown and not closed since
        self.settled: set[str] = set()  # settled here: their closing is said already
        self.shown = 0

    def run(self) -> None:
        self.client.ensure()
        events = self.client.http().stream("GET", "/v1/events", params={"kind": _KINDS})
        with events as response:
            if response.status >= 400:
                fail(Reply(response.status, response.read().decode("utf-8", "replace")))
            # Subscribed (the response has begun): what is pending now, then what comes.
            try:
                self._pending()
                click.echo("mcpx: watching for questions (Ctrl-C to stop)", err=True)
                for data in data_lines(response):
                    self._event(data)
            except _Done:
                return
        click.echo("mcpx: the daemon ended the event stream", err=True)

    def _pending(self) -> None:
        for question in daemon_get(self.client, "/v1/questions").get("questions") or []:
            if question["id"] not in self.seen:
                event = {"kind": "question.asked", "ts": question.get("created")}
                event |= {"server": question.get("server"), "data": question}
                self._asked(event, json.dumps(event, ensure_ascii=False), "waiting")

    def _event(self, data: str) -> None:
        event = json.loads(data)
        kind = event.get("kind")
        if kind == "question.asked" and isinstance(event.get("data"), dict):
            if event["data"].get("id") not in self.seen:
                self._asked(event, data, "asked")
        elif kind == "question.closed":
            self._closed(event, data)
        elif kind == "gap":
            if self.as_json:
                click.echo(data)
            else:
                click.echo("mcpx: missed some events; listing the questions again", err=True)
            self._pending()

    def _asked(self, event: dict[str, Any], line: str, how: str) -> None:
        question = event["data"]
        self.seen.add(question["id"])
        if self.as_json:
            click.echo(line)
        elif self.interactive:
            self._offer(question)
        else:
            what = f"{question.get('method')}  {time_left(question)}  {summary(question)}"
            head = f"{clock(event.get('ts'))}  {how:<7} {question['id']}  {question.get('server')}"
            click.echo(f"{head}  {what}")
        self.shown += 1
        if self.count is not None and self.shown >= self.count:
            raise _Done

    def _closed(self, event: dict[str, Any], line: str) -> None:
        data = event.get("data") or {}
        qid = str(data.get("id"))
        self.seen.discard(qid)
        if self.as_json:
            click.echo(line)
        elif qid in self.settled:
            self.settled.discard(qid)  # said already, when it was settled here
        else:
            state = data.get("state")
            head = f"{clock(event.get('ts'))}  {'closed':<7} {qid}  {data.get('server')}"
            click.echo(f"{head}  {state}")

    def _offer(self, question: dict[str, Any]) -> None:
        """One question on the terminal: answer, decline, cancel or skip it."""
        # Asked again: it may have been settled while an earlier one was on the terminal.
        reply = self.client.call("GET", f"/v1/questions/{question['id']}")
        fresh = reply.json() if reply.status_code == 200 else {"state": "gone"}
        if fresh.get("state") != "pending":
            click.echo(
                f"(question {question['id']} from {question.get('server')} is {fresh['state']})"
            )
            return
        question = fresh
        click.echo("")
        brief(question)
        choices = click.Choice(["answer", "decline", "cancel", "skip"])
        while True:
            how = click.prompt("Action", type=choices, default="answer")
            if how == "skip":
                return
            content = prompted_content(question) if how == "answer" else None
            if how == "answer" and content is None:
                continue
            outcome = settle(self.client, question["id"], how, content)
            if outcome == "settled":
                self.settled.add(question["id"])
            if outcome != "refused":  # settled, or failed as asking again would not mend
                return
