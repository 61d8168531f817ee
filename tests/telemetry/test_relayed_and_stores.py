"""A /v1 call answered as an ndjson relay has the SERVER span a plain JSON answer has
(one code path: ``run_served``); questions open and tasks per status are exported over
OTLP as gauges, as ``/metrics`` shows them (issue 24). Against the real receiver
(conftest), the mcpx demo server (``slow`` relays progress and a log line) and the
official SDK's fixture server (1.23.3: ``ask`` elicits one string ``answer``).
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.waiting import wait_until
from telemetry.otlp_receiver import CLIENT_KIND, SERVER_KIND, STATUS_ERROR, Receiver

NDJSON = "application/x-ndjson"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        mp.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: awaited by condition below
        mp.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
        mp.delenv("OTEL_SERVICE_NAME", raising=False)
        servers = {
            "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
            "sdk": sdk_entry("1.23.3"),
        }
        with running_daemon(tmp_path_factory.mktemp("relayed"), servers) as d:
            yield d


def _parent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def _mcpx_spans(receiver: Receiver, trace_id: str, *kinds: int) -> dict[int, dict[str, Any]]:
    """mcpx's spans of one trace by kind, once each of ``kinds`` came."""

    def got() -> dict[int, dict[str, Any]] | None:
        spans = [s for s in receiver.span_list() if s["trace"] == trace_id]
        found = {s["kind"]: s for s in spans if s["service"] == "mcpx"}
        return found if all(k in found for k in kinds) else None

    return wait_until(got, timeout=60, message=f"the spans of trace {trace_id}")


def _slow_call(daemon: Daemon, accept: str) -> tuple[str, str, str]:
    """``demo``'s ``slow`` through /v1/call; (trace id, host span, content type)."""
    trace_id, host_span, traceparent = _parent()
    body = {"server": "demo", "tool": "slow", "arguments": {"seconds": 0.1, "steps": 2}}
    with daemon.http() as v1:
        r = v1.post("/v1/call", json=body, headers={"Accept": accept, "traceparent": traceparent})
    assert r.status_code == 200, r.text
    if r.headers["content-type"] == NDJSON:
        lines = [json.loads(line) for line in r.text.splitlines() if line]
        assert [n["notification"]["method"] for n in lines[:-1]]  # relayed before the body
        assert lines[-1]["content"][0]["text"].startswith("slept")
    return trace_id, host_span, r.headers["content-type"]


def test_a_relayed_call_has_the_server_span_of_a_plain_one(
    daemon: Daemon, receiver: Receiver
) -> None:
    relayed_trace, relayed_host, kind = _slow_call(daemon, f"application/json, {NDJSON}")
    assert kind == NDJSON  # progress came first: the answer really was a relay
    plain_trace, plain_host, kind = _slow_call(daemon, "application/json")
    assert kind == "application/json"
    relayed = _mcpx_spans(receiver, relayed_trace, SERVER_KIND, CLIENT_KIND)
    plain = _mcpx_spans(receiver, plain_trace, SERVER_KIND, CLIENT_KIND)
    for spans, host in ((relayed, relayed_host), (plain, plain_host)):
        assert spans[SERVER_KIND]["parent"] == host
        assert spans[CLIENT_KIND]["parent"] == spans[SERVER_KIND]["id"]
        assert spans[SERVER_KIND]["name"] == "tools/call slow"
    assert relayed[SERVER_KIND]["attrs"] == plain[SERVER_KIND]["attrs"]
    assert relayed[SERVER_KIND]["attrs"]["network.transport"] == "unix"
    assert "error.type" not in relayed[SERVER_KIND]["attrs"]


def test_a_relayed_failure_is_error_type(daemon: Daemon, receiver: Receiver) -> None:
    trace_id, host_span, traceparent = _parent()
    body = {"server": "demo", "tool": "no-such-tool", "arguments": {}}
    with daemon.http() as v1:
        r = v1.post("/v1/call", json=body, headers={"Accept": NDJSON, "traceparent": traceparent})
    assert r.status_code >= 400
    server = _mcpx_spans(receiver, trace_id, SERVER_KIND)[SERVER_KIND]
    assert server["parent"] == host_span
    assert server["attrs"]["error.type"] == r.json()["error"]["code"]
    assert server["status"] == STATUS_ERROR


def _latest(receiver: Receiver, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    """The newest export of ``name``: its value per attribute set."""
    return {
        tuple(sorted(point["attrs"].items())): point["value"]
        for point in receiver.newest_numbers(name)
    }


def _scraped(daemon: Daemon) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    stores = ("mcpx_questions_open", "mcpx_tasks")
    return {key: value for key, value in daemon.metrics().items() if key[0] in stores}


def _exported(receiver: Receiver, questions: int, tasks: dict[str, int]) -> Callable[[], bool]:
    def now() -> bool:
        open_ = _latest(receiver, "mcpx.questions.open")
        kept = _latest(receiver, "mcpx.tasks")
        statuses = {dict(k)["mcpx.task.status"]: v for k, v in kept.items()}
        return open_.get(()) == questions and statuses == tasks

    return now


def test_questions_open_and_tasks_are_exported_as_gauges(
    daemon: Daemon, receiver: Receiver
) -> None:
    body = {"server": "sdk", "tool": "ask", "arguments": {"question": "ship it?"}}
    with daemon.http() as v1:
        parked = v1.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})
    assert parked.status_code == 202, parked.text
    [question] = parked.json()["questions"]
    task = parked.json()["task"]
    wait_until(_exported(receiver, 1, {task["status"]: 1}), timeout=60, message="gauges")
    assert (receiver.number_points("mcpx.questions.open")[-1]["unit"]) == "{question}"
    # /metrics says the same (it is read on the event loop as the sample is).
    assert _scraped(daemon) == {
        ("mcpx_questions_open", ()): 1.0,
        ("mcpx_tasks", (("status", task["status"]),)): 1.0,
    }

    with daemon.http() as v1:
        path = f"/v1/questions/{question['id']}/answer"
        assert v1.post(path, json={"content": {"answer": "yes"}}).status_code == 200
        done = v1.get(f"/v1/tasks/{task['id']}/result")
        assert done.status_code == 200, done.text
    wait_until(_exported(receiver, 0, {"completed": 1}), timeout=60, message="gauges after")
    assert _scraped(daemon) == {
        ("mcpx_questions_open", ()): 0.0,
        ("mcpx_tasks", (("status", "completed"),)): 1.0,
    }
