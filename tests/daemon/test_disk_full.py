"""Issue 27: the state dir's disk fills. Writes to the question broker and the task store
fail with a clear error and one clear log line; plain calls still answer; nothing stored
before is harmed; writes work again once there is room.

A real daemon whose state dir is a small tmpfs (mounted here; root only), with the demo
server and the official SDK's fixture server (1.23.3: ``ask`` elicits a string ``answer``).
"""

from __future__ import annotations

import errno
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

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


def _echo(api: httpx.Client, text: str) -> str:
    body = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
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
