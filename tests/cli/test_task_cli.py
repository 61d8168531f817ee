"""``mcpx task list | cancel | result`` on the one task store (issue 21, "One task store").

A real daemon, the real CLI as subprocesses. The demo's ``slow`` tool runs as a task (a
``/v1/call`` with ``Mcpx-Questions: return``, as ``mcpx call`` sends it) for minutes: it
is listed while it runs, cancelled by ``mcpx task cancel``, and ``mcpx task result`` then
ends with the cancellation; each status change is a ``task.status`` event on
``/v1/events``; after ``mcpx restart`` the finished tasks are still listed and their
outcomes collectable.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
WAIT = 60.0  # seconds a process gets to do what is expected of it (a loaded box)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(tmp_path, {"demo": DEMO}) as d:
        yield d


def _listed(daemon: Daemon, *args: str) -> list[dict[str, Any]]:
    shown = daemon.cli("task", "list", "--json", *args)
    assert shown.returncode == 0, shown.stderr
    tasks: list[dict[str, Any]] = json.loads(shown.stdout)["tasks"]
    return tasks


def _status_events(daemon: Daemon, task_id: str, until: str) -> list[str]:
    """The task's ``task.status`` events retained by the daemon, up to ``until``."""
    seen: list[str] = []
    deadline = time.monotonic() + WAIT
    params: dict[str, str | int] = {"kind": "task.status", "since": 0}
    with daemon.http() as api, api.stream("GET", "/v1/events", params=params) as r:
        assert r.status_code == 200
        for line in r.iter_lines():  # keep-alive comments bound each wait
            assert time.monotonic() < deadline, f"no {until!r} event in time: {seen}"
            if not line.startswith("data:"):
                continue
            event = json.loads(line.removeprefix("data:"))
            assert event["kind"] == "task.status" and "result" not in event["data"], event
            if event["data"]["id"] == task_id:
                seen.append(event["data"]["status"])
                if event["data"]["status"] == until:
                    return seen
    raise AssertionError(f"the event stream ended: {seen}")


def test_a_task_is_listed_cancelled_and_its_result_is_the_cancellation(daemon: Daemon) -> None:
    replies: list[httpx.Response] = []

    def slow_call() -> None:
        body = {"server": "demo", "tool": "slow", "arguments": {"seconds": 300}}
        with daemon.http() as api:
            replies.append(api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"}))

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    [running] = wait_until(
        lambda: [t for t in _listed(daemon) if t["what"] == "tools/call slow"],
        timeout=WAIT,
        message="the slow call listed as a task",
    )
    assert running["status"] == "working" and running["server"] == "demo"
    assert "result" not in running and "error" not in running
    task = running["id"]
    table = daemon.cli("task", "list")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "SERVER", "WHAT", "AGE", "MESSAGE"]
    assert any(row.split()[:5] == [task, "working", "demo", "tools/call", "slow"] for row in rows)

    cancelled = daemon.cli("task", "cancel", task)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"task {task}: cancelled"
    # The caller waiting on it is answered at once, with the call's end.
    caller.join(WAIT)
    assert not caller.is_alive() and replies[0].status_code >= 400, replies
    # Again: nothing to cancel, no error, the task as it was.
    again = daemon.cli("task", "cancel", task)
    assert again.returncode == 0 and again.stdout.strip() == f"task {task}: cancelled"
    assert [t["id"] for t in _listed(daemon, "--status", "cancelled")] == [task]
    assert task not in [t["id"] for t in _listed(daemon, "--status", "working")]

    result = daemon.cli("task", "result", task)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert f"mcpx: task {task} was cancelled" in result.stderr, result.stderr
    shown = json.loads(daemon.cli("task", "show", task).stdout)
    assert shown["status"] == "cancelled" and shown["error"]["code"] == -32800, shown
    assert _status_events(daemon, task, "cancelled") == ["cancelled"]


def test_an_unknown_task_is_not_found_to_cancel(daemon: Daemon) -> None:
    unknown = daemon.cli("task", "cancel", "0" * 16)
    assert unknown.returncode == 4 and "no task" in unknown.stderr, unknown.stderr
    with daemon.http() as api:
        r = api.post(f"/v1/tasks/{'0' * 16}/cancel")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_task", r.text


def test_finished_tasks_are_listed_and_collected_after_mcpx_restart(daemon: Daemon) -> None:
    try:
        echoed = daemon.cli("call", "demo", "echo", "text=kept across")
        assert echoed.returncode == 0, echoed.stderr
        [done] = [t for t in _listed(daemon) if t["what"] == "tools/call echo"]
        assert done["status"] == "completed"
        restarted = daemon.cli("restart")
        assert restarted.returncode == 0, restarted.stderr
        after = _listed(daemon)
        assert [t["id"] for t in after] == [done["id"]]
        assert after[0]["status"] == "completed"
        collected = daemon.cli("task", "result", done["id"])
        assert collected.returncode == 0, collected.stderr
        assert collected.stdout.strip() == "kept across"
    finally:
        assert daemon.cli("stop").returncode == 0
