"""``mcpx task``: calls that outlived the request that started them.

A ``mcpx call`` that stopped on a question (exit 75) goes on in the daemon as a task;
``mcpx task result ID`` waits for its end and prints what the call would have
(same views and exit codes), ``mcpx task show ID`` its status. Still running after
``--wait`` seconds: exit 75 again. ``mcpx task list`` shows every task the daemon keeps
(newest first), ``mcpx task cancel ID`` stops a running one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from ._call_stream import EX_TEMPFAIL
from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._exec import show_run
from ._http import Reply
from ._views import fail_reply, show_response

__all__ = ["task_group"]


@click.group("task")
def task_group() -> None:
    """Calls that go on after their request (a call that stopped on a question)."""


@task_group.command("list")
@click.option(
    "--status",
    type=click.Choice(["working", "input_required", "completed", "failed", "cancelled"]),
    help="Only tasks in this status.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")
@settings_options
def list_(status: str | None, as_json: bool, **params: object) -> None:
    """The daemon's tasks, newest first: running, and finished ones it still keeps."""
    query = {} if status is None else {"status": status}
    response = _asked(params, "GET", "/v1/tasks", params=query)
    show_response("tasks", response.json(), as_json)


@task_group.command("cancel")
@click.argument("task_id", metavar="ID")
@settings_options
def cancel(task_id: str, **params: object) -> None:
    """Cancel a running task (one that had ended is left as it was); its status after."""
    response = _asked(params, "POST", f"/v1/tasks/{task_id}/cancel", task=task_id)
    click.echo(f"task {task_id}: {response.json()['status']}")


@task_group.command("result")
@click.argument("task_id", metavar="ID")
@click.option("--wait", type=float, default=60.0, show_default=True, help="Seconds to wait.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")
@settings_options
def result(task_id: str, wait: float, as_json: bool, **params: object) -> None:
    """Wait for a task's end and print its result as ``mcpx call`` would."""
    path = f"/v1/tasks/{task_id}/result"
    response = _asked(params, "GET", path, task=task_id, params={"wait": wait})
    if response.status_code == 202:
        doc = response.json()
        click.echo(json.dumps(doc, indent=2) if as_json else f"task {task_id}: {doc['status']}")
        click.echo(f"mcpx: task {task_id} is still running; try again later", err=True)
        raise SystemExit(EX_TEMPFAIL)
    doc = response.json()
    if isinstance(doc, dict) and "exitCode" in doc and "run" in doc:
        show_run(doc, as_json)  # a script's run (mcpx exec that stopped on a question)
    show_response("call", doc, as_json)


@task_group.command("show")
@click.argument("task_id", metavar="ID")
@settings_options
def show(task_id: str, **params: object) -> None:
    """A task's status (and its outcome once it ended), as JSON."""
    response = _asked(params, "GET", f"/v1/tasks/{task_id}", task=task_id)
    click.echo(json.dumps(response.json(), indent=2, ensure_ascii=False))


def _asked(options: Mapping[str, object], method: str, path: str, **kw: Any) -> Reply:
    """The daemon's answer to one request; an error answer ends the command (its code)."""
    response = DaemonClient(load_settings(options)).call(method, path, **kw)
    if response.status_code >= 400:
        fail_reply(response)
    return response
