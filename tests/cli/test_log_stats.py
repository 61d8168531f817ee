"""``mcpx log`` and ``mcpx stats`` (issue 24) against a real daemon: filters, --json,
--follow printing calls as they are recorded, the stats table."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

from support.daemon import bad_entry, running_daemon
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


def test_log_filters_and_stats(tmp_path: Path) -> None:
    servers = {"demo": DEMO, "crash": bad_entry("exit")}
    with running_daemon(tmp_path, servers) as d:
        assert d.cli("call", "demo", "echo", "text=one").returncode == 0
        assert d.cli("call", "demo", "add", "a=1", "b=2").returncode == 0
        assert d.cli("call", "crash", "echo", "text=x").returncode == 5
        lines = d.cli("log", "--json").stdout.splitlines()
        calls = [json.loads(line) for line in lines]
        assert [c["tool"] for c in calls] == ["echo", "add", "echo"]  # oldest first
        assert {c["door"] for c in calls} == {"cli"}
        only = [json.loads(x) for x in d.cli("log", "--tool", "add", "--json").stdout.splitlines()]
        assert [c["tool"] for c in only] == ["add"]
        errors = d.cli("log", "--errors", "--server", "crash").stdout
        assert "crash/echo error" in errors and "demo" not in errors
        assert d.cli("log", "--since", "1h", "--json").stdout.count("\n") == 3
        bad = d.cli("log", "--since", "yesterday")
        assert bad.returncode == 2 and "since" in bad.stderr
        stats = json.loads(d.cli("stats", "--json").stdout)
        by_tool = {(t["server"], t["tool"]): t for t in stats["tools"]}
        assert by_tool[("demo", "echo")]["calls"] == 1
        assert by_tool[("crash", "echo")]["errors"] == 1
        table = d.cli("stats").stdout
        assert "P95 MS" in table and "crash:" in table


def test_follow_prints_new_calls(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"demo": DEMO}) as d:
        argv = [sys.executable, "-m", "mcpx", "log", "--follow", "--json"]
        proc = subprocess.Popen(argv, cwd=d.home, env=d.env(), stdout=subprocess.PIPE, text=True)
        seen: list[str] = []
        reader = threading.Thread(target=lambda: seen.extend(iter(proc.stdout.readline, "")))  # type: ignore[union-attr]
        reader.start()
        try:
            assert d.cli("call", "demo", "echo", "text=first").returncode == 0
            wait_until(lambda: len(seen) >= 1, timeout=30, message="the first call followed")
            assert d.cli("call", "demo", "echo", "text=second").returncode == 0
            wait_until(lambda: len(seen) >= 2, timeout=30, message="the second call followed")
            ids = [json.loads(line)["id"] for line in seen]
            assert ids == sorted(set(ids))  # each once, in order
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            reader.join(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
