"""What a door and the upstream call tell the telemetry about one request: ``Served``
(the SERVER side: its reply) and ``Called`` (the CLIENT side: its wait, result or
failure), with the events and child spans that show where its time went. Plain
objects: no OpenTelemetry here (times are wall-clock nanoseconds, as spans take them)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mcpx.wire import RequestId

__all__ = ["Called", "Child", "Event", "Served", "reply_error"]

# A moment in a span: (name, attributes, when) in ns.
Event = tuple[str, dict[str, Any], int]
# A child span done before its parent ends: (name, attributes, start, end) in ns, and
# its own events.
Child = tuple[str, dict[str, Any], int, int, tuple[Event, ...]]


def reply_error(reply: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(``error.type``, the JSON-RPC message) for an error reply or an ``isError`` result."""
    error = reply.get("error")
    if isinstance(error, Mapping):
        message = error.get("message")
        return str(error.get("code")), message if isinstance(message, str) else None
    result = reply.get("result")
    if isinstance(result, Mapping) and result.get("isError") is True:
        return "tool_error", None
    return None


class Served:
    """One host request being served: told its reply (and revision) before it ends."""

    __slots__ = ("attrs", "error")

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attrs = attrs
        self.error: tuple[str, str | None] | None = ("_OTHER", None)  # until answered

    def answered(self, reply: Mapping[str, Any], revision: str | None, session: str | None) -> None:
        self.error = reply_error(reply)
        if self.error is not None and self.error[0] != "tool_error":
            self.attrs["rpc.response.status_code"] = self.error[0]
        if revision is not None:
            self.attrs["mcp.protocol.version"] = revision
        if session is not None:
            self.attrs["mcp.session.id"] = session


class Called:
    """One upstream call being made: its revision, wait, result or failure; the events
    (``mcpx.task.poll``, ``mcpx.retry``) and child spans (``mcpx.instance.start`` with
    its ``mcpx.era.probe``, ``mcpx.question.wait``) met on the way. It is the client's
    ``RequestWatch`` for the call: told each request's id and each retry."""

    __slots__ = ("attrs", "children", "error", "events", "result", "traced")

    def __init__(self, attrs: dict[str, Any], *, traced: bool = True) -> None:
        self.attrs = attrs
        # Untraced (no OpenTelemetry): events and child spans have no reader, so none is
        # made; the attributes and the error still label the metrics.
        self.traced = traced
        self.error: tuple[str, str | None] | None = ("_OTHER", None)  # until it answers
        self.result: Mapping[str, Any] | None = None
        self.events: list[Event] = []
        self.children: list[Child] = []

    def queued(
        self,
        revision: str | None,
        waited: float,
        session_id: str | None = None,
        started: Child | None = None,
    ) -> None:
        """The pool handed over an instance after ``waited`` seconds; ``started``: the
        instance was started for this call (its span)."""
        if revision is not None:
            self.attrs["mcp.protocol.version"] = revision
        if session_id is not None:
            self.attrs["mcp.session.id"] = session_id
        if not self.traced:
            return
        if started is not None:
            self.children.append(started)
        self.event("mcpx.instance.ready", {"mcpx.wait.seconds": round(waited, 6)})

    def event(self, name: str, attrs: dict[str, Any], at: int | None = None) -> None:
        """An event now, or ``at`` (wall-clock ns) when it is told afterwards."""
        if self.traced:
            self.events.append((name, attrs, time.time_ns() if at is None else at))

    def sent(self, method: str, request_id: RequestId) -> None:
        if method == self.attrs["mcp.method.name"]:
            self.attrs.setdefault("jsonrpc.request.id", str(request_id))
        elif method == "tasks/get":
            self.event("mcpx.task.poll", {"jsonrpc.request.id": str(request_id)})

    def retried(self, method: str, reason: str) -> None:
        """``method`` sent again for ``reason``; "" when what was sent again carries no
        method (the GET of a listen stream)."""
        attrs = {"mcp.method.name": method} if method else {}
        attrs["mcpx.retry.reason"] = reason
        self.event("mcpx.retry", attrs)

    def restarted(self, reason: str, at: float) -> None:
        """The instance's start (for this call) began again another way at ``at`` (wall
        clock): a retry too, told once the start is over."""
        self.event("mcpx.retry", {"mcpx.retry.reason": reason}, int(at * 1e9))

    def answered(self, result: Mapping[str, Any]) -> None:
        self.result = result
        self.error = ("tool_error", None) if result.get("isError") is True else None

    def failed(self, error_type: str, message: str | None, status: str | None) -> None:
        self.error = (error_type, message)
        if status is not None:
            self.attrs["rpc.response.status_code"] = status
