"""Timing one upstream call for the call log: the ``CallRecord`` made when it ends.

``recording`` wraps a call in ``request_for_caller``: it is told when the pool handed
over an instance (``queued``: the wait, the upstream's revision) and the upstream's
answer (``answered``), and on the way out, however the call ended, it makes the one
record and hands it to the context's recorder. Without a recorder it yields None and
costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio

from mcpx.pool import Instance

from ._call_record import CallRecord, CallRecorder, Outcome, redact_error, redact_payload, trace_id
from ._errors import OpError

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["recording"]

# What names the target of a method, for the log's "tool" column.
_TARGET = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class _Timing:
    def __init__(self) -> None:
        self.ts = time.time()
        self.started = time.monotonic()
        self.handed: float | None = None  # when the pool handed over an instance
        self.revision: str | None = None
        self.result: dict[str, Any] | None = None

    def queued(self, inst: Instance) -> None:
        self.handed = time.monotonic()
        negotiated = inst.session.negotiated if inst.session is not None else None
        self.revision = negotiated.revision if negotiated is not None else None

    def answered(self, result: dict[str, Any]) -> None:
        self.result = result


@contextmanager
def recording(
    ctx: OpContext, server: str, method: str, params: dict[str, Any]
) -> Iterator[_Timing | None]:
    recorder = ctx.recorder
    if recorder is None:
        yield None
        return
    timing = _Timing()
    error: BaseException | None = None
    try:
        yield timing
    except BaseException as exc:
        error = exc
        raise
    finally:
        recorder.record(_record(ctx, recorder, server, method, params, timing, error))


def _record(
    ctx: OpContext,
    recorder: CallRecorder,
    server: str,
    method: str,
    params: dict[str, Any],
    timing: _Timing,
    error: BaseException | None,
) -> CallRecord:
    now = time.monotonic()
    handed = timing.handed if timing.handed is not None else now
    caller = ctx.caller
    target = params.get(_TARGET.get(method, ""))
    keep = recorder.payloads
    return CallRecord(
        ts=timing.ts,
        door=caller.door if caller is not None else "daemon",
        transport=caller.transport if caller is not None else None,
        caller=caller.who if caller is not None else None,
        server=server,
        method=method,
        tool=target if isinstance(target, str) else None,
        host_revision=caller.revision if caller is not None else None,
        upstream_revision=timing.revision,
        queue_ms=round((handed - timing.started) * 1000, 3),
        upstream_ms=round((now - handed) * 1000, 3),
        outcome=_outcome(timing.result, error),
        error=None if error is None else redact_error(_error_text(error)),
        trace_id=trace_id(ctx.caller_meta),
        arguments=redact_payload(_arguments(method, params)) if keep else None,
        result=redact_payload(timing.result) if keep and timing.result is not None else None,
    )


def _outcome(result: dict[str, Any] | None, error: BaseException | None) -> Outcome:
    if error is not None:
        return "cancelled" if isinstance(error, anyio.get_cancelled_exc_class()) else "error"
    if result is not None and result.get("isError"):
        return "tool_error"
    return "ok"


def _error_text(error: BaseException) -> str:
    if isinstance(error, anyio.get_cancelled_exc_class()):
        return "cancelled"
    if isinstance(error, OpError):
        return error.message
    return str(error) or type(error).__name__


def _arguments(method: str, params: dict[str, Any]) -> Any:
    if method in ("tools/call", "prompts/get"):
        return params.get("arguments")
    return {k: v for k, v in params.items() if k != "_meta"}
