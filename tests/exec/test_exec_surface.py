"""``mcpx_exec`` on the gateway surface: declared, a task for a 2025-11-25 host that asks for
one, and refused where no sandbox can hold a model's script."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest

from mcpx.config import resolve
from mcpx.ops import Caller, OpContext, OpError
from mcpx.ops import _handle_exec as handle_exec
from support.daemon import Daemon, legacy_session, running_daemon
from support.modern import modern_headers, modern_meta, modern_params
from support.waiting import wait_until

DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
ACCEPT: Final = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("exec-surface"), {"demo": DEMO}) as d:
        yield d


def _rpc(mcp: httpx.Client, headers: dict[str, str], frame: dict[str, Any]) -> dict[str, Any]:
    r = mcp.post("/mcp", json=frame, headers={**headers, **ACCEPT})
    assert r.status_code == 200, r.text
    if r.headers["content-type"].startswith("application/json"):
        answer: dict[str, Any] = r.json()
        return answer
    for line in r.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            doc: dict[str, Any] = json.loads(line[5:])
            if doc.get("id") == frame["id"]:
                return doc
    raise AssertionError(f"no answer to {frame['id']} in {r.text!r}")


@pytest.mark.parametrize("revision", ["2025-11-25", "2025-06-18"])
def test_mcpx_exec_is_listed_and_declares_tasks_only_where_it_can(
    daemon: Daemon, revision: str
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {}, revision)
        tools = _rpc(mcp, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    [tool] = [t for t in tools["result"]["tools"] if t["name"] == "mcpx_exec"]
    assert set(tool["inputSchema"]["properties"]) == {"code", "timeoutSec"}
    assert tool["inputSchema"]["required"] == ["code"]
    if revision == "2025-11-25":
        assert tool["execution"] == {"taskSupport": "optional"}
    else:
        assert "execution" not in tool


def test_a_legacy_host_runs_a_script_as_a_task(daemon: Daemon) -> None:
    code = "from mcpx_tools import demo\ndef main():\n    return {'said': demo.echo(text='t')}\n"
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {})
        params = {"name": "mcpx_exec", "arguments": {"code": code}, "task": {"ttl": 60000}}
        created = _rpc(
            mcp, headers, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
        )
        task_id = created["result"]["task"]["taskId"]
        got = {"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": task_id}}
        result = _rpc(mcp, headers, got)["result"]
    assert result.get("isError") is not True, result
    assert result["structuredContent"] == {"said": "t"}
    shown = daemon.cli("task", "show", task_id)
    assert shown.returncode == 0, shown.stderr
    assert "mcpx" in shown.stdout and "completed" in shown.stdout, shown.stdout


def test_a_modern_host_gets_a_long_script_as_an_extension_task(daemon: Daemon) -> None:
    """2026-07-28 with the tasks extension: ``mcpx_exec`` (task support optional) running
    longer than a moment is answered as a task at once, and ``tasks/get`` follows it to the
    script's value."""
    code = (
        "from mcpx_tools import demo\n"
        "def main():\n"
        "    demo.slow(seconds=1.5, steps=1)\n"
        "    return {'said': demo.echo(text='late')}\n"
    )
    meta = modern_meta({"extensions": {"io.modelcontextprotocol/tasks": {}}})

    def modern(mcp: httpx.Client, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": rid, "method": method}
        frame["params"] = modern_params(params, meta)
        headers = modern_headers(method, params, accept="application/json")
        r = mcp.post("/mcp", json=frame, headers=headers)
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        assert "result" in answer, answer
        return dict(answer["result"])

    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        params = {"name": "mcpx_exec", "arguments": {"code": code}}
        created = modern(mcp, 1, "tools/call", params)
        assert created["resultType"] == "task", created
        assert created["status"] == "working"
        task_id = created["taskId"]

        def ended() -> dict[str, Any] | None:
            got = modern(mcp, 2, "tasks/get", {"taskId": task_id})
            return got if got["status"] != "working" else None

        done = wait_until(ended, timeout=60, message=f"task {task_id} ending")
    assert done["status"] == "completed", done
    assert done["result"].get("isError") is not True, done
    assert done["result"]["structuredContent"] == {"said": "late"}


def _ctx(door: str, sandbox: str = "auto") -> OpContext:
    settings = resolve(file=None, env={}, flags={"exec.sandbox": sandbox})
    ctx = OpContext(pool=None, catalogue=None, settings=settings)  # type: ignore[arg-type]
    ctx.caller = Caller(door)
    return ctx


def test_without_bubblewrap_only_the_users_own_cli_runs_unconfined(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(handle_exec, "bwrap_path", lambda: None)
    chosen, warning = handle_exec._sandbox(_ctx("cli"))
    assert chosen == "none" and "unconfined" in warning and "bubblewrap" in warning
    for door in ("mcp", "v1"):
        with pytest.raises(OpError) as refused:
            handle_exec._sandbox(_ctx(door))
        assert refused.value.status == 503
        assert "apt-get install bubblewrap" in refused.value.message
        assert "exec.sandbox" in refused.value.message
    with pytest.raises(OpError):
        handle_exec._sandbox(_ctx("cli", "bwrap"))  # asked for by name: never quietly less
    assert handle_exec._sandbox(_ctx("mcp", "none")) == ("none", "")


def test_with_bubblewrap_every_door_is_confined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handle_exec, "bwrap_path", lambda: "/usr/bin/bwrap")
    for door in ("cli", "mcp", "v1"):
        assert handle_exec._sandbox(_ctx(door)) == ("bwrap", "")


@pytest.mark.anyio
async def test_runs_beyond_exec_max_runs_are_refused() -> None:
    settings = resolve(file=None, env={}, flags={"exec.maxRuns": "1"})
    ctx = OpContext(pool=None, catalogue=None, settings=settings)  # type: ignore[arg-type]
    with ctx.calls.run("run-1", None), pytest.raises(OpError) as refused:
        await handle_exec.exec_run(ctx, {"code": "pass"})
    assert refused.value.status == 429 and refused.value.code == "too_many_runs"
    assert "exec.maxRuns" in refused.value.message
