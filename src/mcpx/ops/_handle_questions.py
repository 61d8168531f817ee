"""The handlers of the broker's questions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpx import wire
from mcpx.questions import QuestionClosed

from ._errors import OpError
from ._handle_tasks import owner_seen, task_store

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = [
    "questions_answer",
    "questions_cancel",
    "questions_decline",
    "questions_list",
    "questions_show",
]


def _broker(ctx: OpContext) -> Any:
    if ctx.broker is None:
        raise OpError(503, "unavailable", "this daemon keeps no questions")
    return ctx.broker


def _seen(ctx: OpContext) -> Callable[[Any], bool]:
    """Which questions a caller sees. The operator: every one. An OAuth user: those of its
    own calls (``oauth:<sub>``, or a session it named: ``oauth:<sub>|named:…``), and a
    shared server's question (no identity: it cannot be told whose) only when one of the
    user's own tasks was parked on it."""
    owner = owner_seen(ctx)
    if owner is None:
        return lambda q: True
    mine = task_store(ctx).list(owner) if ctx.tasks is not None else []
    parked = {getattr(q, "id", q) for t in mine for q in t.brokered}
    return lambda q: (
        q.identity == owner
        or (q.identity or "").startswith(owner + "|")
        or (q.identity is None and q.id in parked)
    )


async def questions_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    sees = _seen(ctx)
    return {"questions": [q.as_json() for q in _broker(ctx).pending() if sees(q)]}


async def questions_show(ctx: OpContext, args: dict[str, Any]) -> Any:
    found = _broker(ctx).get(args["id"])
    if found is None or not _seen(ctx)(found):
        raise OpError(404, "unknown_question", f"no question {args['id']!r}")
    return found.as_json()


async def _settle(ctx: OpContext, qid: str, how: str, content: Any = None) -> Any:
    broker = _broker(ctx)
    asked = broker.get(qid)
    if asked is not None and not _seen(ctx)(asked):
        raise OpError(404, "unknown_question", f"no question {qid!r}")
    try:
        if how == "answer":
            done = broker.answer(qid, content if isinstance(content, dict) else {})
        else:
            done = getattr(broker, how)(qid)
    except QuestionClosed as exc:
        raise OpError(409, "question_closed", exc.message) from exc
    except wire.McpError as exc:  # the answer does not match the requested schema
        details = exc.data if isinstance(exc.data, dict) else {}
        raise OpError(400, "invalid_answer", exc.message, details) from exc
    return done.as_json()


async def questions_answer(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "answer", args.get("content"))


async def questions_decline(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "decline")


async def questions_cancel(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "cancel")
