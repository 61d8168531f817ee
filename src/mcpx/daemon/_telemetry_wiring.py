"""The daemon's telemetry, made once and ended at its stop (``mcpx.ops.Telemetry``).

Prometheus' side is always made (``GET /metrics``); OpenTelemetry's only when
configured (``OTEL_*`` exporter variables or ``telemetry.enabled``): only then are the
SDK and the OTLP exporter imported, so a daemon without them pays nothing for them, and
the CLI never loads either.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import anyio

from mcpx.config import Settings
from mcpx.events import EventBus
from mcpx.ops import Telemetry, configured
from mcpx.pool import Pool
from mcpx.questions import Broker, QuestionRouter
from mcpx.tasks import Tasks

__all__ = ["open_telemetry", "running_telemetry"]

log = logging.getLogger("mcpx.telemetry")


def open_telemetry(
    settings: Settings,
    pool: Pool,
    broker: Broker | None,
    tasks: Callable[[], Tasks | None],
    environ: Mapping[str, str] | None = None,
    events: EventBus | None = None,
) -> Telemetry:
    """The daemon's telemetry. ``tasks`` returns the daemon's tasks once they are made;
    ``environ`` is where the ``OTEL_*`` variables are read (the process's by default);
    ``events``: the bus whose dropped events are counted."""
    from mcpx.ops import PromMetrics  # prometheus_client: the daemon's alone

    prom = PromMetrics(pool, broker, tasks, events)
    env = os.environ if environ is None else environ
    if not configured(settings, env):
        return Telemetry(prom)
    from mcpx.ops import Otel  # the SDK and the exporter: only when asked for

    return Telemetry(prom, Otel(prom.snapshot, env), bool(settings["telemetry.payloads"]))


@asynccontextmanager
async def running_telemetry(
    settings: Settings,
    pool: Pool,
    broker: Broker | None,
    tasks: Callable[[], Tasks | None],
    *,
    events: EventBus | None = None,
    router: QuestionRouter | None = None,
) -> AsyncIterator[Telemetry]:
    """``open_telemetry`` for the daemon's life; ``router`` tells it of question waits
    (when traced), and the question and task stores are sampled for OpenTelemetry's
    gauges. At its end what is left is exported, in a thread (the exporters block),
    shielded: a stop signal does not lose the last spans."""
    telemetry = open_telemetry(settings, pool, broker, tasks, events=events)
    if router is not None and telemetry.tracing:
        router.on_wait = telemetry.question_waited
    try:
        async with anyio.create_task_group() as tg:
            if telemetry.otel is not None:
                tg.start_soon(_sampling, telemetry, telemetry.otel.sample_every)
            try:
                yield telemetry
            finally:
                tg.cancel_scope.cancel()
    finally:
        if router is not None:
            router.on_wait = None
        otel = telemetry.otel
        if otel is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(otel.shutdown)


async def _sampling(telemetry: Telemetry, every: float) -> None:
    while True:
        await anyio.sleep(every)  # first: the daemon's stores are made after telemetry
        try:
            telemetry.sample_stores()
        except Exception:  # an owned task's boundary: a store that failed once is no stop
            log.warning("telemetry: the question and task stores were not read", exc_info=True)
