"""The daemon's metrics in Prometheus' text format, for ``GET /metrics``.

Its own registry (never prometheus_client's global one, which carries the process's
own metrics and would be shared by every daemon in a test process). Two histograms in
the MCP conventions, observed once per request and once per upstream call, one of
host sessions' durations, and the daemon's own state read when scraped (``_State``):
instances per server and state, starts and crashes, questions open, tasks by status,
events dropped. Label names are the conventions'
attribute names with ``.`` as ``_``; an attribute that does not apply is ``""``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from mcpx.events import EventBus
    from mcpx.pool import Instance, Pool
    from mcpx.questions import Broker
    from mcpx.tasks import Tasks

__all__ = ["BUCKETS", "PromMetrics"]

# The conventions' ExplicitBucketBoundaries for both operation durations (seconds).
BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

_SERVER_ATTRS: Final = (
    "mcp.method.name",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.operation.name",
    "error.type",
    "rpc.response.status_code",
    "mcp.protocol.version",
    "network.transport",
)
_CLIENT_ATTRS: Final = (*_SERVER_ATTRS, "server.address", "server.port")
_SESSION_ATTRS: Final = ("error.type", "mcp.protocol.version", "network.transport")


def _label(attr: str) -> str:
    return attr.replace(".", "_")


def _values(attrs: Mapping[str, Any], names: tuple[str, ...], error: str | None) -> list[str]:
    return [(error or "") if n == "error.type" else str(attrs.get(n, "")) for n in names]


class PromMetrics:
    """The histograms and gauges ``/metrics`` shows, in a registry of their own."""

    def __init__(
        self,
        pool: Pool,
        broker: Broker | None,
        tasks: Callable[[], Tasks | None],
        events: EventBus | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._server = Histogram(
            "mcp_server_operation_duration_seconds",
            "MCP request duration as observed on the receiver (mcpx serving a host).",
            [_label(a) for a in _SERVER_ATTRS],
            registry=self.registry,
            buckets=BUCKETS,
        )
        self._client = Histogram(
            "mcp_client_operation_duration_seconds",
            "MCP request duration as observed on the sender (mcpx calling an upstream).",
            ["mcpx_server", *(_label(a) for a in _CLIENT_ATTRS)],
            registry=self.registry,
            buckets=BUCKETS,
        )
        self._sessions = Histogram(
            "mcp_server_session_duration_seconds",
            "The duration of host sessions (legacy /mcp sessions, stdio hosts), when ended.",
            [_label(a) for a in _SESSION_ATTRS],
            registry=self.registry,
            buckets=BUCKETS,
        )
        # Each label set's child, found by a dict lookup on the call's path (labels()
        # takes a lock and converts every value each time): the two histograms' keys
        # differ in length, so one map holds both.
        self._children: dict[tuple[str, ...], Histogram] = {}
        self.state = _State(pool, broker, tasks, events)
        self.registry.register(self.state)

    def served(self, attrs: Mapping[str, Any], error: tuple[str, Any] | None, took: float) -> None:
        err = error[0] if error is not None else None
        key = tuple(_values(attrs, _SERVER_ATTRS, err))
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._server.labels(*key)
        child.observe(took)

    def called(
        self, server: str, attrs: Mapping[str, Any], error: tuple[str, Any] | None, took: float
    ) -> None:
        err = error[0] if error is not None else None
        key = (server, *_values(attrs, _CLIENT_ATTRS, err))
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._client.labels(*key)
        child.observe(took)

    def session_ended(self, attrs: Mapping[str, Any], took: float) -> None:
        self._sessions.labels(*_values(attrs, _SESSION_ATTRS, None)).observe(took)

    def text(self) -> bytes:
        """Everything, in the text exposition format (read on the event loop: the
        question and task stores are not to be touched from another thread)."""
        return generate_latest(self.registry)

    def snapshot(self) -> dict[str, Any]:
        """The pool's state as plain numbers, for OpenTelemetry's observable gauges."""
        return self.state.pool_numbers()

    def store_numbers(self) -> dict[str, Any]:
        """Questions open and tasks per status (on the event loop: ``_State``)."""
        return self.state.store_numbers()


class _State(Collector):
    """The daemon's state, read when scraped. Starts and crashes are counted from the
    pool's lifecycle record as it grows (it is bounded: what it dropped was counted)."""

    def __init__(
        self,
        pool: Pool,
        broker: Broker | None,
        tasks: Callable[[], Tasks | None],
        events: EventBus | None,
    ) -> None:
        self._events = events
        self._pool = pool
        self._broker = broker
        self._tasks = tasks
        self._seen: object = None  # the newest lifecycle entry counted
        self._counts: Counter[tuple[str, str]] = Counter()

    def pool_numbers(self) -> dict[str, Any]:
        names: list[str] = []
        every: list[Instance] = []
        for _ in range(3):  # read from an exporter's thread: retry a dict resized under it
            try:
                names, every = list(self._pool.servers), list(self._pool.instances())
                break
            except RuntimeError:
                continue
        calls: Counter[str] = Counter({name: 0 for name in names})
        instances = Counter((i.server.name, i.state) for i in every)
        for i in every:
            calls[i.server.name] += i.in_flight
        fresh = []
        for entry in reversed(tuple(self._pool.lifecycle)):
            if entry is self._seen:
                break
            fresh.append(entry)
        if fresh:
            self._seen = fresh[0]
            self._counts.update((server, kind) for _, server, kind in fresh)
        return {
            "instances": dict(instances),
            "calls_in_flight": dict(calls),
            "lifecycle": dict(self._counts),
            "events_dropped": self._events.dropped if self._events is not None else 0,
        }

    def collect(self) -> Iterator[Metric]:
        numbers = self.pool_numbers()
        instances = GaugeMetricFamily(
            "mcpx_instances",
            "Upstream instances, per server and state.",
            labels=["mcpx_server", "state"],
        )
        for (server, state), n in sorted(numbers["instances"].items()):
            instances.add_metric([server, state], n)
        yield instances
        # Counted where the calls are (an instance's calls in flight, from when a call
        # is handed over or sent ahead), not per call on the call's path.
        in_flight = GaugeMetricFamily(
            "mcpx_calls_in_flight",
            "Upstream calls running now (handed to an instance), per server.",
            labels=["mcpx_server"],
        )
        for server, n in sorted(numbers["calls_in_flight"].items()):
            in_flight.add_metric([server], n)
        yield in_flight
        for kind, help_text in (
            ("start", "Upstream instances started."),
            ("crash", "Upstream instances that failed or broke."),
        ):
            family = CounterMetricFamily(
                f"mcpx_instance_{kind}s", help_text, labels=["mcpx_server"]
            )
            for (server, k), n in sorted(numbers["lifecycle"].items()):
                if k == kind:
                    family.add_metric([server], n)
            yield family
        yield CounterMetricFamily(
            "mcpx_events_dropped",
            "Events a slow subscriber of the event stream missed (its buffer was full).",
            value=numbers["events_dropped"],
        )
        stores = self.store_numbers()
        if stores["questions_open"] is not None:
            yield GaugeMetricFamily(
                "mcpx_questions_open",
                "Upstream questions waiting for an answer.",
                value=stores["questions_open"],
            )
        if stores["tasks"] is not None:
            tasks = GaugeMetricFamily("mcpx_tasks", "Tasks kept, per status.", labels=["status"])
            for status, n in sorted(stores["tasks"].items()):
                tasks.add_metric([status], n)
            yield tasks

    def store_numbers(self) -> dict[str, Any]:
        """Questions open and tasks per status; None for a store the daemon lacks. On
        the event loop only: the stores are not to be touched from another thread."""
        kept = self._tasks()
        return {
            "questions_open": len(self._broker.pending()) if self._broker is not None else None,
            "tasks": dict(Counter(t.status for t in kept.list())) if kept is not None else None,
        }
