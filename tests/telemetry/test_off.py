"""Telemetry is off unless configured, and then costs no SDK import (issue 24)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from mcpx.config import resolve
from mcpx.ops._telemetry import configured, network_transport

DEFAULTS = resolve(file=None, env={}, flags={})


@pytest.mark.parametrize(
    ("environ", "flags", "on"),
    [
        ({}, {}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, {}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, {}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, {}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, {}, True),
        ({"OTEL_METRICS_EXPORTER": "otlp"}, {}, True),
        ({}, {"telemetry.enabled": "true"}, True),
    ],
)
def test_configured_only_by_otel_variables_or_the_setting(
    environ: dict[str, str], flags: dict[str, str], on: bool
) -> None:
    settings = resolve(file=None, env={}, flags=flags) if flags else DEFAULTS
    assert configured(settings, environ) is on


def test_network_transport_names() -> None:
    assert network_transport("stdio") == "pipe"
    assert network_transport("http") == "tcp"
    assert network_transport("sse") == "tcp"
    assert network_transport(None) is None


_PROBE = textwrap.dedent(
    """
    import sys
    from mcpx.config import resolve
    from mcpx.daemon._telemetry_wiring import open_telemetry

    class Pool:
        lifecycle = ()
        servers = {}
        def instances(self):
            return []

    settings = resolve(file=None, env={}, flags={})
    environ = {ENVIRON}
    telemetry = open_telemetry(settings, Pool(), None, lambda: None, environ)
    print(telemetry.tracing, any(m.startswith("opentelemetry") for m in sys.modules))
    print(b"mcp_server_operation_duration_seconds" in telemetry.metrics_text())
    """
)


def _probe(environ: dict[str, str]) -> list[str]:
    # A fresh interpreter: what the import of the SDK leaves in sys.modules is its own.
    code = _PROBE.replace("{ENVIRON}", repr(environ))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()


def test_off_imports_no_opentelemetry_and_still_keeps_prometheus_metrics() -> None:
    assert _probe({}) == ["False", "False", "True"]


def test_on_loads_the_sdk() -> None:
    # "none" exporters: the SDK is set up but sends nothing anywhere.
    on = {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"}
    assert _probe(on) == ["True", "True", "True"]
