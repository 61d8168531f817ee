"""Traces and metrics in the OpenTelemetry MCP conventions: what the doors and the
upstream call hook into.

Theory of operation:

- One ``Telemetry`` per daemon, made by ``mcpx.daemon`` (which alone loads its parts).
  Its Prometheus side (``_telemetry_prom``) is always there: two histogram observations
  per call, read by ``GET /metrics``. Its OpenTelemetry side (``_telemetry_otel``: spans
  and OTLP export) exists only when configured (``OTEL_*`` exporter variables or
  ``telemetry.enabled``); when it does not, the SDK is never imported.
- ``serving``: the SERVER span of one host request (a door: ``server.dispatch``), its
  parent the host's ``traceparent`` in ``params._meta``. ``calling``: the CLIENT span of
  one upstream call (``_call_timing.recording``), a child of whatever span is current;
  it rewrites ``traceparent``/``tracestate`` in the ``_meta`` sent upstream to its own,
  so the upstream's span is its child. Both record their operation's duration.
- What a slow call met on the way, on its CLIENT span: ``mcpx.instance.start`` (the
  pool started an instance for it; its event ``mcpx.era.probe`` tells the era found and
  what the era cache said) and ``mcpx.question.wait`` (an upstream question, with who
  answered) as child spans; ``mcpx.task.poll`` and ``mcpx.retry`` (a request sent again,
  or the start begun again another way, with the reason) as events.
  Without OpenTelemetry none of it is made (``Called`` only collects, the client's
  ``REQUEST_WATCH`` stays unset).
- ``session_ended``: ``mcp.server.session.duration`` of a legacy ``/mcp`` session or a
  stdio host, recorded when it ends.
- ``sample_stores``: questions open and tasks per status for OpenTelemetry's gauges,
  read on the event loop (the stores are not the exporter thread's to read).
- Attribute names and values are the conventions' (docs/gen-ai/mcp.md): ``error.type``
  is the JSON-RPC code as a string, ``tool_error`` for a result with ``isError``;
  ``mcp.session.id`` only for a request in a session (never a 2026-07-28 one).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from ._later import later
from ._telemetry_views import Called, Child, Served

if TYPE_CHECKING:
    from mcpx.config import Settings

    from ._telemetry_otel import Otel
    from ._telemetry_prom import PromMetrics

__all__ = [
    "METRICS_CONTENT_TYPE",
    "Called",
    "Served",
    "Telemetry",
    "configured",
    "mcp_attributes",
    "network_transport",
]

# Prometheus' text exposition format, as GET /metrics answers.
METRICS_CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
# The variables that turn export on (the SDK's own names); "none" for both is off.
_EXPORTER_VARS: Final = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER")
_ENDPOINT_VARS: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


def configured(settings: Settings, environ: Mapping[str, str] | None = None) -> bool:
    """Whether OpenTelemetry export is on: ``telemetry.enabled``, an OTLP endpoint, or
    an exporter variable other than ``none``."""
    env = os.environ if environ is None else environ
    if settings["telemetry.enabled"] or any(env.get(v) for v in _ENDPOINT_VARS):
        return True
    return any(env.get(v, "none").strip().lower() not in ("", "none") for v in _EXPORTER_VARS)


def network_transport(transport: str | None) -> str | None:
    """``network.transport`` for an MCP transport: ``pipe`` for stdio, ``tcp`` for HTTP."""
    if transport == "stdio":
        return "pipe"
    return {"http": "tcp", "sse": "tcp", "unix": "unix"}.get(transport or "")


def _server_attributes(
    frame: Mapping[str, Any], transport: str | None, request_id: object
) -> dict[str, Any]:
    params = frame.get("params")
    attrs = mcp_attributes(str(frame.get("method")), params if isinstance(params, Mapping) else {})
    if (net := network_transport(transport)) is not None:
        attrs["network.transport"] = net
    if request_id is not None:
        attrs["jsonrpc.request.id"] = str(request_id)
    return attrs


def mcp_attributes(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a request's method and params give, for either side."""
    attrs: dict[str, Any] = {"mcp.method.name": method}
    name = params.get("name")
    if method == "tools/call":
        attrs["gen_ai.operation.name"] = "execute_tool"
        if isinstance(name, str):
            attrs["gen_ai.tool.name"] = name
    elif method == "prompts/get" and isinstance(name, str):
        attrs["gen_ai.prompt.name"] = name
    uri = params.get("uri")
    if method.startswith("resources/") and isinstance(uri, str):
        attrs["mcp.resource.uri"] = uri
    return attrs


class Telemetry:
    """The daemon's traces and metrics (see the module docstring)."""

    def __init__(self, prom: PromMetrics, otel: Otel | None = None, payloads: bool = False):
        self.prom = prom
        self.otel = otel
        self.payloads = payloads
        # The upstream calls traced now, per server: a question from a server with one
        # call in flight is that call's (the question router's own rule).
        self._calls: dict[str, list[Called]] = {}

    @property
    def tracing(self) -> bool:
        return self.otel is not None

    def metrics_text(self) -> bytes:
        """``GET /metrics``: every metric in Prometheus' text format (on the event loop)."""
        return self.prom.text()

    def sample_stores(self) -> None:
        """Give OpenTelemetry's gauges the questions open and tasks per status (on the
        event loop: the daemon calls it every ``otel.sample_every`` seconds)."""
        if self.otel is not None:
            self.otel.stores_sampled(self.prom.store_numbers())

    def session_ended(self, transport: str | None, revision: str | None, lasted: float) -> None:
        """A host's session ended (a legacy ``/mcp`` session, a stdio host) after
        ``lasted`` seconds: ``mcp.server.session.duration``."""
        attrs: dict[str, Any] = {}
        if (net := network_transport(transport)) is not None:
            attrs["network.transport"] = net
        if revision is not None:
            attrs["mcp.protocol.version"] = revision
        self.prom.session_ended(attrs, lasted)
        if self.otel is not None:
            self.otel.session_ended(attrs, lasted)

    def question_waited(
        self, server: str, method: str, answered_by: str, outcome: str, started: float
    ) -> None:
        """An upstream question ``server`` asked was settled (wall-clock ``started``):
        ``mcpx.question.wait``, a child of the call it belongs to when there is one."""
        if self.otel is None:
            return
        attrs = {
            "mcpx.server": server,
            "mcp.method.name": method,
            "mcpx.question.answered_by": answered_by,
            "mcpx.question.outcome": outcome,
        }
        child: Child = ("mcpx.question.wait", attrs, int(started * 1e9), time.time_ns(), ())
        calls = self._calls.get(server, ())
        if len(calls) == 1:
            calls[0].children.append(child)  # sent with the call's span, as its child
        else:
            self.otel.child(child, None)

    @contextmanager
    def serving(
        self, frame: Mapping[str, Any], transport: str | None, request_id: object
    ) -> Iterator[Served]:
        """The SERVER side of one host request; the caller tells ``answered``."""
        started = time.monotonic()
        if self.otel is None:
            # Only the metrics: their attributes are made after the answer (``later``).
            served = Served({})
            try:
                yield served
            finally:
                took = time.monotonic() - started
                later(self._served, frame, transport, request_id, served, took)
            return
        attrs = _server_attributes(frame, transport, request_id)
        served = Served(attrs)
        try:
            params = frame.get("params")
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            with self.otel.server_span(attrs, meta, served):
                yield served
        finally:
            took = time.monotonic() - started
            self.prom.served(attrs, served.error, took)
            self.otel.served(attrs, served.error, took)

    def _served(
        self,
        frame: Mapping[str, Any],
        transport: str | None,
        request_id: object,
        served: Served,
        took: float,
    ) -> None:
        attrs = _server_attributes(frame, transport, request_id) | served.attrs
        self.prom.served(attrs, served.error, took)

    @contextmanager
    def calling(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any],
        meta: dict[str, Any],
        upstream: Mapping[str, Any],
    ) -> Iterator[Called]:
        """The CLIENT side of one upstream call. ``meta`` is the ``_meta`` that goes
        upstream: its trace context becomes this span's. ``upstream``: the attributes
        the server's config gives (transport, address)."""
        started = time.monotonic()
        if self.otel is None:
            # Only the metrics, counted after the answer (``later``), their attributes
            # made then.
            called = Called({"mcp.method.name": method}, traced=False)
            try:
                yield called
            finally:
                took = time.monotonic() - started
                later(self._called, server, method, params, upstream, called, took)
            return
        attrs = mcp_attributes(method, params) | dict(upstream)
        called = Called(attrs)
        self.otel.in_flight(server, 1)
        self._calls.setdefault(server, []).append(called)
        try:
            with self.otel.client_span(attrs, meta, called, self.payloads, params):
                yield called
        finally:
            self._left(server, called)
            self.otel.in_flight(server, -1)
            took = time.monotonic() - started
            self.prom.called(server, attrs, called.error, took)
            self.otel.called(server, attrs, called.error, took)

    def _called(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any],
        upstream: Mapping[str, Any],
        called: Called,
        took: float,
    ) -> None:
        attrs = mcp_attributes(method, params) | dict(upstream) | called.attrs
        self.prom.called(server, attrs, called.error, took)

    def called_plain(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any],
        upstream: Mapping[str, Any],
        revision: str | None,
        session_id: str | None,
        result: Mapping[str, Any],
        took: float,
    ) -> None:
        """An upstream call's metrics as ``calling`` counts them, for one made without
        it (sent ahead, answered ``result`` at once by the upstream of ``revision``),
        counted now."""
        called = Called({"mcp.method.name": method}, traced=False)
        called.queued(revision, 0.0, session_id)
        called.answered(result)
        self._called(server, method, params, upstream, called, took)

    def served_plain(
        self,
        frame: Mapping[str, Any],
        transport: str | None,
        reply: Mapping[str, Any],
        revision: str | None,
        session_id: str | None,
        took: float,
    ) -> None:
        """A host request's metrics as ``serving`` counts them without OpenTelemetry,
        for one answered ``reply`` without it (a call answered ahead), counted now."""
        served = Served({})
        served.answered(reply, revision, session_id)
        self._served(frame, transport, frame.get("id"), served, took)

    def _left(self, server: str, called: Called) -> None:
        calls = self._calls[server]
        calls.remove(called)
        if not calls:
            del self._calls[server]
