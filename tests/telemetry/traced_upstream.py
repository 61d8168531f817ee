"""tests/fixtures/sdk_server.py with the OpenTelemetry SDK installed, as an operator
would run an instrumented server: the official SDK's own SERVER spans (it makes them
from ``params._meta``) are exported over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``.

Run by the 2.3.0 peer's python (scripts/peers.sh installs its OpenTelemetry SDK).
Spans are exported as each ends (a simple processor): the daemon may end this process
at any time.
"""

import runpy
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

SDK_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "sdk_server.py"

provider = TracerProvider(resource=Resource.create({"service.name": "upstream"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
sys.argv = [str(SDK_SERVER), *sys.argv[1:]]
runpy.run_path(str(SDK_SERVER), run_name="__main__")
