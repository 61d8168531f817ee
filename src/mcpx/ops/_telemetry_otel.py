"""OpenTelemetry's side of the daemon's telemetry: spans and metrics, exported by the
SDK as the standard ``OTEL_*`` variables say. Imported only when export is configured.

- Providers of its own (never the process-global ones): the daemon owns its exporters
  and ends them at its stop (``shutdown``: what is batched is sent).
- Exporters: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` ``otlp`` (the
  default), ``console`` or ``none``; OTLP over HTTP/protobuf, or gRPC when
  ``OTEL_EXPORTER_OTLP_PROTOCOL`` (or its per-signal variable) says ``grpc``
  (``OTEL_EXPORTER_OTLP_ENDPOINT`` and the rest are read by the exporter itself).
- Trace context crosses in ``params._meta`` as W3C ``traceparent``/``tracestate``
  (the MCP conventions' context propagation); ``baggage`` is left as the host sent it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcpx import __version__

from ._call_record import redact_payload
from ._telemetry_prom import BUCKETS

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from ._telemetry_views import Called, Child, Served

__all__ = ["Otel"]

log = logging.getLogger("mcpx.telemetry")

_W3C: Final = TraceContextTextMapPropagator()
# What the duration histograms carry (the conventions' metric attributes: no ids).
_METRIC_ATTRS: Final = frozenset(
    {
        "mcp.method.name",
        "gen_ai.tool.name",
        "gen_ai.prompt.name",
        "gen_ai.operation.name",
        "rpc.response.status_code",
        "mcp.protocol.version",
        "network.transport",
        "server.address",
        "server.port",
    }
)


def _exporter_kind(environ: Mapping[str, str], variable: str) -> str:
    return environ.get(variable, "otlp").strip().lower() or "otlp"


def _grpc(environ: Mapping[str, str], signal: str) -> bool:
    """Whether OTLP goes over gRPC (``OTEL_EXPORTER_OTLP[_<SIGNAL>]_PROTOCOL=grpc``);
    HTTP/protobuf otherwise, the SDK's default."""
    protocol = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    return protocol.strip().lower() == "grpc"


def _span_exporter(environ: Mapping[str, str]) -> SpanExporter:
    # Each exporter is imported only when chosen: grpcio is loaded only for gRPC.
    if _grpc(environ, "TRACES"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpans,
        )

        return GrpcSpans()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _metric_exporter(environ: Mapping[str, str]) -> MetricExporter:
    if _grpc(environ, "METRICS"):
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetrics,
        )

        return GrpcMetrics()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter()


class Otel:
    """Tracer and meter of the daemon, and the instruments both doors record into."""

    def __init__(
        self, pool_numbers: Callable[[], dict[str, Any]], environ: Mapping[str, str]
    ) -> None:
        resource = Resource.create(
            {
                "service.name": environ.get("OTEL_SERVICE_NAME") or "mcpx",
                "service.version": __version__,
            }
        )
        self._tracers = TracerProvider(resource=resource)
        spans = _exporter_kind(environ, "OTEL_TRACES_EXPORTER")
        if spans == "otlp":
            self._tracers.add_span_processor(BatchSpanProcessor(_span_exporter(environ)))
        elif spans == "console":
            self._tracers.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        readers: list[MetricReader] = []
        numbers = _exporter_kind(environ, "OTEL_METRICS_EXPORTER")
        if numbers == "otlp":
            readers.append(PeriodicExportingMetricReader(_metric_exporter(environ)))
        elif numbers == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        self._meters = MeterProvider(metric_readers=readers, resource=resource)
        self.tracer = self._tracers.get_tracer("mcpx", __version__)
        meter = self._meters.get_meter("mcpx", __version__)
        self._server = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="MCP request duration as observed on the receiver.",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )
        self._client = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="MCP request duration as observed on the sender.",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )
        self._sessions = meter.create_histogram(
            "mcp.server.session.duration",
            unit="s",
            description="The duration of the MCP session as observed on the MCP server.",
            explicit_bucket_boundaries_advisory=list(BUCKETS),
        )
        self._in_flight = meter.create_up_down_counter(
            "mcpx.calls.in_flight", unit="{call}", description="Upstream calls running now."
        )
        self._numbers = pool_numbers
        meter.create_observable_gauge(
            "mcpx.instances",
            [self._instances],
            unit="{instance}",
            description="Upstream instances, per server and state.",
        )
        meter.create_observable_counter(
            "mcpx.instance.lifecycle",
            [self._lifecycle],
            unit="{event}",
            description="Upstream instances started and crashed, per server.",
        )
        meter.create_observable_counter(
            "mcpx.events.dropped",
            [self._dropped],
            unit="{event}",
            description="Events a slow subscriber of the event stream missed.",
        )
        # The question and task stores are read on the event loop only: the daemon
        # samples them (``stores_sampled``) and the exporter's thread reads the sample.
        self._stores: dict[str, Any] = {}
        self.sample_every = _sample_every(environ)
        meter.create_observable_gauge(
            "mcpx.questions.open",
            [self._questions],
            unit="{question}",
            description="Upstream questions waiting for an answer.",
        )
        meter.create_observable_gauge(
            "mcpx.tasks",
            [self._tasks],
            unit="{task}",
            description="Tasks kept, per status.",
        )

    def stores_sampled(self, numbers: dict[str, Any]) -> None:
        """The latest questions open and tasks per status (``PromMetrics.store_numbers``)."""
        self._stores = numbers  # one reference swapped: the exporter reads whole samples

    def _questions(self, _: CallbackOptions) -> list[Observation]:
        open_ = self._stores.get("questions_open")
        return [] if open_ is None else [Observation(open_)]

    def _tasks(self, _: CallbackOptions) -> list[Observation]:
        got = (self._stores.get("tasks") or {}).items()
        return [Observation(n, {"mcpx.task.status": status}) for status, n in got]

    def _dropped(self, _: CallbackOptions) -> list[Observation]:
        return [Observation(self._numbers()["events_dropped"])]

    def _instances(self, _: CallbackOptions) -> list[Observation]:
        got = self._numbers()["instances"].items()
        return [Observation(n, {"mcpx.server": s, "mcpx.state": st}) for (s, st), n in got]

    def _lifecycle(self, _: CallbackOptions) -> list[Observation]:
        got = self._numbers()["lifecycle"].items()
        return [Observation(n, {"mcpx.server": s, "mcpx.event": k}) for (s, k), n in got]

    @contextmanager
    def server_span(self, attrs: dict[str, Any], meta: object, served: Served) -> Iterator[None]:
        """The SERVER span, the host's trace context its parent, current while it runs."""
        carrier = meta if isinstance(meta, Mapping) else {}
        parent = _W3C.extract(carrier) if "traceparent" in carrier else None
        span = self.tracer.start_span(_name(attrs), parent, SpanKind.SERVER)
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False):
                yield
        finally:
            _end(span, attrs, served.error)

    @contextmanager
    def client_span(
        self,
        attrs: dict[str, Any],
        meta: dict[str, Any],
        called: Called,
        payloads: bool,
        params: Mapping[str, Any],
    ) -> Iterator[None]:
        """The CLIENT span, a child of the current one (else of the host's context in
        ``meta``); ``meta``'s trace context becomes this span's."""
        current = trace.get_current_span().get_span_context()
        parent = None
        if not current.is_valid and "traceparent" in meta:
            parent = _W3C.extract(meta)
        span = self.tracer.start_span(_name(attrs), parent, SpanKind.CLIENT)
        _W3C.inject(meta, trace.set_span_in_context(span))
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False):
                yield
        finally:
            for name, event, at in called.events:
                span.add_event(name, event, at)
            inside = trace.set_span_in_context(span)
            for child in called.children:
                self.child(child, inside)
            if payloads and attrs.get("gen_ai.operation.name") == "execute_tool":
                attrs["gen_ai.tool.call.arguments"] = _json(params.get("arguments"))
                if called.result is not None and called.error is None:
                    attrs["gen_ai.tool.call.result"] = _json(called.result)
            _end(span, attrs, called.error)

    def child(self, child: Child, parent: Context | None) -> None:
        """A span already over (an instance start, a question wait), told afterwards."""
        name, attrs, start, end, events = child
        span = self.tracer.start_span(name, parent, SpanKind.INTERNAL, attrs, start_time=start)
        for event, event_attrs, at in events:
            span.add_event(event, event_attrs, at)
        span.end(end)

    def session_ended(self, attrs: Mapping[str, Any], took: float) -> None:
        self._sessions.record(took, attrs)

    def served(self, attrs: Mapping[str, Any], error: tuple[str, Any] | None, took: float) -> None:
        self._server.record(took, _metric_attrs(attrs, error))

    def called(
        self, server: str, attrs: Mapping[str, Any], error: tuple[str, Any] | None, took: float
    ) -> None:
        self._client.record(took, _metric_attrs(attrs, error) | {"mcpx.server": server})

    def in_flight(self, server: str, change: int) -> None:
        self._in_flight.add(change, {"mcpx.server": server})

    def shutdown(self) -> None:
        for provider in (self._tracers, self._meters):
            try:
                provider.shutdown()
            except Exception:  # an exporter that cannot reach its collector: logged, not fatal
                log.warning("telemetry: the exporter did not shut down cleanly", exc_info=True)


def _sample_every(environ: Mapping[str, str]) -> float:
    """Seconds between samples of the stores: half the metric export interval (the
    SDK's ``OTEL_METRIC_EXPORT_INTERVAL``, milliseconds, 60000 by default), so an export
    is never more than that stale; within 50 ms and 30 s."""
    try:
        interval = float(environ.get("OTEL_METRIC_EXPORT_INTERVAL") or 60000) / 1000
    except ValueError:
        interval = 60.0  # the SDK falls back to its default too
    return min(max(interval / 2, 0.05), 30.0)


def _name(attrs: Mapping[str, Any]) -> str:
    target = attrs.get("gen_ai.tool.name") or attrs.get("gen_ai.prompt.name")
    method = str(attrs["mcp.method.name"])
    return f"{method} {target}" if target else method


def _end(span: trace.Span, attrs: Mapping[str, Any], error: tuple[str, str | None] | None) -> None:
    span.set_attributes(attrs)
    if error is not None:
        span.set_attribute("error.type", error[0])
        span.set_status(StatusCode.ERROR, error[1])
    span.end()


def _metric_attrs(attrs: Mapping[str, Any], error: tuple[str, Any] | None) -> dict[str, Any]:
    out = {k: v for k, v in attrs.items() if k in _METRIC_ATTRS}
    if error is not None:
        out["error.type"] = error[0]
    return out


def _json(value: Any) -> str:
    # Structured values are not span attributes: JSON, as the conventions allow.
    return json.dumps(redact_payload(value), default=str, ensure_ascii=False)
