"""The handlers of the broker's questions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpx import wire
from mcpx.questions import QuestionClosed

from ._errors import OpError

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


async def questions_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return {"questions": [q.as_json() for q in _broker(ctx).pending()]}


async def questions_show(ctx: OpContext, args: dict[str, Any]) -> Any:
    found = _broker(ctx).get(args["id"])
    if found is None:
        raise OpError(404, "unknown_question", f"no question {args['id']!r}")
    return found.as_json()


async def _settle(ctx: OpContext, qid: str, how: str, content: Any = None) -> Any:
    broker = _broker(ctx)
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
