"""Timing one upstream call for the call log: the ``CallRecord`` made when it ends.

``recording`` wraps a call in ``request_for_caller``: it is told when the pool handed
over an instance (``queued``: the wait, the upstream's revision) and the upstream's
answer (``answered``), and on the way out, however the call ended, it makes the one
record and hands it to the context's recorder, after the answer has gone (``later``).
Without a recorder it yields None and costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from mcpx.client import REQUEST_WATCH, Negotiated, UpstreamTimeout
from mcpx.pool import Instance
from mcpx.wire import McpError

from ._call_record import CallRecord, CallRecorder, Outcome, redact_error, redact_payload, trace_id
from ._errors import OpError
from ._later import later
from ._telemetry import network_transport
from ._telemetry_views import Called, Child, Event

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["CallTiming", "answered_ahead", "recording", "timing_ahead"]

# What names the target of a method, for the log's "tool" column.
_TARGET = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class CallTiming:
    """One call's times and answer, as ``recording`` (or ``timing_ahead``) keeps them."""

    def __init__(self) -> None:
        self.ts = time.time()
        self.started = time.monotonic()
        self.handed: float | None = None  # when the pool handed over an instance
        self.revision: str | None = None
        self.session_id: str | None = None
        self.result: dict[str, Any] | None = None
        self.called: Called | None = None  # the telemetry's view of the call

    def queued(self, inst: Instance) -> None:
        self.handed = time.monotonic()
        session = inst.session
        negotiated = session.negotiated if session is not None else None
        self.revision = negotiated.revision if negotiated is not None else None
        self.session_id = session.session_id if session is not None else None
        if self.called is not None:
            self.called.queued(
                self.revision,
                self.handed - self.started,
                self.session_id,
                self._started(self.called, inst, negotiated),
            )

    def _started(self, called: Called, inst: Instance, how: Negotiated | None) -> Child | None:
        """``mcpx.instance.start``: the instance was made after this call began (the
        pool started it for the call), from its making until it was handed over; its
        ``mcpx.era.probe`` event, and the start's own retries on the call's span."""
        if inst.started_at < self.ts:
            return None
        attrs: dict[str, Any] = {"mcpx.server": inst.server.name}
        events: tuple[Event, ...] = ()
        if how is not None:
            attrs["mcpx.era"] = how.era.value
            attrs["mcp.protocol.version"] = how.revision
            events = (_era_probe(how),)
            for reason, at in how.fallbacks:
                called.restarted(reason, at)
        ready = self.ts + (time.monotonic() - self.started)
        return "mcpx.instance.start", attrs, int(inst.started_at * 1e9), int(ready * 1e9), events

    def answered(self, result: dict[str, Any]) -> None:
        self.result = result
        if self.called is not None:
            self.called.answered(result)


@contextmanager
def recording(
    ctx: OpContext, server: str, method: str, params: dict[str, Any], meta: dict[str, Any]
) -> Iterator[CallTiming | None]:
    """Times the call for the recorder and the telemetry (a CLIENT span, whose trace
    context replaces the caller's in ``meta``, the ``_meta`` sent upstream)."""
    recorder, telemetry = ctx.recorder, ctx.telemetry
    if recorder is None and telemetry is None:
        yield None
        return
    timing = CallTiming()
    error: BaseException | None = None
    with (
        telemetry.calling(server, method, params, meta, _upstream(ctx, server))
        if telemetry is not None
        else nullcontext()
    ) as called:
        timing.called = called
        # The client tells the span each request's id and each retry (only when traced).
        traced = called is not None and telemetry is not None and telemetry.tracing
        watching = REQUEST_WATCH.set(called) if traced else None
        try:
            yield timing
        except BaseException as exc:
            error = exc
            if called is not None:
                called.failed(*_error_type(exc))
            raise
        finally:
            if watching is not None:
                REQUEST_WATCH.reset(watching)
            if recorder is not None:
                # Made after the answer has gone (``later``), as it was when the call ended.
                ended = time.monotonic()
                later(_record, ctx, recorder, server, method, params, timing, error, ended)


def timing_ahead(ctx: OpContext, inst: Instance) -> CallTiming | None:
    """The timing of a call handed to ``inst`` at once, without ``recording`` (one sent
    ahead: ``answered_ahead`` ends it); None when nobody records."""
    if ctx.recorder is None and ctx.telemetry is None:
        return None
    timing = CallTiming()
    timing.queued(inst)
    return timing


def answered_ahead(
    ctx: OpContext,
    server: str,
    method: str,
    params: dict[str, Any],
    timing: CallTiming,
    result: dict[str, Any],
    ended: float,
) -> None:
    """What ``recording`` makes of a call that ``timing`` timed since ``timing_ahead``,
    answered ``result`` at ``ended`` without its caller: its record and its CLIENT
    metrics, made now (the caller runs this after the answer has gone)."""
    timing.answered(result)
    if ctx.recorder is not None:
        _record(ctx, ctx.recorder, server, method, params, timing, None, ended)
    if ctx.telemetry is not None:
        upstream = _upstream(ctx, server)
        took = ended - timing.started
        ctx.telemetry.called_plain(
            server, method, params, upstream, timing.revision, timing.session_id, result, took
        )


def _record(
    ctx: OpContext,
    recorder: CallRecorder,
    server: str,
    method: str,
    params: dict[str, Any],
    timing: CallTiming,
    error: BaseException | None,
    now: float,
) -> None:
    """The call's one record, handed to ``recorder``."""
    handed = timing.handed if timing.handed is not None else now
    caller = ctx.caller
    target = params.get(_TARGET.get(method, ""))
    keep = recorder.payloads
    record = CallRecord(
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
    recorder.record(record)


def _era_probe(how: Negotiated) -> Event:
    """When the era was settled: which, at what revision, how it was learned (probe,
    cache, forced) and what the era cache said (hit, stale, miss, off)."""
    attrs = {
        "mcpx.era": how.era.value,
        "mcp.protocol.version": how.revision,
        "mcpx.era.source": how.source,
        "mcpx.era.cache": how.cache,
    }
    return "mcpx.era.probe", attrs, int(how.settled_at * 1e9)


def _upstream(ctx: OpContext, server: str) -> dict[str, Any]:
    """The CLIENT span's attributes the server's config gives: transport, address."""
    config = ctx.pool.servers.get(server)
    if config is None:
        return {}
    attrs: dict[str, Any] = {"network.transport": network_transport(config.transport)}
    if config.url:
        url = urlsplit(config.url)
        if url.hostname:
            attrs["server.address"] = url.hostname
            attrs["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    return attrs


def _error_type(error: BaseException) -> tuple[str, str | None, str | None]:
    """(``error.type``, description, ``rpc.response.status_code``) of a failed call: a
    JSON-RPC error's code, a timeout's ``timeout``, else the error's class."""
    if isinstance(error, anyio.get_cancelled_exc_class()):
        return "cancelled", None, None
    if isinstance(error, McpError):
        return str(error.code), error.message, str(error.code)
    if isinstance(error, UpstreamTimeout):
        return "timeout", None, None
    if isinstance(error, OpError):
        return error.code, None, None
    return type(error).__qualname__, None, None


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
