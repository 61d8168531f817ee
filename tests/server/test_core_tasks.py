"""2025-11-25 core tasks served to a real host: the official Python SDK 1.23.3's client.

The host is ``tests/fixtures/task_host.py`` on mcp 1.23.3's own python, through
``mcpx serve`` (stdio) and through the daemon's ``/mcp`` (a legacy Streamable HTTP
session), against a real daemon whose upstreams are mcpx's demo server (``slow``,
``echo``) and the SDK fixture server on 1.23.3 (``ask``: a form elicitation mid-call).
``mcp.pageSize`` is 2, so three tasks make two ``tasks/list`` pages. Every frame the
daemon sent is checked against its revision's schema when the daemon stops.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.hosts import SERVE_COMMAND, mcp_url, run_host
from support.peers import FIXTURES, peer_python

TASK_HOST = FIXTURES / "task_host.py"
RELATED = "io.modelcontextprotocol/related-task"
TRANSPORTS = ("stdio", "http")
CORE_TASKS = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
# The statuses a task may show, and the ones it may move between (S-TASK-5).
MOVES = {
    "working": {"input_required", "completed", "failed", "cancelled"},
    "input_required": {"working", "completed", "failed", "cancelled"},
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "legacy": sdk_entry("1.23.3"),
    }
    settings = {"mcp.pageSize": 2}
    with running_daemon(tmp_path_factory.mktemp("core-tasks"), servers, settings) as d:
        yield d


def _host(daemon: Daemon, transport: str, *extra: str) -> dict[str, Any]:
    argv = [str(peer_python("1.23.3")), str(TASK_HOST), "--transport", transport, *extra]
    argv += ["--", *SERVE_COMMAND] if transport == "stdio" else [mcp_url(daemon)]
    return run_host(argv, daemon).seen


def _moves_allowed(statuses: list[str]) -> bool:
    return all(b in MOVES.get(a, set()) for a, b in itertools.pairwise(statuses))


def _without_meta(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "_meta"}


@pytest.mark.obligation(
    "S-TASK-1", "S-TASK-3", "S-TASK-4", "S-TASK-5", "S-TASK-6", "S-TASK-7", "S-TASK-8"
)
@pytest.mark.obligation("S-TASK-9", "S-TASK-12", "S-TASK-13", "S-TASK-14", "S-TASK-15")
@pytest.mark.obligation("S-TASK-16", "S-TASK-17")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_task_augmented_call_runs_as_a_task(daemon: Daemon, transport: str) -> None:
    seen = _host(daemon, transport)
    assert seen["protocolVersion"] == "2025-11-25"
    assert seen["capabilities"]["tasks"] == CORE_TASKS
    optional = {"taskSupport": "optional"}
    assert seen["execution"] == {"mcpx_call": optional, "mcpx_exec": optional}

    task = seen["created"]["task"]
    first, long, failing = seen["ids"]
    assert task["taskId"] == first and task["status"] == "working"
    assert task["ttl"] == 60000 and task["pollInterval"] == 1000
    assert task["createdAt"].endswith("Z") and task["lastUpdatedAt"] >= task["createdAt"]
    statuses = seen["statuses"]
    assert statuses[0] == "working" and statuses[-1] == "completed", statuses
    assert _moves_allowed(statuses), statuses
    # tasks/result is what the plain call returns, tied to the task by its _meta.
    assert _without_meta(seen["result"]) == _without_meta(seen["plain"])
    assert seen["result"]["_meta"][RELATED] == {"taskId": first}

    assert seen["undeclared"]["code"] == -32601  # mcpx_servers declares no taskSupport
    assert seen["cancel"]["taskId"] == long and seen["cancel"]["status"] == "cancelled"
    assert seen["after_cancel"] == "cancelled"
    assert seen["cancelled_result"]["code"] == -32800  # the cancellation, as the call ended
    assert seen["cancel_again"]["code"] == -32602  # already terminal
    assert seen["unknown"]["code"] == -32602
    # S-TASK-16: a tool result with isError is a failed task, the result handed out as is.
    assert seen["tool_error"]["status"] == "failed" and seen["tool_error"]["statusMessage"]
    assert seen["tool_error_result"]["isError"] is True
    assert seen["pages"] == [[failing, long], [first]]  # newest first, two to a page
    assert seen["bad_cursor"]["code"] == -32602
    assert (first, "completed") in [tuple(n) for n in seen["notified"]]
    assert (long, "cancelled") in [tuple(n) for n in seen["notified"]]

    # Another session sees none of them, and the first one's id is as good as unknown.
    other = _host(daemon, transport, "--other", first)
    assert other["listed"] == []
    unknown = seen["unknown"]["message"].replace("0123456789abcdef", first)
    for method in ("get", "result", "cancel"):
        assert other[method] == {"code": -32602, "message": unknown}, method


@pytest.mark.obligation("S-TASK-9", "S-TASK-11", "S-TASK-5")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_question_mid_task_is_tied_to_it(daemon: Daemon, transport: str) -> None:
    seen = _host(daemon, transport, "--ask", "legacy")
    task_id = seen["taskId"]
    [asked] = seen["asked"]
    assert asked["_meta"][RELATED] == {"taskId": task_id}
    assert "input_required" in seen["notified"], seen["notified"]
    assert seen["notified"][-1] == "completed"
    assert _moves_allowed(["working", *seen["notified"]]), seen["notified"]
    if transport == "http":  # the question waited for a tasks/result to carry it
        assert seen["polled"][0] in ("working", "input_required")
        assert "input_required" in seen["polled"], seen["polled"]
    assert "yes" in seen["result"]["content"][0]["text"]
    assert seen["result"]["_meta"][RELATED] == {"taskId": task_id}
