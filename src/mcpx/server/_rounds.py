"""2026-07-28 hosts asked in-band: an upstream's question as an ``input_required`` round.

A 2026-07-28 host is never sent a request. When an upstream asks mid-call (a legacy
server's ``elicitation/create``, ``sampling/createMessage``, ``roots/list``, or a modern
one's ``input_required``), the host's request is answered ``input_required`` with the
question under a key of mcpx's, and a signed ``requestState``; the host retries the
same request with ``inputResponses`` and that state, and the call resumes.

Invariants:

- The call runs as a daemon task (``mcpx.tasks``), so it outlives the request
  that is answered ``input_required``; its scope (a per-request one) is released when
  the call ends, not when that request does. Only a host that declared something it
  can be asked (elicitation, sampling, roots), or that brings ``inputResponses`` or a
  ``requestState``, takes this path: any other call runs inside its request.
- mcpx's states read ``mcpx1.<payload>.<signature>`` (``questions.StateSigner``): bound
  to the request, expiring (``proto.stateTTL``), counting rounds (``proto.askRounds``).
  A state that fails is refused saying which check failed; one for a call that is over
  and forgotten too. A state that is not mcpx's goes to a pass-through server as it
  came (its own, from its own ``input_required``); with none, it is refused.
- ``inputResponses`` sent up front are held until the question they name is asked;
  on a retry they answer the open questions whose keys match, others are ignored.
- A request is held at most ``proto.askTimeout`` waiting for the call to end or ask;
  then it is answered ``input_required`` with only a fresh state, and the host's retry
  goes on waiting (the call never stops because a request ended).
- A ``tools/call`` from a host that declared the tasks extension (``_ext_tasks``) is
  answered with the call's ``CreateTaskResult`` once it has run its tool's ``delay``
  without ending or asking: questions asked before that go inline as ``input_required``
  (no task is shown yet); later ones park the task in ``input_required``, answered with
  ``tasks/update``. A ``required`` tool without the extension is -32021 before it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import anyio

from mcpx.questions import StateError
from mcpx.wire import InternalError, InvalidParams, InvalidRequest

from . import _ext_tasks as ext_tasks
from . import _passthrough as passthrough
from ._conn import Conn
from ._host_questions import host_asker

if TYPE_CHECKING:
    from mcpx.ops import OpContext
    from mcpx.tasks import Task, Tasks

__all__ = ["ASKING", "in_rounds"]

JSON = dict[str, Any]

# The requests a server may answer input_required (SEP-2322).
ASKING: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_PREFIX: Final = "mcpx1."
_ASKABLE: Final = ("elicitation", "sampling", "roots")


def in_rounds(ctx: OpContext, view: Conn, method: str, params: Mapping[str, Any]) -> bool:
    """Whether this 2026-07-28 request is served in rounds (else inside the request)."""
    if ctx.tasks is None or ctx.signer is None or method not in ASKING:
        return False
    if "requestState" in params or "inputResponses" in params:
        return True
    return any(view.declared(kind) for kind in _ASKABLE)


async def answer(
    ctx: OpContext,
    view: Conn,
    method: str,
    params: Mapping[str, Any],
    run: Callable[[OpContext], Awaitable[JSON]],
    release: Callable[[], Awaitable[object]] | None,
) -> JSON:
    """The request's answer: the call's result, or ``input_required`` with its questions.

    ``run`` serves the request under a context; ``release`` ends its scope (None: the
    scope is the host's own and outlives the call).
    """
    tasks, signer = ctx.tasks, ctx.signer
    if tasks is None or signer is None:  # in_rounds() is False then: never asked here
        raise InternalError("this daemon serves no rounds")
    state = params.get("requestState")
    if state is not None and not (isinstance(state, str) and state.startswith(_PREFIX)):
        if passthrough.servers(ctx):
            return await _inline(ctx, run, release)  # the upstream's own state
        raise StateError("malformed", "not a requestState mcpx issued")
    responses = params.get("inputResponses")
    if responses is not None and not (
        isinstance(responses, Mapping) and all(isinstance(v, Mapping) for v in responses.values())
    ):
        raise InvalidParams("inputResponses must be an object of result objects, by key")
    after = await _task_after(ctx, view, method, params)
    rounds = 0
    if state is None:
        owner = ext_tasks.owner_of(view, params)
        task = _start(ctx, tasks, view, method, params, run, release, owner)
        task.give(params.get("inputResponses"), hold=True)
    else:
        issued = signer.verify(state[len(_PREFIX) :], method, params)
        found = tasks.get(issued.call)
        if found is None:
            raise StateError(
                "over", "the call it resumes is over and forgotten; send the request again"
            )
        task, rounds = found, issued.rounds
        task.give(params.get("inputResponses"), hold=False)
    task.notify = ctx.notify
    held = float(ctx.settings["proto.askTimeout"])
    try:
        with anyio.move_on_after(held if after is None else min(held, after)):
            while not task.done and not task.open_requests():
                await task.changed()
    finally:
        task.notify = None  # until the host comes back, the call runs on alone
    if task.done:
        return task.outcome()
    if after is not None and not task.open_requests():
        return ext_tasks.created(task, tasks)  # it ran long without asking: a task now
    if rounds >= int(ctx.settings["proto.askRounds"]):
        task.cancel()
        raise InvalidRequest(
            f"the call came back asking more than {rounds} times (proto.askRounds); stopped"
        )
    out: JSON = {
        "resultType": "input_required",
        "requestState": _PREFIX + signer.issue(task.id, method, params, rounds + 1),
    }
    if requests := task.open_requests():
        out["inputRequests"] = requests
    return out


async def _task_after(
    ctx: OpContext, view: Conn, method: str, params: Mapping[str, Any]
) -> float | None:
    """How long this request waits before it is answered with a CreateTaskResult (None:
    it never is).

    Raises:
        MissingRequiredClientCapability: a ``required`` tool, the extension not declared.
    """
    if method != "tools/call":
        return None
    support = await ext_tasks.task_support(ctx, params)
    if not ext_tasks.declared(view):
        if support == "required":
            raise ext_tasks.missing(f"tool {params.get('name')!r} runs only as a task: it")
        return None
    return ext_tasks.delay(support, ctx)


def _start(
    ctx: OpContext,
    tasks: Tasks,
    view: Conn,
    method: str,
    params: Mapping[str, Any],
    run: Callable[[OpContext], Awaitable[JSON]],
    release: Callable[[], Awaitable[object]] | None,
    owner: str | None,
) -> Task:
    ttl = float(ctx.settings["proto.askTTL"])

    async def running(task: Task) -> JSON:
        def ask(question: str, question_params: JSON) -> Awaitable[JSON]:
            return task.ask(question, question_params, ttl)

        def notify(note: str, note_params: JSON) -> None:
            if task.notify is not None:
                task.notify(note, note_params)

        asker = host_asker(view, view.revision or "", ask)
        try:
            with ext_tasks.directing():  # this task is the call's, whatever it turns into
                return await run(replace(ctx, asker=asker, notify=notify))
        finally:
            if release is not None:
                with anyio.CancelScope(shield=True):
                    await release()

    task: Task = tasks.start(
        _server_of(method, params), _what(method, params), running, owner=owner
    )
    return task


async def _inline(
    ctx: OpContext,
    run: Callable[[OpContext], Awaitable[JSON]],
    release: Callable[[], Awaitable[object]] | None,
) -> JSON:
    try:
        return await run(ctx)
    finally:
        if release is not None:
            with anyio.CancelScope(shield=True):
                await release()


def _server_of(method: str, params: Mapping[str, Any]) -> str:
    arguments = params.get("arguments")
    if method == "tools/call" and isinstance(arguments, Mapping):
        server = arguments.get("server")
        if isinstance(server, str):
            return server
    return ""


def _what(method: str, params: Mapping[str, Any]) -> str:
    name = params.get("name", params.get("uri", ""))
    return f"{method} {name}".strip()
