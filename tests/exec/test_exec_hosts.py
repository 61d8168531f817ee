"""``mcpx_exec`` from real SDK hosts, and questions a script's calls ask.

The hosts are ``tests/fixtures/sdk_host.py --ask mcpx_exec`` on the official Python SDK:
1.23.3 (2025-11-25) and 2.3.0 in ``auto`` mode (2026-07-28), spawning ``mcpx serve``. The
upstream that asks is the SDK's fixture server on 1.23.3 (``ask``: a form elicitation
mid-call). The design record's rule: a question on a key whose in-flight calls all belong
to one run is that run's, so it reaches whoever started the run, the host natively, or,
for ``mcpx exec``, the broker and exit 75 with the task to collect.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon, sdk_entry
from support.hosts import SDK_HOST, SERVE_COMMAND, run_host
from support.peers import MODERN_REVISION, peer_python
from support.waiting import wait_until

DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
HOSTS: Final = (("1.23.3", None, "2025-11-25"), ("2.3.0", "auto", MODERN_REVISION))
# Two calls of the run in flight on the asking server's instance when it asks: the
# question is still the run's (they are all its own).
ASKING: Final = (
    "import asyncio\n"
    "from mcpx_tools import asker, demo\n"
    "async def main():\n"
    "    said, _ = await asyncio.gather(\n"
    "        asker.aio.ask(question='colour?'), asker.aio.slow(seconds=1.0)\n"
    "    )\n"
    "    return {'answer': said, 'sum': demo.add(a=1, b=2)['sum']}\n"
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": DEMO, "asker": sdk_entry("1.23.3")}
    with running_daemon(tmp_path_factory.mktemp("exec-hosts"), servers) as d:
        yield d


def _host(daemon: Daemon, version: str, mode: str | None, code: str, *declare: str) -> Any:
    argv = [str(peer_python(version)), str(SDK_HOST), "--transport", "stdio"]
    if mode is not None:
        argv += ["--mode", mode]
    argv += ["--ask", "mcpx_exec", "--server", "mcpx", "--declare", ",".join(declare)]
    argv += ["--answer", "blue", "--arguments", json.dumps({"code": code})]
    return run_host([*argv, "--", *SERVE_COMMAND], daemon)


@pytest.mark.parametrize(("version", "mode", "revision"), HOSTS, ids=[h[2] for h in HOSTS])
def test_a_host_runs_a_script_and_gets_its_data(
    daemon: Daemon, version: str, mode: str | None, revision: str
) -> None:
    code = (
        "from mcpx_tools import demo\ndef main():\n    return {'sum': demo.add(a=2, b=40)['sum']}"
    )
    run = _host(daemon, version, mode, code)
    seen = run.seen
    assert seen["protocolVersion"] == revision
    assert seen["result"]["isError"] is False, seen["result"]
    assert seen["result"]["structured"] == {"sum": 42}


@pytest.mark.parametrize(("version", "mode", "revision"), HOSTS, ids=[h[2] for h in HOSTS])
def test_a_question_during_a_script_reaches_the_host_that_started_it(
    daemon: Daemon, version: str, mode: str | None, revision: str
) -> None:
    run = _host(daemon, version, mode, ASKING, "elicitation")
    seen = run.seen
    [asked] = seen["asked"]
    assert asked["method"] == "elicitation/create"
    assert "colour?" in asked["params"]["message"]
    assert seen["result"]["isError"] is False, seen["result"]
    structured = seen["result"]["structured"]
    assert structured["sum"] == 3 and "blue" in json.dumps(structured["answer"])


def test_a_script_failing_is_a_tool_error(daemon: Daemon) -> None:
    run = _host(daemon, "1.23.3", None, "raise RuntimeError('broken script')")
    assert run.seen["result"]["isError"] is True
    assert any("broken script" in t for t in run.seen["result"]["texts"])


def test_mcpx_exec_exits_75_on_a_question_and_the_run_goes_on(daemon: Daemon) -> None:
    out = daemon.cli("exec", "-c", ASKING)
    assert out.returncode == 75, (out.returncode, out.stderr)
    qid = re.search(r"mcpx elicit answer (\S+)", out.stderr)
    task = re.search(r"mcpx task result (\S+)", out.stderr)
    assert qid and task, out.stderr
    answered = daemon.cli("elicit", "answer", qid.group(1), "answer=green")
    assert answered.returncode == 0, answered.stderr
    result = daemon.cli("task", "result", task.group(1))  # as mcpx exec would show it
    assert result.returncode == 0, result.stderr
    assert "green" in result.stdout


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            found.append(int(entry.name))
    return found


def test_a_host_cancelling_the_call_ends_the_script_and_its_children(daemon: Daemon) -> None:
    marker = f"{3000 + os.getpid() % 997}"
    code = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{marker}'])\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    url = daemon.info["url"]
    with httpx.Client(base_url=url, timeout=60) as mcp:
        headers = legacy_session(mcp, {})
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
        call["params"] = {"name": "mcpx_exec", "arguments": {"code": code}}
        with subprocess.Popen(
            [sys.executable, "-c", _POST, url, json.dumps(headers), json.dumps(call)],
            stdout=subprocess.PIPE,
        ) as poster:
            try:
                wait_until(
                    lambda: _processes_with(marker), timeout=30, message="the script's child"
                )
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
                cancel["params"] = {"requestId": 7, "reason": "changed my mind"}
                assert mcp.post("/mcp", json=cancel, headers=headers).status_code == 202
                wait_until(
                    lambda: not _processes_with(marker), timeout=30, message="the child gone"
                )
            finally:
                poster.kill()


# The host's tools/call, POSTed from another process so the test can cancel it meanwhile.
_POST: Final = """
import json, sys, httpx
url, headers, call = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
headers["Accept"] = "application/json, text/event-stream"
try:
    httpx.post(url + "/mcp", json=call, headers=headers, timeout=60)
except httpx.HTTPError:
    pass
"""


def test_ctrl_c_on_mcpx_exec_cancels_the_run_and_its_processes(daemon: Daemon) -> None:
    marker = f"{4000 + os.getpid() % 997}"
    code = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{marker}'])\n"
        "while True:\n    time.sleep(0.05)\n"
    )
    argv = [sys.executable, "-m", "mcpx", "exec", "-c", code]
    with subprocess.Popen(argv, cwd=daemon.home, env=daemon.env(), stderr=subprocess.PIPE) as cli:
        try:
            wait_until(lambda: _processes_with(marker), timeout=30, message="the script's child")
            cli.send_signal(signal.SIGINT)
            _, stderr = cli.communicate(timeout=30)
        finally:
            if cli.poll() is None:
                cli.kill()
    assert cli.returncode == 130, stderr
    assert b"cancelled" in stderr, stderr
    wait_until(lambda: not _processes_with(marker), timeout=30, message="the child gone")
