"""``mcpx call`` following its ndjson stream: progress as a bar, log lines on stderr.

The daemon answers plain JSON when nothing was relayed, else ndjson lines: each
``{"notification": …}`` then the body the JSON would have had. stdout only ever gets
the result; progress and log lines go to stderr, the bar only on a terminal. A stream
that ends before its body (the daemon went away: killed, crashed) ends the command as
``DaemonClient.answering`` says, as a connection that ends before any answer does.
"""

from __future__ import annotations

import http.client
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import click

from mcpx.ops import TASK_NOTE

from ._daemon import DaemonClient, Waiting
from ._http import Reply

__all__ = ["EX_TEMPFAIL", "parked", "streamed_call"]

EX_TEMPFAIL = 75  # sysexits.h: try again later (after answering)
EX_INTERRUPTED = 130  # as a shell reports a command ended by SIGINT

_NDJSON = "application/x-ndjson"


class _Bar:
    """A rich progress bar on stderr, made on the first report (rich imports lazily)."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None

    def update(self, params: dict[str, Any]) -> None:
        if not sys.stderr.isatty():
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import Progress

            self._progress = Progress(console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("calling", total=None)
        total = params.get("total")
        description = str(params.get("message") or "calling")
        self._progress.update(
            self._task, completed=params.get("progress", 0), total=total, description=description
        )

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _log(params: dict[str, Any]) -> None:
    data = params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    click.echo(f"{params.get('level', 'info')}: {text}", err=True)


def streamed_call(client: DaemonClient, method: str, path: str, body: Any) -> Reply:
    """One call whose progress and log lines are shown as they come; the final reply.

    The CLI cannot be asked in-band: on a question nobody present can answer, the
    daemon answers 202 at once (the call goes on as a task), and ``parked`` says so.
    """
    client.ensure()
    headers = {"Accept": f"application/json, {_NDJSON}", "Mcpx-Questions": "return"}
    bar = _Bar()
    stream = client.http().stream(method, path, json_body=body, headers=headers)
    with (
        client.answering() as waiting,
        stream as response,
        _cancelled_on_interrupt(client, waiting),
    ):
        try:
            if _NDJSON not in (response.getheader("content-type") or ""):
                return Reply(response.status, response.read().decode("utf-8", "replace"))
            last = ""
            for raw in response:
                if not raw.endswith(b"\n"):  # every line ends so: this one was cut off
                    raise http.client.IncompleteRead(raw)
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                doc = json.loads(line)
                note = doc.get("notification") if isinstance(doc, dict) else None
                if not isinstance(note, dict):
                    last = line
                    continue
                if note.get("method") == TASK_NOTE:
                    waiting.task = str((note.get("params") or {}).get("taskId"))
                elif note.get("method") == "notifications/progress":
                    bar.update(note.get("params") or {})
                elif note.get("method") == "notifications/message":
                    _log(note.get("params") or {})
            if not last:  # the stream ended before its body: the daemon went away
                raise http.client.IncompleteRead(b"")
            return Reply(_status_of(last, response.status), last)
        finally:
            bar.close()


@contextmanager
def _cancelled_on_interrupt(client: DaemonClient, waiting: Waiting) -> Iterator[None]:
    """Ctrl-C ends the call, not only this command: the daemon runs it as a task, which
    would go on without anyone; it is cancelled (a script's processes die with it)."""
    try:
        yield
    except KeyboardInterrupt:
        if waiting.task is not None:
            with suppress(OSError, http.client.HTTPException):
                client.http().request("POST", f"/v1/tasks/{waiting.task}/cancel", timeout=10)
            click.echo(f"mcpx: interrupted; task {waiting.task} cancelled", err=True)
        raise SystemExit(EX_INTERRUPTED) from None


def _status_of(last: str, streamed: int) -> int:
    # A stream went out as 200 before the answer was known; an answer that would not have
    # been 200 (an error, a call parked on a question) says its status itself.
    doc = json.loads(last)
    status = doc.get("status") if isinstance(doc, dict) else None
    return status if isinstance(status, int) and not isinstance(status, bool) else streamed


def parked(doc: dict[str, Any]) -> None:
    """Tell the user the call waits on a question: what, how to answer, how to collect."""
    task = doc.get("task") or {}
    for question in doc.get("questions") or []:
        params = question.get("params") or {}
        what = params.get("message") or question.get("method", "a question")
        click.echo(f"mcpx: {question.get('server')} asks: {what}", err=True)
        click.echo(f"  answer it:  mcpx elicit answer {question.get('id')}", err=True)
        click.echo(f"  see it:     mcpx elicit show {question.get('id')}", err=True)
    click.echo(f"  then:       mcpx task result {task.get('id')}", err=True)
    click.echo(f"mcpx: the call goes on as task {task.get('id')}", err=True)
