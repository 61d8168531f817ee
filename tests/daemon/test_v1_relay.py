"""/v1/call as a relay stream: progress and log lines as ndjson, the body last."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator

import pytest

from support.daemon import Daemon, running_daemon

NDJSON = "application/x-ndjson"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path_factory.mktemp("v1relay"), servers) as d:
        yield d


def _slow(seconds: float) -> dict[str, object]:
    return {"server": "demo", "tool": "slow", "arguments": {"seconds": seconds, "steps": 3}}


def test_relayed_as_ndjson_when_asked_and_something_came(daemon: Daemon) -> None:
    with daemon.http() as api:
        r = api.post("/v1/call", json=_slow(0.3), headers={"Accept": f"application/json, {NDJSON}"})
    assert r.status_code == 200
    assert r.headers["content-type"] == NDJSON
    lines = [json.loads(line) for line in r.text.splitlines() if line]
    notes = [line["notification"] for line in lines[:-1]]
    progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert {p["progressToken"] for p in progress} == {"v1"}
    assert any(n["method"] == "notifications/message" for n in notes)
    # The last line is the very body a plain JSON answer has.
    assert lines[-1]["content"][0]["text"].startswith("slept 0.3 s")


def test_plain_json_otherwise(daemon: Daemon) -> None:
    with daemon.http() as api:
        plain = api.post("/v1/call", json=_slow(0.1))
        assert plain.headers["content-type"] == "application/json"
        assert plain.json()["content"][0]["text"].startswith("slept")
        echo = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
        quiet = api.post("/v1/call", json=echo, headers={"Accept": NDJSON})
        assert quiet.headers["content-type"] == "application/json"  # nothing was relayed
        assert quiet.json()["content"][0]["text"] == "hi"
        # An error keeps its status and shape.
        bad = {"server": "nope", "tool": "echo", "arguments": {}}
        missing = api.post("/v1/call", json=bad, headers={"Accept": NDJSON})
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_server"


def test_cli_call_shows_log_lines_on_stderr_and_the_result_on_stdout(daemon: Daemon) -> None:
    done = daemon.cli("call", "demo", "slow", "seconds=0.2", "steps=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "slept 0.2 s in 2 steps"
    assert "info: slow: slept 0.2 s in 2 steps" in done.stderr


def test_cli_call_draws_a_progress_bar_on_a_terminal(daemon: Daemon) -> None:
    # stderr is a pseudo-terminal: the bar is drawn there; stdout (a pipe) gets the result.
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", "call", "demo", "slow", "seconds=0.6", "steps=3"],
            stdout=subprocess.PIPE,
            stderr=follower,
            env={**daemon.env(), "COLUMNS": "100", "TERM": "xterm"},
            cwd=daemon.home,
        )
        os.close(follower)
        drawn = b""
        while True:  # until the child closes the terminal (bounded by the call's end)
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert out.decode().strip() == "slept 0.6 s in 3 steps"
    text = drawn.decode("utf-8", "replace")
    assert "step 1 of 3" in text or "step 2 of 3" in text  # the bar's description
