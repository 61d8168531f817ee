"""MCP hosts reaching mcpx over ssh: the server command is ``ssh box mcpx serve --transport
stdio`` (issue 23; design record, "MCP over ssh").

A real sshd on loopback (``support.sshd``) runs this checkout's mcpx as the remote one,
with its own state dir: the first session starts the remote daemon. Official SDK hosts of
2025-11-25 (mcp 1.23.3) and 2026-07-28 (mcp 2.3.0) list and call tools, hear progress,
answer a question mid-call and watch a resource; then sshd is stopped under them while
they hold a question, and the remote daemon lets go of the host as it does of a local host
whose input ends: the shim exits, the session ends, the watch is released upstream and the
call that was asking is ended.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pytest

from support.daemon import sdk_entry
from support.peers import everything_server_command, peer_python, stdio_peer
from support.processes import process_gone
from support.sshd import Sshd, running_sshd
from support.waiting import wait_until

SERVE = ("mcpx", "serve", "--transport", "stdio")
SSH_HOST = Path(__file__).with_name("ssh_host.py")
# server-everything's document: it declares resources.subscribe, so a host's watch
# becomes an upstream subscription the remote daemon's /v1/servers shows.
DOC = "demo://resource/static/document/architecture.md"
WATCHED = "mcpx://everything/" + quote(DOC, safe="")
# How long a stdio host's calls in flight get to answer once its input ends: short, so the
# release is seen soon (the default is 30 s; what ends is the same either way).
DRAIN = "2s"
STEP_LIMIT = 240.0  # the first ssh session starts the remote daemon and its upstreams
STARTED = "mcpx: started the daemon"


def _servers() -> dict[str, Any]:
    everything = everything_server_command("stdio")
    return {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "fixture": sdk_entry("2.3.0"),  # its ``ask`` elicits, in both eras
        "everything": {"command": everything[0], "args": everything[1:]},
    }


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sshd]:
    with running_sshd(tmp_path, _servers(), {"transport.stdioDrain": DRAIN}) as sshd:
        yield sshd


def _remote_log(box: Sshd) -> list[str]:
    path = box.remote_state / "daemon.log"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [json.loads(line)["msg"] for line in text.split("\n") if line.strip()]


def _shim_pid(box: Sshd) -> int:
    """The pid of the one ``mcpx serve`` the remote daemon serves, from its log."""

    def connected() -> list[int]:
        said = [m for m in _remote_log(box) if m.startswith("stdio host connected (")]
        return [int(m.rsplit("stdio:", 1)[1]) for m in said]

    [pid] = wait_until(connected, timeout=60, message="a stdio host connected")
    return pid


def _subscriptions(box: Sshd) -> dict[str, list[str]]:
    with box.remote_http() as api:
        listed = api.get("/v1/servers").json()["servers"]
    return {s["name"]: s["subscriptions"] for s in listed}


def _calls(box: Sshd, tool: str) -> list[dict[str, Any]]:
    with box.remote_http() as api:
        calls: list[dict[str, Any]] = api.get("/v1/log").json()["calls"]
    return [c for c in calls if c.get("tool") == tool]


def _open_questions(box: Sshd) -> list[dict[str, Any]]:
    with box.remote_http() as api:
        listed: list[dict[str, Any]] = api.get("/v1/questions").json()["questions"]
    return listed


class HostRun:
    """A host process printing one JSON line per step; the test reads them as they come."""

    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self.proc = proc
        self._stderr = stderr
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-6000:]

    def step(self, name: str) -> dict[str, Any]:
        """The host's next line, which must be step ``name``."""
        try:
            line = self._lines.get(timeout=STEP_LIMIT)
        except queue.Empty:
            raise AssertionError(f"no {name!r} from the host in {STEP_LIMIT:g}s") from None
        assert line is not None, f"the host ended before {name!r}:\n{self.stderr()}"
        seen: dict[str, Any] = json.loads(line)
        assert seen["step"] == name, f"wanted {name!r}, the host said {seen}\n{self.stderr()}"
        return seen

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with suppress(OSError):
            self.proc.stdin.close()


@contextmanager
def ssh_host(version: str, mode: str | None, box: Sshd, cwd: Path) -> Iterator[HostRun]:
    """``ssh_host.py`` on mcp ``version``, its server ``ssh … mcpx serve --transport stdio``;
    on exit its process group is ended, by its id."""
    argv = [str(peer_python(version)), str(SSH_HOST)]
    argv += ["--mode", mode] if mode else []
    argv += ["--watch", WATCHED, "--", *box.ssh_command(), *SERVE]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
        run = HostRun(proc, err)
        try:
            yield run
        finally:
            run.close_stdin()
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.stdout is not None
            proc.stdout.close()


@pytest.mark.obligation("S-STDIO-2", "S-STDIO-8")
def test_nothing_but_frames_on_stdout_over_ssh(box: Sshd) -> None:
    """A raw host over ssh: every stdout line is one JSON-RPC message, though this very
    session starts the remote daemon (the notice goes to stderr); closing stdin ends it."""
    with stdio_peer([*box.ssh_command(), *SERVE]) as peer:
        init = peer.initialize("2025-11-25")
        assert init["protocolVersion"] == "2025-11-25"
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        # Text with a newline in it: still one line on the wire.
        echo = {"server": "demo", "tool": "echo", "arguments": {"text": "over\nssh"}}
        call = {"name": "mcpx_call", "arguments": echo}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        peer.proc.stdin.close()  # type: ignore[union-attr]
        lines = []
        while (line := peer.recv_line(timeout=STEP_LIMIT)) is not None:
            lines.append(line)
        assert peer.wait(timeout=60) == 0, peer.stderr()
        stderr = peer.stderr()
    messages = [json.loads(line) for line in lines]
    assert all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in messages), lines
    answers = {m["id"]: m for m in messages if "id" in m and "method" not in m}
    assert set(answers) == {1, 2}, messages
    assert "mcpx_call" in [t["name"] for t in answers[1]["result"]["tools"]]
    assert answers[2]["result"]["content"][0]["text"] == "over\nssh"
    assert STARTED in stderr, stderr
    assert all(STARTED not in line.decode() for line in lines)


def test_the_remote_daemon_was_started_by_the_session(box: Sshd) -> None:
    """The ssh session runs the remote mcpx: its state dir and config are the box's."""
    done = subprocess.run(
        [*box.ssh_command(), "mcpx", "servers"],
        capture_output=True,
        text=True,
        timeout=STEP_LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert {"demo", "fixture", "everything"} <= set(done.stdout.split()), done.stdout
    info = box.remote_info()
    assert info is not None and Path(info["socket"]).parent == box.remote_state


@pytest.mark.parametrize(
    ("version", "mode", "revision"),
    [("1.23.3", None, "2025-11-25"), ("2.3.0", "auto", "2026-07-28")],
    ids=["1.23.3-2025-11-25", "2.3.0-2026-07-28"],
)
def test_sdk_host_over_ssh(
    box: Sshd, tmp_path: Path, version: str, mode: str | None, revision: str
) -> None:
    with ssh_host(version, mode, box, tmp_path) as host:
        ready = host.step("ready")
        assert ready["protocolVersion"] == revision
        assert {"mcpx_call", "mcpx_servers", "mcpx_search_tools"} <= set(ready["tools"])

        echo = host.step("echo")
        assert echo == {"step": "echo", "texts": ["hi"], "isError": False}

        slow = host.step("slow")
        assert not slow["isError"] and slow["texts"] == ["slept 0.6 s in 3 steps"]
        heard = [(p["progress"], p["total"]) for p in slow["progress"]]
        assert heard == [(1, 3), (2, 3), (3, 3)], slow["progress"]

        asked = host.step("asked")
        [question] = asked["asked"]
        assert question["message"] == "fixture (via mcpx) asks: ssh?"
        assert asked["texts"] == ["over ssh"] and not asked["isError"]

        host.step("watching")
        holding = host.step("holding")
        assert holding["asked"]["message"] == "fixture (via mcpx) asks: hold?"
        shim = _shim_pid(box)
        assert _subscriptions(box)["everything"] == [DOC]

        box.stop()  # the connection drops under the host
        host.close_stdin()  # only now does the host's callback decline (see ssh_host.py)
        ended = host.step("ended")
        assert ended["error"] is not None and "closed" in ended["message"].lower(), ended
        assert host.proc.wait(timeout=60) == 0, host.stderr()

    # The remote daemon let go of the host, as of a local one whose input ended.
    gone = f"stdio host gone: stdio:{shim}"
    wait_until(lambda: gone in _remote_log(box), timeout=60, message=gone)
    wait_until(lambda: process_gone(shim), timeout=60, message="the remote mcpx serve exiting")
    assert _subscriptions(box)["everything"] == []
    assert not [q for q in _open_questions(box) if "hold?" in json.dumps(q)]
    if revision == "2025-11-25":
        # The question was put on the wire while the call waited: once the host's input
        # ended it could not be answered, so it failed at once (the upstream was told)
        # and the call ended with that error, not held until the drain.
        outcomes = [c["outcome"] for c in _calls(box, "ask")]
        assert outcomes == ["error", "ok"], _calls(box, "ask")
