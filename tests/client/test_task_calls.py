"""A ``tools/call`` sent as an upstream task (``Session.request(as_task=True)``), in both
eras, against tests/fixtures/upstream_task_server.py (our own stdio fixture: no Python SDK
release here serves tasks in both eras; see its docstring).

Every frame mcpx sent is validated: against 2025-11-25 (legacy), against 2026-07-28 and,
for the extension's ``tasks/*`` requests, against the ext-tasks schema (modern).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx import wire
from mcpx.client import QuestionOrigin, Session, UpstreamError
from support.schemas import FrameLog, errors
from support.upstream import Recorder, connected, stdio_server
from support.waiting import await_until

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_task_server.py"
EXT_REQUESTS = {
    "tasks/get": "GetTaskRequest",
    "tasks/update": "UpdateTaskRequest",
    "tasks/cancel": "CancelTaskRequest",
}


class Answering:
    """A host that answers the fixture's elicitation with pick=blue."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any], QuestionOrigin]] = []

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {"elicitation": {"form": {}}}

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        self.asked.append((method, params, asked))
        if method == "ping":
            return {}
        return {"action": "accept", "content": {"pick": "blue"}}


def _received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


class Upstream:
    def __init__(self, tmp_path: Path, era: str, *flags: str) -> None:
        self.log = tmp_path / f"{era}.jsonl"
        argv = [sys.executable, str(FIXTURE), str(self.log), *flags]
        if era == "modern":
            argv.append("--modern")
        self.server = stdio_server(f"tasks-{era}", argv)
        self.era = era
        self.recorder = Recorder()
        self.frames = FrameLog()

    def check_frames(self, sent_frames: FrameLog) -> None:
        """Into ``sent_frames`` (checked at the test's end), but the extension's methods,
        which the 2026-07-28 schema does not define: those against ext-tasks here."""
        for s in self.frames.frames:
            method = s.frame.get("method")
            if self.era == "modern" and method in EXT_REQUESTS:
                found = errors(s.frame, "ext-tasks", EXT_REQUESTS[method], strict=False)
                assert not found, f"{method} invalid for the extension: {found}"
                continue
            sent_frames.sent(s.frame, s.rev, sender=s.sender, answering=s.answering)

    def sent_methods(self) -> list[str]:
        return [f["method"] for f in _received(self.log) if "method" in f]


async def _slow(session: Session, **args: Any) -> dict[str, Any]:
    return await session.call_tool("slow", args, as_task=True, timeout=30)


ERAS = ["legacy", "modern"]


# C-TASK-2 C-TASK-4 C-TASK-5 C-TASKX-1 C-TASKX-2: a required tool goes as a task (core
# tasks with a ttl, or the extension declared on the request) and gives its result.
@pytest.mark.obligation("C-TASK-2", "C-TASK-4", "C-TASK-5", "C-TASKX-1", "C-TASKX-2")
@pytest.mark.parametrize("era", ERAS)
async def test_a_required_tool_runs_as_a_task(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, era)
    async with connected(up.server, up.recorder, up.frames) as session:
        started = time.monotonic()
        result = await _slow(session, ms=200)
        elapsed = time.monotonic() - started
        assert _text(result) == "done -"
        assert "_meta" not in result or "io.modelcontextprotocol/related-task" not in (
            result.get("_meta") or {}
        )
    up.check_frames(sent_frames)
    received = _received(up.log)
    call = next(f for f in received if f.get("method") == "tools/call")
    if era == "legacy":
        assert call["params"]["task"]["ttl"] >= 30_000
        # The status notification woke the poll: the interval (5 s) was not waited out.
        assert elapsed < 3, elapsed
        assert "tasks/result" in up.sent_methods()
        notified = [m for m, _ in up.recorder.notifications]
        assert "notifications/tasks/status" not in notified  # used, not passed on
    else:
        caps = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert "io.modelcontextprotocol/tasks" in caps["extensions"]
        assert "task" not in call["params"]
        assert "tasks/get" in up.sent_methods()


@pytest.mark.parametrize("era", ERAS)
async def test_a_failed_task_raises_the_upstreams_error(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, era)
    async with connected(up.server, up.recorder, up.frames) as session:
        with pytest.raises(wire.McpError) as caught:
            await _slow(session, ms=100, fail=True)
    assert (caught.value.code, caught.value.message) == (-32042, "slow broke")
    assert caught.value.remote
    up.check_frames(sent_frames)


# C-TASKX-12: a cancelled caller cancels the upstream task with tasks/cancel.
@pytest.mark.obligation("C-TASKX-12")
@pytest.mark.parametrize("era", ERAS)
async def test_a_cancelled_call_cancels_the_upstream_task(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, era)
    async with connected(up.server, up.recorder, up.frames) as session:
        with anyio.move_on_after(1):
            await _slow(session, ms=20_000)
        await await_until(lambda: "tasks/cancel" in up.sent_methods(), timeout=10)
    cancel = next(f for f in _received(up.log) if f.get("method") == "tasks/cancel")
    task_id = cancel["params"]["taskId"]
    assert task_id.startswith("task-")
    up.check_frames(sent_frames)


# C-TASK-7 C-TASKX-9 C-TASKX-11: a task asking mid-way is answered through the question
# handler: legacy on the open tasks/result, modern with one tasks/update.
@pytest.mark.obligation("C-TASK-7", "C-TASKX-9", "C-TASKX-11")
@pytest.mark.parametrize("era", ERAS)
async def test_a_task_asking_midway_is_answered(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, era)
    host = Answering()
    async with connected(up.server, up.recorder, up.frames, handler=host) as session:
        result = await _slow(session, ms=400, ask=True)
    assert _text(result) == "done blue"
    assert [m for m, _, _ in host.asked if m != "ping"] == ["elicitation/create"]
    if era == "modern":
        assert up.sent_methods().count("tasks/update") == 1
    up.check_frames(sent_frames)


# C-TASK-3: an upstream that declares no task support is never sent a task; the call
# fails naming the tool and the server.
@pytest.mark.obligation("C-TASK-3")
@pytest.mark.parametrize("era", ERAS)
async def test_no_task_support_fails_clearly(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, era, "--no-tasks")
    async with connected(up.server, up.recorder, up.frames) as session:
        with pytest.raises(UpstreamError, match=r"tasks-\w+'s tool 'slow' must run as a task"):
            await _slow(session, ms=100)
    assert "tools/call" not in up.sent_methods()
    up.check_frames(sent_frames)


# C-TASKX-1 C-TASKX-2: a 2026-07-28 tool says it needs the extension with -32021
# (its Tool has no execution); the call is sent again as a task.
@pytest.mark.obligation("C-TASKX-1", "C-TASKX-2")
async def test_a_modern_32021_for_the_extension_becomes_a_task(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    up = Upstream(tmp_path, "modern")
    async with connected(up.server, up.recorder, up.frames) as session:
        result = await session.call_tool("slow", {"ms": 100}, timeout=30)
    assert _text(result) == "done -"
    calls = [f for f in _received(up.log) if f.get("method") == "tools/call"]
    declared = [
        "extensions" in f["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        for f in calls
    ]
    assert declared == [False, True]
    up.check_frames(sent_frames)
