"""/v1 calls that return before they end: on a question nobody present can answer.

The CLI and scripts cannot be asked in-band. A ``/v1/call`` with ``Mcpx-Questions:
return`` runs as a task (``mcpx.tasks``), whose id a relaying caller is told first
(``TASK_NOTE``: a caller whose connection ends can still collect it). When the broker
takes a question from the call's server while it runs, the answer is 202 at once, with
the question, the commands that answer it and the task's id, and the call goes on;
``/v1/tasks`` (``_handle_tasks``) shows it and collects its outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from mcpx.questions import HostAsker
from mcpx.wire import Throttled

from ._errors import OpError
from ._handle_tasks import owner_seen, task_store
from ._operations import TASK_NOTE
from ._table import Status
from ._upstream_call import login_needed_error

if TYPE_CHECKING:
    from mcpx.tasks import Task

    from ._context import OpContext

__all__ = ["RETURN_ON_QUESTION", "returning_call"]

JSON = dict[str, Any]

# The header value that asks for it; any other value waits as usual.
RETURN_ON_QUESTION: Final = "return"


def _cannot_ask(method: str, params: Mapping[str, Any]) -> bool:
    return False


async def _unasked(method: str, params: JSON) -> JSON:
    raise AssertionError("a caller that cannot be asked was asked")  # can() is False


async def returning_call(
    ctx: OpContext,
    server: str,
    what: str,
    run: Callable[[OpContext], Awaitable[JSON]],
    collect: Callable[[Awaitable[JSON]], Awaitable[JSON]],
) -> JSON | Status:
    """``run`` as a task: its result if it ends first, else 202 with the broker's
    questions for ``server``. ``collect`` turns the task's failure into /v1's error."""
    tasks = task_store(ctx)

    async def started(task: Task) -> JSON:
        asker = HostAsker(can=_cannot_ask, ask=_unasked, brokered=task.note_brokered)
        try:
            return await run(replace(ctx, asker=asker, notify=_forwarding(task)))
        except Exception as exc:
            # A login needed stays one through the task's outcome (a JSON-RPC error).
            translated = login_needed_error(exc)
            if translated is None:
                raise
            raise translated from exc

    try:
        # An OAuth user's task is its own; the operator's, nobody's (whoever has the id).
        task = tasks.start(server, what, started, durable=True, owner=owner_seen(ctx))
    except Throttled as exc:
        raise OpError(429, "too_many_tasks", exc.message, {"setting": "proto.maxTasks"}) from exc
    task.notify = ctx.notify
    if ctx.notify is not None:
        # First on a caller's stream: should the connection end, it knows what to collect
        # (or, interrupted, what to cancel).
        ctx.notify(TASK_NOTE, {"taskId": task.id})
    try:
        while not task.done and not task.brokered:
            await task.changed()
    finally:
        task.notify = None  # from here the call runs on alone
    if task.done:
        return await collect(_outcome(task))
    return Status(202, parked(task))


def parked(task: Task) -> JSON:
    """What a caller that returned on a question is told."""
    questions = [q.as_json() for q in task.brokered]
    return {
        "status": "input_required",
        "task": task.as_json(),
        "questions": questions,
        "commands": {
            "answer": [f"mcpx elicit show {q['id']}" for q in questions],
            "result": f"mcpx task result {task.id}",
        },
    }


def _forwarding(task: Task) -> Callable[[str, JSON], None]:
    def notify(method: str, params: JSON) -> None:
        if task.notify is not None:
            task.notify(method, params)

    return notify


async def _outcome(task: Task) -> JSON:
    return task.outcome()
