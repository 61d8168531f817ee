"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) served to hosts.

Real daemon; its pass-through upstream is the conformance fixture's tasks server
(``conformance_server.py --tasks``, SDK 2.3.0), whose tools declare ``execution.taskSupport``
as the suite's ``tasks-*`` scenarios ask; mcpx reaches it in 2025-11-25 (a 2026-07-28 Tool
has no ``execution``). The hosts speak 2026-07-28 over /mcp with raw requests. Every frame
the daemon sent is checked strictly at teardown (the extension's against its own schema).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_params
from support.peers import ACCEPT_BOTH, FIXTURES, peer_python
from support.waiting import wait_until

EXT = "io.modelcontextprotocol/tasks"
WITH_EXT = {"extensions": {EXT: {}}}
ASKABLE = {"elicitation": {}, "extensions": {EXT: {}}}
SESSION = "dev.mcpx/session"
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "conformance": {
            "command": str(peer_python("2.3.0")),
            "args": [
                str(FIXTURES / "conformance_server.py"),
                "--transport",
                "stdio",
                "--tasks",
            ],
            "protocol": "force-initialize",
        }
    }
    settings = {"mcp.passthrough": ["conformance"], "protoMessages.taskAfter": "2s"}
    with running_daemon(tmp_path_factory.mktemp("ext-tasks"), servers, settings) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client


def _meta(caps: dict[str, Any], who: str | None = None) -> dict[str, Any]:
    return modern_meta(caps, **({SESSION: who} if who else {}))


def send(
    mcp: httpx.Client,
    method: str,
    params: dict[str, Any],
    caps: dict[str, Any] | None = None,
    who: str | None = None,
) -> httpx.Response:
    body = modern_params(params, _meta(WITH_EXT if caps is None else caps, who))
    frame = {"jsonrpc": "2.0", "id": 1, "method": method, "params": body}
    headers = modern_headers(method, params, accept="application/json")
    return mcp.post("/mcp", json=frame, headers=headers)


def result(mcp: httpx.Client, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
    r = send(mcp, method, params, **kw)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert "result" in body, body
    return dict(body["result"])


def error(mcp: httpx.Client, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
    r = send(mcp, method, params, **kw)
    body: dict[str, Any] = r.json()
    assert "error" in body, body
    return dict(body["error"], http=r.status_code)


def call(mcp: httpx.Client, name: str, **kw: Any) -> dict[str, Any]:
    arguments = kw.pop("arguments", {})
    return result(mcp, "tools/call", {"name": name, "arguments": arguments}, **kw)


def settled(mcp: httpx.Client, task_id: str, **kw: Any) -> dict[str, Any]:
    """tasks/get, once the task has ended."""

    def ended() -> dict[str, Any] | None:
        got = result(mcp, "tasks/get", {"taskId": task_id}, **kw)
        return got if got["status"] in ("completed", "failed", "cancelled") else None

    return wait_until(ended, timeout=30, message=f"task {task_id} ending")


def status(mcp: httpx.Client, task_id: str, want: str, **kw: Any) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        got = result(mcp, "tasks/get", {"taskId": task_id}, **kw)
        return got if got["status"] == want else None

    return wait_until(reached, timeout=30, message=f"task {task_id} {want}")


@pytest.mark.obligation("S-TASKX-1", "S-TASKX-4", "S-TASKX-5", "S-TASKX-7", "S-TASKX-8")
def test_a_slow_call_is_a_task_and_tasks_get_follows_it_to_its_result(
    mcp: httpx.Client,
) -> None:
    created = call(mcp, "slow_compute", arguments={"seconds": 3, "label": "slow"})
    assert created["resultType"] == "task"
    assert "task" not in created and "requestState" not in created and "result" not in created
    assert created["status"] == "working"
    assert ISO.match(created["createdAt"]) and ISO.match(created["lastUpdatedAt"])
    assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
    assert isinstance(created["pollIntervalMs"], int) and created["pollIntervalMs"] > 0
    assert "ttl" not in created and "pollInterval" not in created
    task_id = created["taskId"]
    # Durable before it is answered: tasks/get resolves it at once.
    working = result(mcp, "tasks/get", {"taskId": task_id})
    assert working["resultType"] == "complete" and working["taskId"] == task_id
    assert working["status"] == "working" and "result" not in working
    done = settled(mcp, task_id)
    assert done["status"] == "completed" and "requestState" not in done
    assert done["result"]["content"][0]["text"] == "computed slow in 3 s"
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})


@pytest.mark.obligation("S-TASKX-1")
def test_a_fast_call_is_answered_with_its_result(mcp: httpx.Client) -> None:
    # Within 250 ms: a machine busy enough may take longer once, so a few tries.
    def inline() -> dict[str, Any] | None:
        done = call(mcp, "slow_compute", arguments={"seconds": 0, "label": "fast"})
        return done if done["resultType"] == "complete" else None

    done = wait_until(inline, timeout=30, message="a fast call answered inline")
    assert "taskId" not in done and done["content"][0]["text"] == "computed fast in 0 s"
    # A tool that never runs as a task, with the legacy task field ignored.
    params = {"name": "greet", "arguments": {"name": "Ada"}, "task": {"ttl": 60000}}
    greeted = result(mcp, "tools/call", params)
    assert greeted["resultType"] == "complete" and greeted["content"][0]["text"] == "Hello, Ada!"


def test_a_tool_that_declared_nothing_is_a_task_only_after_task_after(
    mcp: httpx.Client,
) -> None:
    # protoMessages.taskAfter is 2s here: a task-supporting tool's 1 s call would be one.
    inline = call(mcp, "pause", arguments={"seconds": 1})
    assert inline["resultType"] == "complete" and inline["content"][0]["text"] == "paused 1 s"
    created = call(mcp, "pause", arguments={"seconds": 3})
    assert created["resultType"] == "task"
    assert settled(mcp, created["taskId"])["result"]["content"][0]["text"] == "paused 3 s"


@pytest.mark.obligation("S-TASKX-7", "S-TASKX-14")
def test_a_tool_error_is_completed_and_a_protocol_error_is_failed(mcp: httpx.Client) -> None:
    tool_error = call(mcp, "failing_job")
    assert tool_error["resultType"] == "task"
    ended = settled(mcp, tool_error["taskId"])
    assert ended["status"] == "completed" and ended["result"]["isError"] is True
    protocol_error = call(mcp, "protocol_error_job")
    assert protocol_error["resultType"] == "task"
    failed = settled(mcp, protocol_error["taskId"])
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"]["code"] == -32603
    assert "protocol_error_job failed" in failed["error"]["message"]


@pytest.mark.obligation("S-TASKX-11", "S-TASKX-15")
def test_cancel_acks_empty_and_is_idempotent(mcp: httpx.Client) -> None:
    created = call(mcp, "slow_compute", arguments={"seconds": 60})
    task_id = created["taskId"]
    ack = result(mcp, "tasks/cancel", {"taskId": task_id})
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    assert settled(mcp, task_id)["status"] == "cancelled"
    again = result(mcp, "tasks/cancel", {"taskId": task_id})
    assert again["resultType"] == "complete" and "status" not in again
    unknown = error(mcp, "tasks/cancel", {"taskId": "no-such-task"})
    assert unknown["code"] == -32602


@pytest.mark.obligation("S-TASKX-2", "S-TASKX-3", "S-TASKX-15", "S-LIFE-22", "S-MSG-11")
def test_without_the_extension_the_methods_are_refused_and_calls_run_plainly(
    mcp: httpx.Client,
) -> None:
    for method, params in [
        ("tasks/get", {"taskId": "gate"}),
        ("tasks/update", {"taskId": "gate", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "gate"}),
    ]:
        refused = error(mcp, method, params, caps={})
        assert refused["code"] == -32021 and refused["http"] == 400
        assert refused["data"]["requiredCapabilities"] == {"extensions": {EXT: {}}}
    # Not the extension's: gone in 2026-07-28.
    for method in ("tasks/result", "tasks/list"):
        assert error(mcp, method, {"taskId": "x"})["code"] == -32601
    plain = call(mcp, "slow_compute", arguments={"seconds": 0.5}, caps={})
    assert plain["resultType"] == "complete" and "taskId" not in plain
    # A tool that runs only as a task: -32021 before it runs.
    required = error(mcp, "tools/call", {"name": "failing_job", "arguments": {}}, caps={})
    assert required["code"] == -32021 and required["http"] == 400
    assert required["data"]["requiredCapabilities"] == {"extensions": {EXT: {}}}
    assert error(mcp, "tasks/get", {"taskId": "no-such-task"})["code"] == -32602


@pytest.mark.obligation("S-TASKX-16")
def test_another_identity_cannot_see_the_task(mcp: httpx.Client) -> None:
    created = call(mcp, "slow_compute", arguments={"seconds": 60}, who="alice")
    task_id = created["taskId"]
    assert result(mcp, "tasks/get", {"taskId": task_id}, who="alice")["status"] == "working"
    for who in ("bob", None):
        for method in ("tasks/get", "tasks/cancel"):
            hidden = error(mcp, method, {"taskId": task_id}, who=who)
            assert hidden["code"] == -32602  # as an unknown one: no leak
    result(mcp, "tasks/cancel", {"taskId": task_id}, who="alice")


@pytest.mark.obligation("S-TASKX-7", "S-TASKX-10")
def test_a_question_asked_later_parks_the_task_until_tasks_update(mcp: httpx.Client) -> None:
    created = call(mcp, "confirm_delete", arguments={"filename": "a.txt"}, caps=ASKABLE)
    assert created["resultType"] == "task"
    task_id = created["taskId"]
    parked = status(mcp, task_id, "input_required", caps=ASKABLE)
    [(key, request)] = parked["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    # Malformed responses are refused; an update without the answer asks again.
    bad = error(mcp, "tasks/update", {"taskId": task_id, "inputResponses": [1]}, caps=ASKABLE)
    assert bad["code"] == -32602
    nothing = {"taskId": task_id, "inputResponses": {"unknown": {"x": 1}}}
    assert result(mcp, "tasks/update", nothing, caps=ASKABLE)["resultType"] == "complete"
    again = result(mcp, "tasks/get", {"taskId": task_id}, caps=ASKABLE)
    assert again["status"] == "input_required" and list(again["inputRequests"]) == [key]
    answer = {"action": "accept", "content": {"confirm": True}}
    update = {"taskId": task_id, "inputResponses": {key: answer}}
    ack = result(mcp, "tasks/update", update, caps=ASKABLE)
    assert ack["resultType"] == "complete" and "status" not in ack
    done = settled(mcp, task_id, caps=ASKABLE)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "deleted a.txt"


@pytest.mark.obligation("S-TASKX-6")
def test_a_question_asked_at_once_goes_inline_then_the_retry_is_a_task(
    mcp: httpx.Client,
) -> None:
    first = call(mcp, "test_tool_with_task", caps=ASKABLE)
    assert first["resultType"] == "input_required" and "taskId" not in first
    [key] = first["inputRequests"]
    answer = {"action": "accept", "content": {"name": "Alice"}}
    retry = {
        "name": "test_tool_with_task",
        "arguments": {},
        "inputResponses": {key: answer},
        "requestState": first["requestState"],
    }
    created = result(mcp, "tools/call", retry, caps=ASKABLE)
    assert created["resultType"] == "task"
    assert "requestState" not in created and "inputRequests" not in created
    done = settled(mcp, created["taskId"], caps=ASKABLE)
    assert done["result"]["content"][0]["text"] == "Hello, Alice!"


@pytest.mark.obligation("S-TASKX-12", "S-TASKX-13")
def test_listen_with_task_ids_streams_the_task(daemon: Daemon, mcp: httpx.Client) -> None:
    created = call(mcp, "slow_compute", arguments={"seconds": 3, "label": "heard"})
    task_id = created["taskId"]
    wanted = {"notifications": {"taskIds": [task_id, "not-a-task"]}}
    listen = {"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen"}
    listen["params"] = modern_params(wanted, _meta(WITH_EXT))
    headers = modern_headers("subscriptions/listen", accept=ACCEPT_BOTH)
    got: list[dict[str, Any]] = []
    with (
        httpx.Client(base_url=daemon.info["url"], timeout=60) as other,
        other.stream("POST", "/mcp", json=listen, headers=headers) as stream,
    ):
        for line in stream.iter_lines():
            if line.startswith("data:"):
                got.append(json.loads(line[5:]))
                if got[-1].get("params", {}).get("status") == "completed":
                    break
    ack, *notes = got
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"]["taskIds"] == [task_id]
    assert all(n["method"] == "notifications/tasks" for n in notes)
    assert notes[0]["params"]["status"] == "working"
    assert notes[-1]["params"]["result"]["content"][0]["text"] == "computed heard in 3 s"
    assert all(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7 for n in notes)
    # Without the extension declared, asking for task notifications is -32021.
    refused = error(mcp, "subscriptions/listen", wanted, caps={})
    assert refused["code"] == -32021
