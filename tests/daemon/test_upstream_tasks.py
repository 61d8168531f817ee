"""An upstream tool whose ``execution.taskSupport`` is ``"required"``, through a real
daemon: ``mcpx call``, ``/v1/call`` and ``mcpx_call`` all run it as an upstream task and
return its result; a failed task is the error a plain call gives; a question it asks
mid-way, with no host able to answer, is answered through the broker.

Upstreams: tests/fixtures/upstream_task_server.py, legacy (2025-11-25 core tasks) and
modern (2026-07-28 with the tasks extension); every frame it was sent is in its log.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request
from support.waiting import wait_until

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_task_server.py"
SERVERS = ("legacy", "modern")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("upstream-tasks")
    servers = {
        name: {
            "command": sys.executable,
            "args": [str(FIXTURE), str(tmp / f"{name}.jsonl")]
            + (["--modern"] if name == "modern" else []),
        }
        for name in SERVERS
    }
    with running_daemon(tmp, servers) as d:
        d.upstream_logs = {name: tmp / f"{name}.jsonl" for name in SERVERS}  # type: ignore[attr-defined]
        yield d


def _received(daemon: Daemon, server: str) -> list[dict[str, Any]]:
    path: Path = daemon.upstream_logs[server]  # type: ignore[attr-defined]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def _list_first(daemon: Daemon, server: str) -> None:
    # The decision follows the catalogue: the tool must have been listed once.
    assert daemon.cli("tools", server).returncode == 0


@pytest.mark.parametrize("server", SERVERS)
def test_mcpx_call_runs_a_required_tool(daemon: Daemon, server: str) -> None:
    _list_first(daemon, server)
    done = daemon.cli("call", server, "slow", "ms=100")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done -"
    methods = [f.get("method") for f in _received(daemon, server)]
    assert "tasks/get" in methods or "tasks/result" in methods


@pytest.mark.parametrize("server", SERVERS)
def test_v1_call_runs_a_required_tool_and_maps_a_failure(daemon: Daemon, server: str) -> None:
    _list_first(daemon, server)
    with daemon.http() as api:
        ok = api.post("/v1/call", json={"server": server, "tool": "slow", "arguments": {}})
        assert ok.status_code == 200, ok.text
        assert _text(ok.json()) == "done -"
        body = {"server": server, "tool": "slow", "arguments": {"fail": True}}
        failed = api.post("/v1/call", json=body)
    assert failed.status_code == 502, failed.text
    error = failed.json()["error"]
    assert error["code"] == "upstream_error"
    assert error["details"]["jsonrpc"] == {"code": -32042, "message": "slow broke"}


@pytest.mark.parametrize("server", SERVERS)
def test_mcpx_call_tool_runs_a_required_tool(daemon: Daemon, server: str) -> None:
    _list_first(daemon, server)
    args = {"server": server, "tool": "slow", "arguments": {"ms": 100}}
    params = {"name": "mcpx_call", "arguments": args}
    meta = modern_meta(client=None)
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        r = mcp.post(
            "/mcp",
            json=modern_request(7, "tools/call", params, meta),
            headers=modern_headers("tools/call", name="mcpx_call"),
        )
    assert r.status_code == 200, r.text
    assert _text(r.json()["result"]) == "done -"


@pytest.mark.parametrize("server", SERVERS)
def test_a_question_midway_is_answered_through_the_broker(daemon: Daemon, server: str) -> None:
    _list_first(daemon, server)
    replies: dict[str, httpx.Response] = {}

    def call() -> None:
        body = {"server": server, "tool": "slow", "arguments": {"ms": 200, "ask": True}}
        with daemon.http() as api:
            replies["r"] = api.post("/v1/call", json=body, timeout=120)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        question = daemon.open_question(f"{server} (via mcpx) asks: Which one?")
        with daemon.http() as api:
            answered = api.post(
                f"/v1/questions/{question['id']}/answer", json={"content": {"pick": "green"}}
            )
            assert answered.status_code == 200, answered.text
    finally:
        caller.join(timeout=120)
    wait_until(lambda: "r" in replies, timeout=10, message="the call's reply")
    assert replies["r"].status_code == 200, replies["r"].text
    assert _text(replies["r"].json()) == "done green"
