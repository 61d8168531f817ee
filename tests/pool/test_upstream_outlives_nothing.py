"""Issue 27: an upstream never outlives its daemon, even one that hangs, even when the
daemon is killed with SIGKILL and so runs nothing more to stop it.

End to end: a real daemon (its own process) starts a real upstream that hangs
(tests/fixtures/hung_server.py: reads nothing, answers nothing, ignores SIGTERM); the
daemon is killed with SIGKILL while it waits for that upstream to start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from contextlib import suppress
from pathlib import Path

from support.daemon import running_daemon
from support.waiting import wait_until

HUNG = Path(__file__).parents[1] / "fixtures" / "hung_server.py"


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first, then ppid)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def gone(pid: int) -> bool:
    """The process no longer exists (a zombie nobody reaps counts as gone)."""
    try:
        return _stat_fields(pid)[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def hung_child_of(parent: int) -> int | None:
    """The pid of ``parent``'s child running hung_server.py, once it runs it."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int(_stat_fields(int(entry.name))[1]) != parent:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
        if os.fsencode(HUNG) in argv:  # exec'd: no longer the daemon's copy
            return int(entry.name)
    return None


def _outlived(pid: int) -> str:
    try:
        state, ppid = _stat_fields(pid)[:2]
    except (FileNotFoundError, ProcessLookupError):
        return f"upstream {pid} ending with its killed daemon (it just did)"
    return f"upstream {pid} ending with its killed daemon (state {state}, parent now {ppid})"


def test_a_hung_upstream_dies_with_a_killed_daemon(tmp_path: Path) -> None:
    servers = {"hung": {"command": sys.executable, "args": [str(HUNG)]}}
    upstream: int | None = None
    with running_daemon(tmp_path, servers) as daemon:
        try:
            # A call starts the upstream; it never answers, so neither does the call: sent
            # by hand over the daemon's socket, and left waiting.
            body = json.dumps({"server": "hung", "tool": "anything", "arguments": {}})
            head = (
                "POST /v1/call HTTP/1.1\r\nHost: mcpx\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(daemon.info["socket"])
                sock.sendall((head + body).encode())
                pid = wait_until(
                    lambda: hung_child_of(daemon.proc.pid),
                    timeout=60,
                    message="the daemon starting the hung upstream",
                )
                upstream = pid
                os.kill(daemon.proc.pid, signal.SIGKILL)
                assert daemon.proc.wait(timeout=10) == -signal.SIGKILL
            wait_until(lambda: gone(pid), timeout=10, message=lambda: _outlived(pid))
        finally:
            # Only if it outlived the daemon (the defect): it is its own group's leader.
            if upstream is not None and not gone(upstream):
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(upstream, signal.SIGKILL)
