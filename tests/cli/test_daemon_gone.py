"""When the daemon goes away (issue 27): ``kill -9`` while commands wait on it ends each
with one line on stderr saying so and exit 6, never a traceback; the next command starts
a daemon afresh, with the task saying how it ended and the question still answerable, and
no upstream outlives the killed daemon. ``mcpx stop`` returns only once the daemon's
process is gone, and a call it ends mid-stream exits with the daemon's word (5).

A real daemon, real CLI processes. Its upstreams: the gauge (``tests/fixtures/
gauge_server.py``: ``hold`` waits at a gate, so a call answers with plain JSON that never
comes), the demo (``slow`` reports progress, so the answer is an ndjson stream that stops
after its first lines), and the official SDK's fixture server (1.23.3: ``ask`` asks a
question nobody present can answer, so ``mcpx call`` returns 75 and the call goes on as
a task that ``mcpx task result`` waits on). The daemon is killed by its pid, once the
daemon reports the calls running (and the CLI shows what proves it got that far).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.bounds import gauge_entry
from support.daemon import Daemon, running_daemon, sdk_entry
from support.waiting import wait_until

EX_DAEMON_GONE = 6
EX_TEMPFAIL = 75
HOLDS = 3  # gauge calls waiting at their gate when the daemon is killed
WAIT = 60.0  # seconds a process gets to show or do what is expected of it (a loaded box)

SERVERS = {
    "gauge": gauge_entry(),
    "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    "sdk": sdk_entry("1.23.3"),
}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(tmp_path, SERVERS) as d:
        yield d


class Command:
    """A CLI process, its output read as it comes. On a terminal (``tty``: stdout and
    stderr on one pseudo-terminal) the CLI shows its progress bar and its spinner."""

    def __init__(self, daemon: Daemon, *args: str, tty: bool = False) -> None:
        argv = [sys.executable, "-m", "mcpx", *args]
        env = daemon.env()
        self._master: int | None = None
        if tty:
            self._master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
            env["TERM"] = "xterm"  # a terminal as people have it: the bar is drawn
            out: Any = slave
        else:
            out = subprocess.PIPE
        self.proc = subprocess.Popen(
            argv,
            cwd=daemon.home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
        if tty:
            os.close(slave)
        self.seen = ""  # on a terminal: everything read so far

    def shows(self, text: str) -> bool:
        """Whether the terminal showed ``text`` (reading what is there, not waiting)."""
        assert self._master is not None
        while select.select([self._master], [], [], 0)[0] and self._read():
            pass
        return text in self.seen

    def finish(self) -> tuple[int, str, str]:
        """Its exit status, stdout and stderr once it ended (bounded); on a terminal,
        both are what the terminal showed."""
        if self._master is None:
            out, err = self.proc.communicate(timeout=WAIT)
            return self.proc.returncode, out.decode(), err.decode()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._master], [], [], deadline - time.monotonic())
            if ready and not self._read():
                break  # the other side is closed: the process ended
        code = self.proc.wait(timeout=WAIT)
        return code, self.seen, self.seen

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        if self._master is not None:
            os.close(self._master)

    def _read(self) -> str:
        assert self._master is not None
        try:
            chunk = os.read(self._master, 4096).decode("utf-8", "replace")
        except OSError:  # EIO: the other side is closed
            return ""
        self.seen += chunk
        return chunk


@contextmanager
def commands(daemon: Daemon, *runs: tuple[tuple[str, ...], bool]) -> Iterator[list[Command]]:
    """CLI processes, one per ``(args, tty)``; each killed at the end if still running."""
    with ExitStack() as stack:
        started = []
        for args, tty in runs:
            command = Command(daemon, *args, tty=tty)
            stack.callback(command.close)
            started.append(command)
        yield started


def in_flight(daemon: Daemon) -> dict[str, int]:
    """Calls running upstream, by server, as the daemon reports them."""
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return {s["name"]: sum(i.get("inFlight", 0) for i in s["instances"]) for s in servers}


def kill(daemon: Daemon) -> int:
    """SIGKILL to the daemon, by its pid; the pid, once the process is reaped."""
    pid = daemon.proc.pid
    os.kill(pid, signal.SIGKILL)
    daemon.proc.wait(timeout=WAIT)
    return pid


def test_calls_waiting_on_a_killed_daemon_end_with_6_and_one_line(daemon: Daemon) -> None:
    holds = [(("call", "gauge", "hold", "gate=never"), False)] * HOLDS
    slow = (("call", "demo", "slow", "seconds=300", "steps=1000"), True)
    with commands(daemon, *holds, slow) as calls:
        # The daemon runs them all; the slow call's progress reached its bar, so its
        # answer is an ndjson stream already under way.
        wait_until(
            lambda: in_flight(daemon) == {"gauge": HOLDS, "demo": 1, "sdk": 0},
            timeout=WAIT,
            message=lambda: f"the calls running in the daemon: {in_flight(daemon)}",
        )
        wait_until(
            lambda: calls[-1].shows("step "),
            timeout=WAIT,
            message=lambda: f"no progress on the slow call's terminal:\n{calls[-1].seen}",
        )
        pid = kill(daemon)
        for command in calls:
            code, out, err = command.finish()
            assert code == EX_DAEMON_GONE, (code, out, err)
            assert "Traceback" not in err, err
            said = f"mcpx: the daemon (pid {pid}) went away before answering"
            lines = [line for line in err.splitlines() if said in line]
            assert len(lines) == 1, err
            # Each call ran as a task (the CLI was told its id first): the line names it.
            task = re.search(
                r"about task (\w+); once a daemon runs again, `mcpx task show \1`", err
            )
            assert task is not None, err
            if command is not calls[-1]:  # off a terminal: that line and nothing else
                assert out == "" and err == lines[0] + "\n", (out, err)


def test_a_task_waited_on_when_the_daemon_is_killed_is_named(daemon: Daemon) -> None:
    asked = daemon.cli("call", "sdk", "ask", "question=deploy now?")
    assert asked.returncode == EX_TEMPFAIL, asked.stderr
    found = re.search(r"mcpx task result (\w+)", asked.stderr)
    assert found, asked.stderr
    task = found[1]
    with commands(daemon, (("task", "result", task, "--wait", "300"), True)) as [waiting]:
        # The spinner names the request once it has waited a second: the command is
        # past finding the daemon, and asks it.
        wait_until(
            lambda: waiting.shows(f"GET /v1/tasks/{task}/result"),
            timeout=WAIT,
            message=lambda: f"no spinner for the request on the terminal:\n{waiting.seen}",
        )
        pid = kill(daemon)
        code, _, shown = waiting.finish()
    assert code == EX_DAEMON_GONE, (code, shown)
    assert "Traceback" not in shown, shown
    said = f"mcpx: the daemon (pid {pid}) went away before answering about task {task}; "
    assert said in shown, shown
    assert f"`mcpx task show {task}`" in shown, shown


def test_stop_returns_once_the_daemon_is_gone(daemon: Daemon) -> None:
    # Upstreams running, so that stopping has them to end.
    for args in (("demo", "echo", "text=x"), ("gauge", "gauge", "gate=g")):
        called = daemon.cli("call", *args)
        assert called.returncode == 0, called.stderr
    stopped = daemon.cli("stop")
    assert f"stopped the daemon (pid {daemon.proc.pid})" in stopped.stdout, stopped
    # At once, no waiting: the daemon's process has exited (poll reaps it: it is this
    # test's child; a daemon the CLI started is left a zombie for its reaper) and its
    # socket is gone.
    code = daemon.proc.poll()
    assert code is not None, f"mcpx stop returned with the daemon still running: {stopped}"
    assert not Path(daemon.info["socket"]).exists()


def test_a_streamed_call_stopped_by_mcpx_stop_fails_with_the_daemons_word(daemon: Daemon) -> None:
    # The call's answer is an ndjson stream already under way (status 200 sent) when the
    # daemon refuses it for stopping: the last line carries the status it would have had.
    slow = (("call", "demo", "slow", "seconds=300", "steps=1000"), True)
    with commands(daemon, slow) as [call]:
        wait_until(
            lambda: call.shows("step "),
            timeout=WAIT,
            message=lambda: f"no progress on the slow call's terminal:\n{call.seen}",
        )
        stopped = daemon.cli("stop")
        assert stopped.returncode == 0, stopped
        code, _, shown = call.finish()
    assert code == 5, (code, shown)  # 503: the daemon is stopping (the README's 5)
    assert "Traceback" not in shown, shown
    assert re.search(r"mcpx: demo answered with an error: .*mcpx is stopping", shown), shown


def upstream_pids(daemon: Daemon) -> list[int]:
    """The pids of the upstreams the daemon runs now."""
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return [i["pid"] for s in servers for i in s["instances"] if i.get("pid")]


def gone(pid: int) -> bool:
    """Whether ``pid`` ended (a zombie waiting for its reaper counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_after_a_kill_the_next_command_starts_afresh_with_what_was_stored(daemon: Daemon) -> None:
    asked = daemon.cli("call", "sdk", "ask", "question=deploy now?")
    assert asked.returncode == EX_TEMPFAIL, asked.stderr
    task = re.search(r"mcpx task result (\w+)", asked.stderr)
    question = re.search(r"mcpx elicit answer (\S+)", asked.stderr)
    assert task and question, asked.stderr
    upstreams = upstream_pids(daemon)
    assert upstreams, "the sdk upstream runs, waiting for its answer"
    killed = kill(daemon)
    # No upstream outlives its daemon (transport/_parent_death).
    for pid in upstreams:
        wait_until(lambda pid=pid: gone(pid), timeout=WAIT, message=f"upstream {pid} lives on")
    try:
        # The next command finds the dead daemon's socket and daemon.json, starts a new
        # daemon, and the task says how it ended.
        shown = daemon.cli("task", "show", task[1])
        assert shown.returncode == 0, shown.stderr
        assert "mcpx: started the daemon" in shown.stderr, shown.stderr
        record = json.loads(shown.stdout)
        assert record["status"] == "failed", record
        assert record["error"]["message"].startswith("mcpx stopped before the call finished")
        # The question is still there, and can be answered (for when the server asks again).
        answered = daemon.cli("elicit", "answer", question[1], "answer=yes")
        assert answered.returncode == 0, answered.stderr
        assert f"answered {question[1]}" in answered.stdout, answered.stdout
    finally:
        stopped = daemon.cli("stop")
    assert stopped.returncode == 0 and f"(pid {killed})" not in stopped.stdout, stopped
