"""``mcp.server.session.duration`` for host sessions (a legacy ``/mcp`` session, a stdio
host), recorded when each ends, and ``mcpx_events_dropped_total``: the events the bus
could not give a subscriber whose buffer was full (issue 24)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from mcpx.events import EventBus
from mcpx.ops import PromMetrics
from mcpx.pool import Pool
from support.daemon import Daemon, bad_entry, legacy_session, running_daemon
from support.waiting import wait_until

DURATION = "mcp_server_session_duration_seconds"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"):
            mp.delenv(name, raising=False)  # the Prometheus side alone
        servers = {"up": bad_entry("legacy")}
        with running_daemon(tmp_path_factory.mktemp("sessions"), servers) as d:
            yield d


def _samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _value(samples: list[Sample], name: str, **labels: str) -> float | None:
    found = [s.value for s in samples if s.name == name and labels.items() <= s.labels.items()]
    assert len(found) <= 1, found
    return found[0] if found else None


def _scrape(daemon: Daemon) -> list[Sample]:
    with daemon.http() as v1:
        answer = v1.get("/metrics")
    assert answer.status_code == 200
    return _samples(answer.text)


def test_legacy_session_duration_when_it_ends(daemon: Daemon) -> None:
    labels = {"network_transport": "tcp", "mcp_protocol_version": "2025-11-25"}
    first = _scrape(daemon)
    count = _value(first, f"{DURATION}_count", **labels) or 0
    total = _value(first, f"{DURATION}_sum", **labels) or 0
    began = time.monotonic()
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {})
        # Still open: nothing recorded for it yet.
        assert (_value(_scrape(daemon), f"{DURATION}_count", **labels) or 0) == count
        assert mcp.delete("/mcp", headers=headers).status_code in (200, 204)
    lasted = time.monotonic() - began
    samples = _scrape(daemon)
    assert _value(samples, f"{DURATION}_count", **labels) == count + 1
    took = (_value(samples, f"{DURATION}_sum", **labels) or 0) - total
    assert 0 < took <= lasted
    assert _value(samples, f"{DURATION}_bucket", le="300.0", **labels) == count + 1


def test_stdio_host_duration_when_it_leaves(daemon: Daemon) -> None:
    labels = {"network_transport": "pipe", "mcp_protocol_version": "2025-06-18"}
    before = _value(_scrape(daemon), f"{DURATION}_count", **labels) or 0
    init: dict[str, Any] = {"protocolVersion": "2025-06-18", "capabilities": {}}
    init["clientInfo"] = {"name": "stdio-host", "version": "1"}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    served = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=daemon.home,
        env=daemon.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert any(json.loads(x).get("id") == 2 for x in served.stdout.splitlines() if x.strip())

    def counted() -> float | None:
        n = _value(_scrape(daemon), f"{DURATION}_count", **labels)
        return n if n == before + 1 else None

    wait_until(counted, timeout=30, message="the stdio host's session duration")


class _NoPool:
    """What PromMetrics reads of a pool, empty: this test is about the event bus."""

    def __init__(self) -> None:
        self.lifecycle: deque[tuple[float, str, str]] = deque()
        self.servers: dict[str, Any] = {}

    def instances(self) -> list[Any]:
        return []


def test_events_dropped_counts_what_a_full_buffer_missed() -> None:
    bus = EventBus(history=16, buffer=2)
    slow, quick = bus.subscribe(), bus.subscribe()
    for n in range(5):
        bus.publish("test", {"n": n})
        quick.receive_nowait()  # this one keeps up: it misses nothing
    # The slow one took 2 and missed 3: one gap stands for them.
    assert slow.missed == 3 and quick.missed == 0
    assert bus.dropped == 3
    got = [slow.receive_nowait() for _ in range(3)]
    assert [e.kind for e in got] == ["test", "test", "gap"]
    metrics = PromMetrics(cast(Pool, _NoPool()), None, lambda: None, bus)
    samples = _samples(metrics.text().decode())
    assert _value(samples, "mcpx_events_dropped_total") == 3
    for _ in range(3):  # slow has room for two again: the third is missed
        bus.publish("test")
        quick.receive_nowait()
    assert _value(_samples(metrics.text().decode()), "mcpx_events_dropped_total") == 4


def test_events_dropped_on_a_daemons_metrics(daemon: Daemon) -> None:
    # The daemon's own bus is counted (nothing here subscribes slowly: zero, but there).
    assert _value(_scrape(daemon), "mcpx_events_dropped_total") is not None
