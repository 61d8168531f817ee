"""A call through ``ssh://`` whose connection drops, and what a slow call relays through it.

A real sshd on loopback (``support.sshd``) whose "remote" mcpx is this checkout with its
own state dir; its upstream is the official SDK's fixture server on 1.23.3 (``slow``
reports progress, ``log`` sends one log line). The CLI runs as a user runs it, its own
state dir empty (a configured endpoint is never replaced by a local daemon).

The drop: ``mcpx call sdk slow`` runs on a terminal (so its progress bar shows the stream
is under way: the task's note, the stream's first line, has been read), the remote daemon
shows the call running as a task, then the CLI's own ssh processes (its children, found
by their parent pid) are killed. The command ends with exit 6, naming the endpoint, the
task and how to collect it, and a second command through ``ssh://`` collects the result.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from support.daemon import sdk_entry
from support.processes import process_gone
from support.sshd import Sshd, running_sshd
from support.waiting import wait_until

EX_DAEMON_GONE: Final = 6
WAIT: Final = 60.0  # seconds a process gets to show or do what is expected (a loaded box)
SLOW: Final = 15  # seconds the dropped call runs: long enough to be killed under way
SERVERS: Final = {"sdk": sdk_entry("1.23.3")}


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with running_sshd(tmp_path_factory.mktemp("faults-sshd"), SERVERS) as box:
        yield box


def ssh_env(box: Sshd, tmp: Path) -> dict[str, str]:
    """A CLI environment: an empty state dir of its own, the endpoint ``ssh://`` the box."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    return env | {
        "MCPX_STATE_DIR": str(tmp / "client-state"),
        "MCPX_DAEMON_ENDPOINT": f"ssh://{box.host_alias}",
        "MCPX_DAEMON_SSH_COMMAND": f"ssh -F {box.config}",
    }


def cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mcpx", *args]
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )


class Terminal:
    """A CLI process whose stdout and stderr are one pseudo-terminal (its progress bar
    is drawn there); stdin is not a terminal, so ssh runs with BatchMode."""

    def __init__(self, env: dict[str, str], cwd: Path, *args: str) -> None:
        self._master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", *args],
            cwd=cwd,
            env={**env, "TERM": "xterm"},
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        self.seen = ""

    def shows(self, text: str) -> bool:
        """Whether the terminal showed ``text`` (reading what is there, not waiting)."""
        while select.select([self._master], [], [], 0)[0] and self._read():
            pass
        return text in self.seen

    def finish(self) -> tuple[int, str]:
        """Its exit status and all the terminal showed, once it ended (bounded)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._master], [], [], deadline - time.monotonic())
            if ready and not self._read():
                break  # the other side is closed: the process ended
        return self.proc.wait(timeout=WAIT), self.seen.replace("\r\n", "\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        os.close(self._master)

    def _read(self) -> str:
        try:
            chunk = os.read(self._master, 4096).decode("utf-8", "replace")
        except OSError:  # EIO: the other side is closed
            return ""
        self.seen += chunk
        return chunk


def running_tasks(box: Sshd) -> list[dict[str, Any]]:
    """The remote daemon's tasks still working (none before it has started)."""
    if box.remote_info() is None:
        return []
    with box.remote_http() as api:
        tasks: list[dict[str, Any]] = api.get("/v1/tasks", params={"status": "working"}).json()[
            "tasks"
        ]
    return tasks


def ssh_children(pid: int) -> list[int]:
    """The ssh processes ``pid`` started (its children whose command is ssh)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name == "ssh" and stat[stat.rindex(")") + 2 :].split()[1] == str(pid):
            found.append(int(entry.name))
    return found


def test_a_dropped_connection_ends_with_6_and_the_task_is_collected_later(
    sshd: Sshd, tmp_path: Path
) -> None:
    env = ssh_env(sshd, tmp_path)
    call = Terminal(env, tmp_path, "call", "sdk", "slow", f"seconds={SLOW}")
    try:
        [task] = wait_until(
            lambda: running_tasks(sshd),
            timeout=WAIT,
            message=lambda: f"no call running on the remote daemon; the CLI showed:\n{call.seen}",
        )
        # The bar is drawn from the stream's progress lines, which follow the task's note.
        wait_until(
            lambda: call.shows("calling"),
            timeout=WAIT,
            message=lambda: f"no progress on the call's terminal:\n{call.seen}",
        )
        links = ssh_children(call.proc.pid)
        assert links, "the CLI runs no ssh process of its own"
        for pid in links:
            os.kill(pid, signal.SIGKILL)
        code, shown = call.finish()
    finally:
        call.close()
    for pid in links:
        assert process_gone(pid)
    assert code == EX_DAEMON_GONE, (code, shown)
    assert "Traceback" not in shown, shown
    said = [line for line in shown.splitlines() if "ended before it answered" in line]
    assert len(said) == 1, shown
    assert f"at ssh://{sshd.host_alias} ended before it answered" in said[0], said
    assert f"the call goes on there as task {task['id']}" in said[0], said
    assert f"`mcpx task result {task['id']}`" in said[0], said

    # The remote daemon ran the call on; a later command through ssh:// collects it.
    collected = cli(env, tmp_path, "task", "result", task["id"], "--wait", str(WAIT))
    assert collected.returncode == 0, collected.stderr
    assert f"slept {float(SLOW)}" in collected.stdout, collected.stdout
    assert not (tmp_path / "client-state" / "daemon.json").exists(), "a local daemon started"


def test_an_upstreams_log_line_reaches_stderr_through_ssh(sshd: Sshd, tmp_path: Path) -> None:
    marker = f"logged-over-ssh-{os.getpid()}"
    called = cli(ssh_env(sshd, tmp_path), tmp_path, "call", "sdk", "log", f"message={marker}")
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "logged", called.stdout  # stdout: the result only
    assert f"info: {marker}" in called.stderr.splitlines(), called.stderr
    assert not (tmp_path / "client-state" / "daemon.json").exists(), "a local daemon started"


def test_a_slow_calls_progress_draws_on_a_terminal_through_ssh(sshd: Sshd, tmp_path: Path) -> None:
    call = Terminal(ssh_env(sshd, tmp_path), tmp_path, "call", "sdk", "slow", "seconds=2")
    try:
        # Progress every 0.1 s out of 20 steps: the bar is drawn with its count.
        wait_until(
            lambda: call.shows("calling"),
            timeout=WAIT,
            message=lambda: f"no progress bar on the terminal:\n{call.seen}",
        )
        code, shown = call.finish()
    finally:
        call.close()
    assert code == 0, shown
    assert "slept 2.0" in shown, shown
    assert "Traceback" not in shown, shown
