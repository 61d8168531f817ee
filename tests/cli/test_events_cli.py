"""``mcpx events`` as a user runs it: a real CLI process following a real daemon,
its stdout read for a bounded time, ended by its pid (Ctrl-C: status 0)."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from support.daemon import Daemon, bad_entry, running_daemon
from support.signals import interruptible

SERVERS = {
    "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    "crash": bad_entry("exit"),
}
WAIT = 2.0  # seconds one attempt waits for a line before trying again
ATTEMPTS = 30


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("cli-events"), SERVERS) as d:
        yield d


class Follower:
    """A running ``mcpx events``: its stdout and stderr lines, as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        self._pumps = [
            threading.Thread(target=_pump, args=(stream, lines), daemon=True)
            for stream, lines in ((proc.stdout, self.out), (proc.stderr, self.err))
        ]
        for pump in self._pumps:
            pump.start()

    def line_after(self, trigger: Callable[[], object]) -> str:
        """The first line printed, triggering again while none comes (until the
        follower is subscribed, what is triggered is not its to see)."""
        for _ in range(ATTEMPTS):
            trigger()
            try:
                return self.out.get(timeout=WAIT)
            except queue.Empty:
                assert self.proc.poll() is None, _rest(self.err)
        raise AssertionError("mcpx events printed nothing")

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for pump in self._pumps:
            pump.join(timeout=30)  # the pipes are at their end: the process is gone
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    assert stream is not None
    for line in stream:
        lines.put(line.rstrip("\n"))


def _rest(lines: queue.Queue[str]) -> str:
    out = []
    while not lines.empty():
        out.append(lines.get_nowait())
    return "\n".join(out)


@contextmanager
def follow(env: dict[str, str], cwd: Path, *args: str) -> Iterator[Follower]:
    argv = [sys.executable, "-m", "mcpx", "events", *args]
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,  # stopped with Ctrl-C
    )
    follower = Follower(proc)
    try:
        yield follower
    finally:
        follower.close()


def _echo(daemon: Daemon, text: str) -> Callable[[], object]:
    def trigger() -> None:
        with daemon.http() as client:
            body = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
            assert client.post("/v1/call", json=body).status_code == 200

    return trigger


def test_json_lines_live_and_ctrl_c_ends_with_0(daemon: Daemon) -> None:
    args = ("--kind", "call.finished", "--server", "demo", "--json")
    with follow(daemon.env(), daemon.home, *args) as events:
        line = events.line_after(_echo(daemon, "x"))
        event: dict[str, Any] = json.loads(line)
        assert (event["kind"], event["server"]) == ("call.finished", "demo")
        assert event["data"]["tool"] == "echo" and isinstance(event["seq"], int)
        assert events.interrupt() == 0


def test_people_lines_and_replay_since(daemon: Daemon) -> None:
    crashed = daemon.cli("call", "crash", "echo", "text=x")
    assert crashed.returncode == 5
    args = ("--since", "0", "--kind", "server.log", "--server", "crash")
    with follow(daemon.env(), daemon.home, *args) as events:
        line = events.line_after(lambda: None)  # replayed: nothing to trigger
        assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}  server\.log +crash +boom", line), line
        assert events.interrupt() == 0


def test_bad_since_is_a_usage_error(daemon: Daemon) -> None:
    proc = daemon.cli("events", "--since", "-1")
    assert proc.returncode == 2 and "since" in proc.stderr


def test_starts_the_daemon_and_ends_when_it_stops(tmp_path: Path) -> None:
    config = tmp_path / ".mcpx.json"
    config.write_text(json.dumps({"mcpServers": {"demo": SERVERS["demo"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {"MCPX_STATE_DIR": str(tmp_path / "state"), "MCPX_CONFIG": str(config)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "mcpx", *args]
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)

    try:
        with follow(env, tmp_path, "--kind", "call.finished") as events:
            assert "started the daemon" in events.err.get(timeout=30)
            # Up before anything else asks for it: two starting at once would race.
            for _ in range(ATTEMPTS * 10):
                if cli("status").returncode == 0:
                    break
            line = events.line_after(lambda: cli("call", "demo", "echo", "text=x"))
            assert "call.finished" in line and "echo" in line
            assert "stopped the daemon" in cli("stop").stdout
            assert events.proc.wait(timeout=30) == 0
            assert "the daemon ended the event stream" in _rest(events.err)
    finally:
        cli("stop")
