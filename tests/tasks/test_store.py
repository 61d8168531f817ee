"""The one task store, in-process (issue 21, "One task store"): owners see their own
tasks only, lists are newest first, cancel ends a task once, a task is forgotten at its
TTL, every task is on disk (an older mcpx's ``tasks.db`` opens), and each change is told
to watchers and as ``task.*`` events without the result."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.events import EventBus
from mcpx.tasks import ANY, CANCELLED, Task, TaskRecords, Tasks
from mcpx.wire import McpError

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
Run = Callable[[Task], Awaitable[JSON]]


def _held(gate: anyio.Event, result: JSON | None = None) -> Run:
    async def run(task: Task) -> JSON:
        await gate.wait()
        return result or {"content": [{"type": "text", "text": "done"}]}

    return run


async def _ended(*tasks: Task) -> None:
    with anyio.fail_after(5):
        for task in tasks:
            while not task.done:
                await task.changed(0.1)


async def test_a_task_is_seen_by_its_owner_only_and_an_unowned_one_by_its_id() -> None:
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600)
        mine = tasks.start("s", "mine", _held(gate), owner="http:a")
        theirs = tasks.start("s", "theirs", _held(gate), owner="stdio:b")
        nobody = tasks.start("s", "nobody's", _held(gate))
        # Another owner's task is unknown to me: the same None as an id never issued.
        assert tasks.get(mine.id, "http:a") is mine
        assert tasks.get(theirs.id, "http:a") is None
        assert tasks.get(mine.id, None) is None
        assert tasks.get("0" * 16, "http:a") is None
        # An unowned task: whoever holds its id reads it, nobody lists it but the operator.
        assert tasks.get(nobody.id, "http:a") is nobody and tasks.get(nobody.id, None) is nobody
        assert tasks.list("http:a") == [mine]
        assert tasks.list("stdio:b") == [theirs]
        assert tasks.list(None) == []
        every = {mine.id, theirs.id, nobody.id}
        assert {t.id for t in tasks.list()} == {t.id for t in tasks.list(ANY)} == every
        assert tasks.get(theirs.id) is theirs  # the operator's
        gate.set()
    assert tasks.list("http:a") == [mine] and mine.status == "completed"


async def test_list_is_newest_first_over_memory_and_disk(tmp_path: Path) -> None:
    gate = anyio.Event()
    records = TaskRecords(tmp_path / "tasks.db", keep=3600)
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600, records=records, limit=1)
        first = tasks.start("s", "first", _held(gate))
        first.created -= 20  # distinct creation times: the order is the test's, not a tie's
        gate.set()
        await _ended(first)
        second = tasks.start("s", "second", _held(gate))
        second.created -= 10
        await _ended(second)
        third = tasks.start("s", "third", _held(anyio.Event()))
        # Finished beyond ``limit``, ``first`` left memory: it is listed from its row.
        assert [t.what for t in tasks.list()] == ["third", "second", "first"]
        assert [t.status for t in tasks.list()] == ["working", "completed", "completed"]
        assert tasks.list()[:2] == [third, second]
        from_disk = tasks.get(first.id)
        assert from_disk is not first and from_disk is not None
        assert from_disk.as_json() == first.as_json()
        tg.cancel_scope.cancel()


async def test_cancel_ends_a_running_task_once_with_the_cancellation() -> None:
    gate, stopped = anyio.Event(), anyio.Event()

    async def run(task: Task) -> JSON:
        try:
            await gate.wait()
        finally:
            stopped.set()
        return {"content": []}

    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600)
        task = tasks.start("s", "slow", run)
        await anyio.wait_all_tasks_blocked()
        assert task.cancel() is True
        # At once, not when the call notices: nobody sees a cancelled task still working.
        assert task.status == "cancelled" and task.done
        assert task.error is not None and task.error["code"] == CANCELLED
        with pytest.raises(McpError) as raised:
            task.outcome()
        assert raised.value.code == CANCELLED and "cancelled" in raised.value.message
        assert task.cancel() is False  # again: no error, nothing changes
        with anyio.fail_after(5):
            await stopped.wait()  # and the call itself was stopped
        done = tasks.start("s", "quick", _held(gate))
        gate.set()
        await _ended(done)
        assert done.cancel() is False and done.status == "completed"
    assert task.status == "cancelled" and task.as_json()["error"]["code"] == CANCELLED


async def test_a_finished_task_is_forgotten_at_created_plus_ttl(tmp_path: Path) -> None:
    records = TaskRecords(tmp_path / "tasks.db", keep=3600)
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600, records=records)
        short = tasks.start("s", "short", _held(gate), ttl=60)
        kept = tasks.start("s", "kept", _held(gate))
        running = tasks.start("s", "running", _held(anyio.Event()), ttl=60)
        # Made long ago (no sleeping): past its TTL once it finishes, not before.
        short.created = running.created = time.time() - 120
        assert tasks.get(running.id) is running  # a running task is never forgotten
        gate.set()
        await _ended(short, kept)
        assert tasks.get(short.id) is None and records.load(short.id) is None
        assert tasks.get(kept.id) is kept  # no ttl: kept ``keep`` after it finished
        assert tasks.get(running.id) is running
        assert [t.id for t in tasks.list()] == [kept.id, running.id]
        tg.cancel_scope.cancel()


async def test_every_task_is_on_disk_and_a_restart_lists_it_and_keeps_its_outcome(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600, records=TaskRecords(path, keep=3600))
        # Not asked to be durable: kept all the same.
        done = tasks.start("s", "done", _held(gate, {"content": [{"type": "text", "text": "r"}]}))
        asked = tasks.start("s", "asked", _held(anyio.Event()), owner="http:x", ttl=600)
        gate.set()
        await _ended(done)
        tg.start_soon(asked.ask, "elicitation/create", {"message": "?"}, 60.0)
        await anyio.wait_all_tasks_blocked()
        # The status change is written as it happens, not only at the end.
        with sqlite3.connect(path) as db:
            row = db.execute("SELECT status FROM tasks WHERE id = ?", (asked.id,)).fetchone()
        db.close()
        assert row == ("input_required",)
        tg.cancel_scope.cancel()
    # The next daemon: the running one failed (its process is gone), the done one collectable.
    async with anyio.create_task_group() as tg:
        again = Tasks(tg, keep=3600, records=TaskRecords(path, keep=3600))
        assert {t.id for t in again.list()} == {done.id, asked.id}
        found = again.get(done.id)
        assert found is not None and found.outcome() == {"content": [{"type": "text", "text": "r"}]}
        lost = again.get(asked.id)
        assert lost is not None and lost.status == "failed" and lost.owner == "http:x"
        assert lost.ttl == 600 and "mcpx stopped before the call finished" in str(lost.error)
        assert again.get(asked.id, "http:y") is None
        assert [t.id for t in again.list("http:x")] == [asked.id]


async def test_a_tasks_db_from_an_older_mcpx_opens(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with sqlite3.connect(path) as db:  # the schema before issue 21
        db.execute(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, server TEXT NOT NULL, what TEXT NOT NULL, "
            "created REAL NOT NULL, status TEXT NOT NULL, finished REAL, result TEXT, "
            "error TEXT, questions TEXT NOT NULL DEFAULT '[]')"
        )
        now = time.time()
        db.execute(
            "INSERT INTO tasks VALUES ('old1', 's', 'tools/call x', ?, 'completed', ?, ?, "
            "NULL, '[]')",
            (now - 10, now - 5, json.dumps({"content": []})),
        )
    db.close()
    records = TaskRecords(path, keep=3600)
    row = records.load("old1")
    assert row is not None and row["result"] == {"content": []} and row["owner"] is None
    assert row["updated"] == row["finished"]
    task = Task.recorded(row)
    assert task.as_json()["status"] == "completed" and task.ttl is None
    task.owner, task.ttl = "http:a", 60.0
    records.changed(task.row())  # the new columns are written too
    assert [r["owner"] for r in records.rows()] == ["http:a"]


async def test_watchers_hear_each_creation_status_change_and_end() -> None:
    heard: list[tuple[str, str]] = []
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600)
        stop = tasks.watch(lambda t: heard.append((t.what, t.status)))
        task = tasks.start("s", "a", _held(gate))
        assert heard == [("a", "working")]  # synchronously, within start
        tg.start_soon(task.ask, "elicitation/create", {"message": "?"}, 60.0)
        await anyio.wait_all_tasks_blocked()
        task.give({"elicitation-1": {"action": "accept", "content": {}}}, hold=False)
        await anyio.wait_all_tasks_blocked()
        gate.set()
        await _ended(task)
        assert heard == [
            ("a", "working"),
            ("a", "input_required"),
            ("a", "working"),
            ("a", "completed"),
        ]
        stop()
        tasks.start("s", "b", _held(gate))
        await anyio.wait_all_tasks_blocked()
    assert len(heard) == 4  # unsubscribed: b was not heard


async def test_task_events_carry_each_change_but_never_the_result() -> None:
    bus = EventBus(64)
    sub = bus.subscribe()
    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600, events=bus, poll_interval=2.5)
        done = tasks.start("s", "a", _held(gate, {"content": [], "secret": "x"}))
        cancelled = tasks.start("s", "b", _held(anyio.Event()))
        assert cancelled.cancel()
        gate.set()
        await _ended(done)
    seen = []
    while True:
        try:
            seen.append(sub.receive_nowait())
        except anyio.WouldBlock:
            break
    assert [(e.kind, e.data["what"], e.data["status"]) for e in seen] == [
        ("task.created", "a", "working"),
        ("task.created", "b", "working"),
        ("task.status", "b", "cancelled"),
        ("task.finished", "b", "cancelled"),
        ("task.status", "a", "completed"),
        ("task.finished", "a", "completed"),
    ]
    for event in seen:
        assert event.server == "s" and "result" not in event.data and "error" not in event.data
        assert event.data["pollInterval"] == 2.5 and "statusMessage" in event.data
        assert "secret" not in json.dumps(event.to_json())
    assert seen[2].data["statusMessage"] == "the call was cancelled"


async def test_a_failing_watcher_neither_stops_the_task_nor_the_others() -> None:
    heard: list[str] = []

    def broken(task: Task) -> None:
        raise RuntimeError("a watcher's bug")

    gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tasks = Tasks(tg, keep=3600)
        tasks.watch(broken)
        tasks.watch(lambda t: heard.append(t.status))
        task = tasks.start("s", "a", _held(gate))
        gate.set()
        await _ended(task)
    assert task.status == "completed" and heard == ["working", "completed"]
