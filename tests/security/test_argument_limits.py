"""A tool call's arguments are bounded before anything is sent upstream (issue 18, defect 4).

Arguments whose JSON is longer than ``pool.maxArguments`` are refused at once on every
surface: /v1/call answers 413 naming the limit, /mcp answers a JSON-RPC invalid-params
error (-32602) for a pass-through tool and for ``mcpx_call`` alike. Arguments of exactly
the limit go through. Nothing of a refused call reaches the upstream, nobody waits out
the call timeout, and the daemon's memory is back where it was.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon
from support.raw_http import rss_kib

ARGS = 256 * 1024
BODY = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    settings = {
        "pool.maxArguments": ARGS,
        "http.maxBody": BODY,
        "mcp.passthrough": ["demo"],
        "pool.callTimeout": "20s",
    }
    with running_daemon(tmp_path_factory.mktemp("args"), servers, settings) as d:
        yield d


@pytest.fixture
def mcp(daemon: Daemon) -> Iterator[tuple[httpx.Client, dict[str, str]]]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client, legacy_session(client, {})


def _arguments(size: int) -> dict[str, Any]:
    """Echo's arguments, exactly ``size`` bytes of compact JSON."""
    bare = len(json.dumps({"text": ""}, separators=(",", ":")))
    arguments = {"text": "x" * (size - bare)}
    assert len(json.dumps(arguments, separators=(",", ":"))) == size
    return arguments


def _upstream_calls(daemon: Daemon) -> int:
    with daemon.http() as api:
        servers = {s["name"]: s for s in api.get("/v1/servers").json()["servers"]}
    return sum(i["calls"] for i in servers["demo"]["instances"])


def _v1_call(
    daemon: Daemon, arguments: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    body = {"server": "demo", "tool": "echo", "arguments": arguments}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        return client.post("/v1/call", json=body, headers=headers)


def _mcp_call(
    mcp: tuple[httpx.Client, dict[str, str]], name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    client, headers = mcp
    params = {"name": name, "arguments": arguments}
    frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    r = client.post("/mcp", json=frame, headers={**headers, "Accept": "application/json"})
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def _assert_invalid_params(answer: dict[str, Any]) -> None:
    assert answer["error"]["code"] == -32602, answer
    message = answer["error"]["message"]
    assert "pool.maxArguments" in message and str(ARGS) in message


def test_v1_call_takes_arguments_of_exactly_the_limit(daemon: Daemon) -> None:
    arguments = _arguments(ARGS)
    r = _v1_call(daemon, arguments)
    assert r.status_code == 200, r.text
    assert r.json()["content"][0]["text"] == arguments["text"]


# Plain, and as a call that would go on as a task on a question: refused before either.
@pytest.mark.parametrize("headers", [{}, {"Mcpx-Questions": "return"}])
def test_v1_call_refuses_arguments_over_the_limit_before_sending_them(
    daemon: Daemon, headers: dict[str, str]
) -> None:
    _v1_call(daemon, _arguments(100))  # the instance is up and its tools catalogued
    calls = _upstream_calls(daemon)
    started = time.monotonic()
    r = _v1_call(daemon, _arguments(ARGS + 1), headers)
    assert time.monotonic() - started < 5  # refused at once, not after the call timeout
    assert r.status_code == 413, r.text
    error = r.json()["error"]
    assert error["code"] == "arguments_too_large"
    assert error["details"] == {"size": ARGS + 1, "limit": ARGS, "setting": "pool.maxArguments"}
    assert "pool.maxArguments" in error["message"] and str(ARGS) in error["message"]
    assert _upstream_calls(daemon) == calls  # the upstream never saw it


def test_mcp_passthrough_tool_call_over_the_limit_is_invalid_params(
    daemon: Daemon, mcp: tuple[httpx.Client, dict[str, str]]
) -> None:
    arguments = _arguments(ARGS)
    result = _mcp_call(mcp, "echo", arguments)["result"]
    assert result["content"][0]["text"] == arguments["text"]
    calls = _upstream_calls(daemon)
    _assert_invalid_params(_mcp_call(mcp, "echo", _arguments(ARGS + 1)))
    assert _upstream_calls(daemon) == calls


def test_mcpx_call_over_the_limit_is_invalid_params(
    daemon: Daemon, mcp: tuple[httpx.Client, dict[str, str]]
) -> None:
    inner = _arguments(ARGS)
    wrapped = {"server": "demo", "tool": "echo", "arguments": inner}
    result = _mcp_call(mcp, "mcpx_call", wrapped)["result"]
    assert not result.get("isError") and result["content"][0]["text"] == inner["text"]
    calls = _upstream_calls(daemon)
    wrapped["arguments"] = _arguments(ARGS + 1)
    _assert_invalid_params(_mcp_call(mcp, "mcpx_call", wrapped))
    assert _upstream_calls(daemon) == calls


def test_a_stdio_host_is_told_invalid_params_too(daemon: Daemon) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }

    def call(request_id: int, name: str, arguments: dict[str, Any]) -> str:
        params = {"name": name, "arguments": arguments, "_meta": meta}
        frame = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        return json.dumps(frame) + "\n"

    over = {"server": "demo", "tool": "echo", "arguments": _arguments(ARGS + 1)}
    lines = call(1, "mcpx_call", over) + call(2, "echo", _arguments(ARGS + 1))
    lines += call(3, "echo", _arguments(ARGS))
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input=lines.encode(),
        capture_output=True,
        cwd=daemon.home,
        env=daemon.env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    answers = {f["id"]: f for f in map(json.loads, done.stdout.decode().splitlines())}
    _assert_invalid_params(answers[1])
    _assert_invalid_params(answers[2])
    assert answers[3]["result"]["content"][0]["text"] == _arguments(ARGS)["text"]


def test_memory_is_back_after_arguments_over_the_limit(daemon: Daemon) -> None:
    _v1_call(daemon, _arguments(ARGS))  # warm: the same path once with a large body
    before = rss_kib(daemon.proc.pid)
    started = time.monotonic()
    # Over the argument limit but within the body limit; then over both.
    statuses = [
        _v1_call(daemon, _arguments(size)).status_code for size in (BODY - 100, 100 * 2**20)
    ]
    assert time.monotonic() - started < 20
    after = rss_kib(daemon.proc.pid)
    assert after <= before * 1.2, f"RSS {before} KiB before, {after} KiB after"
    assert statuses == [413, 413]
