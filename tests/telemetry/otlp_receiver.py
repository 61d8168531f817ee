"""A real OTLP/HTTP receiver for the telemetry tests (the ``receiver`` fixture is in
conftest): ``POST /v1/traces`` and
``/v1/metrics`` on 127.0.0.1, each body decoded with ``opentelemetry-proto`` as the
collector would, and kept as plain dicts for the tests to look at."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

SERVER_KIND, CLIENT_KIND = 2, 3  # Span.SpanKind
STATUS_ERROR = 2  # Status.StatusCode


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        assert isinstance(kv, KeyValue)
        out[kv.key] = _value(kv.value)
    return out


@dataclass
class Receiver:
    """What the receiver was sent: spans, every histogram data point exported, and
    every gauge and sum data point."""

    url: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    histograms: list[dict[str, Any]] = field(default_factory=list)
    numbers: list[dict[str, Any]] = field(default_factory=list)
    exports: int = 0  # metric export requests taken: a point's "export" is its number
    lock: threading.Lock = field(default_factory=threading.Lock)

    def span_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.spans)

    def histogram_points(self, name: str) -> list[dict[str, Any]]:
        with self.lock:
            return [h for h in self.histograms if h["name"] == name]

    def number_points(self, name: str) -> list[dict[str, Any]]:
        """A gauge's or sum's data points, oldest first."""
        with self.lock:
            return [n for n in self.numbers if n["name"] == name]

    def newest_numbers(self, name: str) -> list[dict[str, Any]]:
        """A gauge's or sum's data points in the newest export that had it (an
        attribute set no longer observed is in none after it)."""
        points = self.number_points(name)
        return [p for p in points if p["export"] == points[-1]["export"]] if points else []

    def take_traces(self, body: bytes) -> bytes:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            service = _attrs(rs.resource.attributes).get("service.name")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    span = {
                        "service": service,
                        "trace": s.trace_id.hex(),
                        "id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "attrs": _attrs(s.attributes),
                        "status": s.status.code,
                        "events": [e.name for e in s.events],
                        "event_details": [
                            {"name": e.name, "attrs": _attrs(e.attributes), "at": e.time_unix_nano}
                            for e in s.events
                        ],
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                    }
                    with self.lock:
                        self.spans.append(span)
        return ExportTraceServiceResponse().SerializeToString()

    def take_metrics(self, body: bytes) -> bytes:
        request = ExportMetricsServiceRequest.FromString(body)
        with self.lock:
            self.exports += 1
            export = self.exports
        for rm in request.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    if kind in ("gauge", "sum"):
                        self._take_numbers(m.name, m.unit, getattr(m, kind).data_points, export)
                    if kind != "histogram":
                        continue
                    for p in m.histogram.data_points:
                        point = {
                            "name": m.name,
                            "unit": m.unit,
                            "attrs": _attrs(p.attributes),
                            "count": p.count,
                            "bounds": list(p.explicit_bounds),
                        }
                        with self.lock:
                            self.histograms.append(point)
        return ExportMetricsServiceResponse().SerializeToString()

    def _take_numbers(self, name: str, unit: str, points: Any, export: int) -> None:
        for p in points:
            value = p.as_int if p.WhichOneof("value") == "as_int" else p.as_double
            point = {"name": name, "unit": unit, "attrs": _attrs(p.attributes), "value": value}
            point["export"] = export
            with self.lock:
                self.numbers.append(point)


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 until the block ends."""
    got = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                answer = got.take_traces(body)
            elif self.path == "/v1/metrics":
                answer = got.take_metrics(body)
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:  # quiet: pytest shows what matters
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main() -> None:
    """Standalone (the bench's telemetry-on rows): listen until stopped, print the URL,
    and at the end how many spans and histogram points came.

        PYTHONPATH=tests .venv/bin/python -m telemetry.otlp_receiver
    """
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with receiving() as got:
        print(got.url, flush=True)
        with suppress(KeyboardInterrupt):
            stop.wait()
        print(f"{len(got.span_list())} spans, {len(got.histograms)} histogram points", flush=True)


if __name__ == "__main__":
    main()
