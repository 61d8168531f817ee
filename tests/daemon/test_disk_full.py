"""Issue 27: the state dir's disk fills. Writes to the question broker and the task store
fail with a clear error and one clear log line; plain calls still answer; nothing stored
before is harmed; writes work again once there is room.

A real daemon whose state dir is a small tmpfs (mounted here; root only), with the demo
server and the official SDK's fixture server (1.23.3: ``ask`` elicits a string ``answer``).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpx.questions import Broker, QuestionClosed
from support.daemon import Daemon, legacy_session, running_daemon, sdk_entry
from support.waiting import wait_until

_SKIP = "cannot mount a tmpfs here (needs CAP_SYS_ADMIN)"
_DISK = "disk is full"


@pytest.fixture
def tmpfs_state(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path``, whose ``state`` (the daemon's state dir) is a 4 MiB tmpfs."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(state)],
            capture_output=True,
            check=False,
        )
    except (PermissionError, FileNotFoundError):
        pytest.skip(_SKIP)
    if mounted.returncode != 0:
        pytest.skip(_SKIP)
    try:
        yield tmp_path
    finally:
        subprocess.run(["umount", "-l", str(state)], check=True)


def _fill(path: Path) -> None:
    """Write ``path`` until the disk refuses another byte."""
    with open(path, "wb", buffering=0) as out:
        for size in (1 << 16, 1 << 12, 1):
            while True:
                try:
                    out.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break


def _ask(api: httpx.Client, question: str) -> httpx.Response:
    body = {"server": "sdk", "tool": "ask", "arguments": {"question": question}}
    return api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})


def _echo(api: httpx.Client, text: str, server: str = "demo") -> str:
    body = {"server": server, "tool": "echo", "arguments": {"text": text}}
    r = api.post("/v1/call", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()["content"][0]["text"])


def _mcp_echo(daemon: Daemon, text: str) -> str:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {})
        args = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
        params = {"name": "mcpx_call", "arguments": args}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        r = mcp.post("/mcp", json=call, headers=headers)
    assert r.status_code == 200, r.text
    content: list[dict[str, Any]] = r.json()["result"]["content"]
    return "".join(c["text"] for c in content if c["type"] == "text")


def _mcp_ask(daemon: Daemon, question: str) -> dict[str, Any]:
    """``ask`` from a host that cannot be asked (no elicitation): the broker must keep it."""
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers = legacy_session(mcp, {})
        args = {"server": "sdk", "tool": "ask", "arguments": {"question": question}}
        params = {"name": "mcpx_call", "arguments": args}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        r = mcp.post("/mcp", json=call, headers=headers)
    assert r.status_code == 200, r.text
    frame: dict[str, Any] = r.json()
    return frame


def _disk_lines(daemon: Daemon) -> list[dict[str, Any]]:
    return [line for line in daemon.log_lines() if line["logger"] == "mcpx.state"]


def test_a_full_state_disk_refuses_writes_clearly_and_recovers(tmpfs_state: Path) -> None:
    servers = {
        "sdk": sdk_entry("1.23.3"),
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    }
    with running_daemon(tmpfs_state, servers) as daemon, daemon.http() as api:
        # Rows before the disk fills: a question answered, its task completed.
        parked = _ask(api, "before?")
        assert parked.status_code == 202, parked.text
        [before] = parked.json()["questions"]
        task = parked.json()["task"]["id"]
        answered = api.post(
            f"/v1/questions/{before['id']}/answer", json={"content": {"answer": "b"}}
        )
        assert answered.status_code == 200, answered.text
        done = api.get(f"/v1/tasks/{task}/result").json()
        assert done["content"][0]["text"] == "b", done
        assert _echo(api, "warm") == "warm"

        filler = daemon.state / "filler"
        _fill(filler)
        try:
            # Plain calls write nothing: they answer as ever.
            assert _echo(api, "full") == "full"
            assert _mcp_echo(daemon, "full mcp") == "full mcp"
            # A call that must park a question (and keep a task) is refused, saying why.
            refused = _ask(api, "during?")
            assert refused.status_code == 507, refused.text
            error = refused.json()["error"]
            assert error["code"] == "insufficient_storage", error
            assert _DISK in error["message"] and str(daemon.state) in error["message"], error
            # The CLI says so, with its own exit status (the README's 7).
            cli = daemon.cli("call", "sdk", "ask", "question=during cli?")
            assert cli.returncode == 7 and _DISK in cli.stderr, (cli.returncode, cli.stderr)
            # So is a question the broker would have to keep for a host that cannot be asked.
            told = _mcp_ask(daemon, "during mcp?")["result"]
            assert told.get("isError") is True, told
            assert _DISK in told["content"][0]["text"], told
            assert str(daemon.state) in told["content"][0]["text"], told
            assert api.get("/health").status_code == 200
            # Reads go on: what is stored is still shown.
            shown = api.get(f"/v1/questions/{before['id']}")
            assert shown.status_code == 200 and shown.json()["state"] == "answered", shown.text
            assert api.get("/v1/questions").status_code == 200
            assert _echo(api, "still") == "still"
            assert daemon.proc.poll() is None
        finally:
            filler.unlink()

        # Room again: writes work, and the log said what happened (the line written now
        # if it could not be while the disk was full), once.
        again = _ask(api, "after?")
        assert again.status_code == 202, again.text
        [after] = again.json()["questions"]
        listed = {q["id"] for q in api.get("/v1/questions").json()["questions"]}
        assert after["id"] in listed
        [said] = wait_until(lambda: _disk_lines(daemon), message="a log line about the disk")
        assert said["level"] == "warning" and _DISK in said["msg"], said
        assert str(daemon.state) in said["msg"], said
        # No traceback anywhere: every failure was one the daemon expected.
        assert not [line for line in daemon.log_lines() if _DISK in line.get("exc", "")]

        # What was stored before is intact.
        shown = api.get(f"/v1/questions/{before['id']}").json()
        assert shown["state"] == "answered" and shown["result"]["content"] == {"answer": "b"}
        done = api.get(f"/v1/tasks/{task}/result").json()
        assert done["content"][0]["text"] == "b", done
        assert api.post(f"/v1/questions/{after['id']}/decline").status_code == 200
        for name in ("questions.db", "tasks.db"):
            with sqlite3.connect(daemon.state / name) as db:
                assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)], name


def _daemon_argv(tmp: Path, servers: dict[str, Any]) -> list[str]:
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    argv = [sys.executable, "-m", "mcpx", "daemon", "--state-dir", str(tmp / "state")]
    return [*argv, "--config", str(config), "--port", "0", "--address", "127.0.0.1"]


@pytest.mark.parametrize("room", [0, 1 << 14], ids=["no room", "16 KiB"])
def test_a_daemon_started_on_a_full_state_disk_says_so_and_exits_7(
    tmpfs_state: Path, room: int
) -> None:
    # The state dir as a daemon left it, then the disk filled up (to ``room`` bytes).
    state = tmpfs_state / "state"
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmpfs_state, servers) as daemon, daemon.http() as api:
        assert _echo(api, "before") == "before"
    for name in ("questions.db", "tasks.db"):
        for part in ("", "-wal", "-shm"):
            (state / (name + part)).unlink(missing_ok=True)  # made afresh: they need room
    reserve = state / "reserve"
    reserve.write_bytes(b"\0" * room)
    _fill(state / "filler")
    reserve.unlink()
    started = subprocess.run(
        _daemon_argv(tmpfs_state, servers),
        cwd=tmpfs_state,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # The README's 7 (the state dir is full), one line saying so, nothing left behind
    # that would pass for a running daemon.
    assert started.returncode == 7, (started.returncode, started.stderr)
    assert "Traceback" not in started.stderr and "Logging error" not in started.stderr
    said = [line for line in started.stderr.splitlines() if _DISK in line]
    assert len(said) == 1 and str(state) in said[0], started.stderr
    assert not (state / "daemon.json").exists()
    assert not (state / "mcpx.sock").exists()


def test_the_cli_starting_a_daemon_on_a_full_disk_says_so_and_exits_7(tmpfs_state: Path) -> None:
    # The daemon's own words go to files in the full state dir: the CLI that started it
    # must say what happened itself, with the README's 7, not "exited with status 7".
    state = tmpfs_state / "state"
    home = tmpfs_state / "home"
    home.mkdir()
    (home / ".mcpx.json").write_text(json.dumps({"mcpServers": {}}))
    _fill(state / "filler")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env["MCPX_STATE_DIR"] = str(state)
    cli = subprocess.run(
        [sys.executable, "-m", "mcpx", "servers"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 7, (cli.returncode, cli.stderr)
    assert _DISK in cli.stderr and str(state) in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr
    assert not (state / "daemon.json").exists()


def test_an_upstream_first_started_while_the_disk_is_full_still_answers(
    tmpfs_state: Path,
) -> None:
    # Starting an upstream writes two caches (its era, its catalogue): best-effort, so a
    # full disk is a warning each, never the call's failure.
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "later": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    }
    with running_daemon(tmpfs_state, servers) as daemon, daemon.http() as api:
        assert _echo(api, "warm") == "warm"
        filler = daemon.state / "filler"
        _fill(filler)
        try:
            assert _echo(api, "first", server="later") == "first"
            listed = api.get("/v1/tools", params={"server": "later"})
            assert listed.status_code == 200, listed.text
            assert "echo" in {t["name"] for t in listed.json()["tools"]}, listed.text
        finally:
            filler.unlink()
        unwritten = wait_until(
            lambda: [
                line
                for line in daemon.log_lines()
                if "not written" in line["msg"] and line["level"] == "warning"
            ],
            message="a warning that a cache could not be written",
        )
        assert all("Traceback" not in line.get("exc", "") for line in unwritten)
        assert daemon.proc.poll() is None


NOISE = 300  # stderr lines the noisy upstream writes once told to, 500 bytes each
# The demo server, beside a shell that waits for the file named by $1, then writes NOISE
# lines to the stderr it shares with the server (the daemon logs each), then waits for
# "$1.more" and writes one line more.
_NOISY = (
    '(while [ ! -e "$1" ]; do sleep 0.05; done; i=0; while [ $i -lt 300 ]; do '
    'printf "noise %03d %0490d\\n" $i 0 >&2; i=$((i+1)); done; '
    'while [ ! -e "$1.more" ]; do sleep 0.05; done; echo "one more" >&2) & '
    'exec "$0" -m mcpx demo-server'
)


def _heard_all_noise(api: httpx.Client) -> None:
    """Until the daemon has taken in the last noise line: it publishes each upstream
    stderr line as an event as it logs it. The lines come in order, one event each, so
    the last one's seq follows from any one's; a slow reader's stream skips events, and
    says how far (``gap``)."""
    base: int | None = None  # the seq of "noise 000"
    with api.stream("GET", "/v1/events", params={"since": 0, "kind": "server.log"}) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line.removeprefix("data: "))
            said = str(event["data"].get("message", ""))
            if event["kind"] == "gap":
                reached = int(event["data"]["to"])
            elif said.startswith("noise "):
                reached = int(event["seq"])
                base = reached - int(said.split()[1])
            else:
                continue
            if base is not None and reached >= base + NOISE - 1:
                return
    raise AssertionError("the event stream ended before the last noise line")


def test_a_full_disk_under_the_daemon_log_loses_lines_not_the_daemon(tmpfs_state: Path) -> None:
    told = tmpfs_state / "noise"
    entry = {"command": "sh", "args": ["-c", _NOISY, sys.executable, str(told)]}
    with running_daemon(tmpfs_state, {"noisy": entry}) as daemon, daemon.http() as api:
        assert _echo(api, "warm", "noisy") == "warm"
        filler = daemon.state / "filler"
        _fill(filler)
        try:
            told.touch()  # the noise now: the log has no room for it
            _heard_all_noise(api)
            assert _echo(api, "full", "noisy") == "full"
            assert daemon.proc.poll() is None
        finally:
            filler.unlink()
        assert _echo(api, "room again", "noisy") == "room again"

        # The log is whole lines only (each parses); what it kept in memory is written
        # once lines fit again (the next one logged), in order, and a warning counts
        # the rest.
        def said() -> tuple[list[str], list[dict[str, Any]]]:
            lines = daemon.log_lines()
            noise = [x["msg"][:9] for x in lines if x["msg"].startswith("noise ")]
            return noise, [x for x in lines if "log lines were lost" in x["msg"]]

        (tmpfs_state / "noise.more").touch()  # a line logged with room again
        noise, [lost] = wait_until(lambda: said()[1] and said(), message="a count of lines lost")
        assert lost["level"] == "warning" and _DISK in lost["msg"], lost
        assert str(daemon.state) in lost["msg"], lost
        count = int(lost["msg"].split()[0])
        assert noise == [f"noise {i:03d}" for i in range(len(noise))], noise
        assert 0 < len(noise) < NOISE and len(noise) + count >= NOISE, (len(noise), count)
        assert daemon.proc.poll() is None


@pytest.mark.anyio
async def test_a_question_due_while_the_disk_is_full_expires_once_there_is_room(
    tmpfs_state: Path,
) -> None:
    state = tmpfs_state / "state"
    now = [1000.0]
    told: list[tuple[str, str, str]] = []
    broker = Broker(
        state / "questions.db",
        clock=lambda: now[0],
        on_change=lambda kind, q: told.append((kind, q.id, q.state)),
    )
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}

    def ask(message: str, ttl: float) -> str:
        params = {"message": message, "requestedSchema": schema}
        asked = broker.ask("s", "elicitation/create", params, identity=None, routing="r", ttl=ttl)
        return asked.id

    kept, due = ask("kept?", 3600), ask("due?", 10)
    filler = state / "filler"
    _fill(filler)
    try:
        now[0] += 11
        # Nothing that would expire it fails: the list leaves it out, its waiter gets the
        # cancel that expiry gives, an answer is refused (it expired).
        assert [q.id for q in broker.pending()] == [kept]
        with anyio.fail_after(10):
            assert await broker.wait(due) == {"action": "cancel"}
        with pytest.raises(QuestionClosed, match="expired"):
            broker.answer(due, {"answer": "late"})
        assert broker.expire() == 0  # its row cannot say so yet
        assert ("question.closed", due, "expired") not in told
    finally:
        filler.unlink()
    # Room again: the next expiry writes it, and tells of it once; nothing else changed.
    assert broker.expire() == 1
    found = broker.get(due)
    assert found is not None and (found.state, found.result) == ("expired", {"action": "cancel"})
    assert told.count(("question.closed", due, "expired")) == 1
    assert broker.answer(kept, {"answer": "k"}).state == "answered"
    broker.close()
