"""An OpenSSH master of the user's own, already up, is used by ``ssh://``: no second login.

A real sshd on loopback (``support.sshd``). The user's master is started here as a user
starts one (``ssh -M -S CTL -N box``) and ``daemon.sshCommand`` names it (``ssh -F cfg
-S CTL``). Commands through ``ssh://`` then ride it: sshd logs no login for them, and
when each ends the master is left as it was: still up, holding no forwarding of theirs.

Before this was handled, mcpx's own master (``ControlMaster=yes``) found the control
socket taken, logged in as a plain connection and was waited for 30 s, then the command
failed saying ssh did not log in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from support.sshd import Sshd, running_sshd
from support.waiting import wait_until

DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
WAIT: Final = 60.0


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    (tmp_path / "box").mkdir()
    with running_sshd(tmp_path / "box", {"demo": DEMO}) as box:
        yield box


@pytest.fixture
def user_master(sshd: Sshd, tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """The user's own master for the box, up; ended by its pid after the test."""
    control = tmp_path / "cm"
    argv = [*sshd.ssh_command()[:-1], "-M", "-S", str(control), "-N", sshd.host_alias]
    master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(
            lambda: control.exists() or master.poll() is not None,
            timeout=WAIT,
            message="the user's master logging in",
        )
        assert master.poll() is None, master.communicate(timeout=WAIT)[1]
        yield control, master
    finally:
        master.terminate()
        master.communicate(timeout=WAIT)


def logins(box: Sshd) -> int:
    """How many logins sshd has accepted so far (its log, ``-e`` at INFO)."""
    log = box.config.parent / "sshd.log"
    return log.read_text(errors="replace").count("Accepted publickey")


def forwarded_sockets(pid: int) -> list[str]:
    """The unix sockets ``pid`` listens on whose path is a forwarding of mcpx's."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].endswith("/daemon.sock"):
            found.append(fields[7])
    return found


def test_commands_ride_the_users_own_master(
    sshd: Sshd, tmp_path: Path, user_master: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    control, master = user_master
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {
        "MCPX_STATE_DIR": str(tmp_path / "client-state"),
        "MCPX_DAEMON_ENDPOINT": f"ssh://{sshd.host_alias}",
        "MCPX_DAEMON_SSH_COMMAND": f"ssh -F {sshd.config} -S {control}",
    }
    before = logins(sshd)
    for text in ("first", "second"):
        called = subprocess.run(
            [sys.executable, "-m", "mcpx", "call", "demo", "echo", f"text={text}"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert called.returncode == 0, called.stderr
        assert called.stdout.strip() == text, called.stdout
        # The master is left as it was: up, and without the command's forwarding (the
        # master closes it on the cancel, which it may acknowledge a moment before).
        assert master.poll() is None
        wait_until(
            lambda: forwarded_sockets(master.pid) == [],
            timeout=WAIT,
            message=lambda: f"the master still forwards {forwarded_sockets(master.pid)}",
        )
    assert logins(sshd) == before, "a command logged in again beside the user's master"
    assert not (tmp_path / "client-state" / "daemon.json").exists(), "a local daemon started"
