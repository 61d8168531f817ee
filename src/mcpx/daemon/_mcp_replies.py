"""How ``/mcp`` answers over HTTP: JSON bodies, refusals, statuses by era.

Invariants:

- A refusal made at the HTTP level still carries a JSON-RPC error (so a client can
  show why), and reaches ``log.frames`` like every frame dispatch sends.
- 2026-07-28: an error answer's HTTP status follows its code (``wire.http_status``);
  before, a JSON-RPC answer is 200 whatever it says.
- An answer that cannot be encoded (an upstream's result nested too deep) is answered
  with the error -32603 for its id instead (``wire.in_place_of``), which is traced in
  its place: never a plain-text 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpx import wire
from mcpx.ops import OpContext
from mcpx.wire import InvalidRequest, McpError

__all__ = [
    "Held",
    "always_200",
    "answer_of",
    "answers_reply",
    "in_place",
    "json_reply",
    "offers_streams",
    "refuse",
    "status_of",
    "traced",
]

_JSON: Final = "application/json"

log = logging.getLogger("mcpx.daemon.mcp")


def json_reply(
    body: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(wire.dumps(body), status_code=status, media_type=_JSON, headers=headers)


def refuse(
    status: int,
    message: str,
    request_id: wire.RequestId | None = None,
    *,
    error: McpError | None = None,
    retry_after: str | None = None,
) -> Response:
    # An HTTP-level refusal still carries a JSON-RPC error, so a client can show why.
    headers = None if retry_after is None else {"Retry-After": retry_after}
    return json_reply(wire.error(request_id, error or InvalidRequest(message)), status, headers)


def traced(ctx: OpContext, rev: str | None, response: Response) -> Response:
    # Refusals made before dispatch ran still reach log.frames (dispatch traces its own).
    if ctx.trace is not None and response.body:
        frame = wire.loads(bytes(response.body))
        if isinstance(frame, Mapping):
            ctx.trace(rev, frame, None)
    return response


def in_place(ctx: OpContext, rev: str | None) -> Callable[[wire.Frame, McpError], wire.Frame]:
    """What a POST's answer that cannot be encoded is replaced with, traced (``rev``: the
    revision it was spelled for)."""

    def instead(frame: wire.Frame, why: McpError) -> wire.Frame:
        sent = cast(wire.Frame, wire.in_place_of(frame, why))
        _traced_instead(ctx, rev, frame, sent)
        return sent

    return instead


def answers_reply(ctx: OpContext, rev: str | None, answers: list[wire.Frame]) -> Response:
    """A batch's answers as one JSON array; one that cannot be encoded is replaced."""
    body, sent = wire.dumps_answer(answers)
    if sent is not answers:
        _traced_instead(ctx, rev, answers, sent)
    return Response(body, media_type=_JSON)


def _traced_instead(ctx: OpContext, rev: str | None, was: object, sent: object) -> None:
    log.warning("an answer could not be encoded (nested too deep?): -32603 sent instead")
    if ctx.trace is None:
        return
    for frame in wire.stand_ins(was, sent):
        ctx.trace(rev, frame, None)


class Held:
    """An ASGI response that calls ``done`` once it is over, however it ends."""

    def __init__(self, app: ASGIApp, done: Callable[[], None]) -> None:
        self._app = app
        self._done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._app(scope, receive, send)
        finally:
            self._done()


def offers_streams(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/event-stream" in accept or "*/*" in accept


def status_of(reply: wire.Frame) -> int:
    # 2026-07-28: the status is a function of the error code (S-HTTP).
    error = reply.get("error")
    return wire.http_status(int(error["code"])) if isinstance(error, Mapping) else 200


def always_200(reply: wire.Frame) -> int:
    return 200


def answer_of(reply: wire.Frame | None, *, modern: bool) -> Response:
    if reply is None:
        return Response(status_code=202)
    error = reply.get("error")
    if modern and isinstance(error, Mapping):
        # 2026-07-28: the status is a function of the error code (S-HTTP).
        return json_reply(reply, wire.http_status(int(error["code"])))
    return json_reply(reply)
