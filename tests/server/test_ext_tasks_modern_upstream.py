"""The tasks extension over a 2026-07-28 pass-through upstream that asks mid-call.

A host that declared ``io.modelcontextprotocol/tasks`` is answered ``CreateTaskResult``
once its call has run ``protoMessages.taskAfter`` (a 2026-07-28 upstream's tools declare
no ``execution``); the upstream's ``input_required`` that comes after must park the task
until ``tasks/update``, not end it with the upstream's interim answer as its result.
Real daemon; the upstream is the conformance fixture's tasks server (SDK 2.3.0) reached in
2026-07-28; every frame the daemon sent is checked strictly at teardown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_params
from support.peers import FIXTURES, peer_python
from support.waiting import wait_until

ASKABLE = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    fixture = [str(FIXTURES / "conformance_server.py"), "--transport", "stdio", "--tasks"]
    servers = {
        "conformance": {
            "command": str(peer_python("2.3.0")),
            "args": fixture,
            "protocol": "force-discover",
        }
    }
    settings = {"mcp.passthrough": ["conformance"], "protoMessages.taskAfter": "0.3s"}
    with running_daemon(tmp_path_factory.mktemp("ext-modern"), servers, settings) as d:
        yield d


def _result(mcp: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    frame = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": modern_params(params, modern_meta(ASKABLE)),
    }
    headers = modern_headers(method, params, accept="application/json")
    reply = mcp.post("/mcp", json=frame, headers=headers)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert "result" in body, body
    return dict(body["result"])


def _status(mcp: httpx.Client, task_id: str, *wanted: str) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        got = _result(mcp, "tasks/get", {"taskId": task_id})
        return got if got["status"] in wanted else None

    return wait_until(reached, timeout=30, message=f"task {task_id} {wanted}")


@pytest.mark.obligation("S-TASKX-6")
def test_a_modern_upstreams_later_question_parks_the_task(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        params = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
        created = _result(mcp, "tools/call", params)
        assert created["resultType"] == "task", created
        task_id = created["taskId"]
        parked = _status(mcp, task_id, "input_required", "completed", "failed")
        assert parked["status"] == "input_required", parked
        [(key, request)] = parked["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        answer = {"action": "accept", "content": {"confirm": True}}
        update = {"taskId": task_id, "inputResponses": {key: answer}}
        assert _result(mcp, "tasks/update", update)["resultType"] == "complete"
        done = _status(mcp, task_id, "completed", "failed", "cancelled")
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "deleted a.txt"
