"""Issue 27: nothing an upstream started outlives the daemon. A stdio upstream leads its
own process group; a daemon that stops ends the group, and a daemon killed with ``-9``
leaves it on record (``<state>/upstream-groups``) for the next daemon to end at start,
but only a group proven to be the one recorded (``mcpx.transport._groups``).

The upstream is a shell (``tests/fixtures/tree_server.sh``) that starts a ``sleep``
ignoring SIGTERM, writes its pid to a file, and becomes the demo server: the ``sleep`` is
the grandchild that the kernel's parent-death signal does not reach.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpx.transport import reap_groups
from support.daemon import Daemon, running_daemon
from support.waiting import wait_until

TREE = Path(__file__).resolve().parents[1] / "fixtures" / "tree_server.sh"
WAIT = 60.0  # a loaded box
ENDED = "ending upstream process group"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")


def _gone(pid: int) -> bool:
    """Whether ``pid`` ended (a zombie waiting for its reaper counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _grandchild(daemon: Daemon) -> int:
    """Start the tree upstream (one call) and return its ``sleep``'s pid."""
    called = daemon.cli("call", "tree", "echo", "text=up")
    assert called.returncode == 0, called.stderr
    pid_file = daemon.home / "grandchild.pid"
    text = wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=WAIT)
    pid = int(text)
    assert not _gone(pid)
    return pid


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Daemon]:
    home = tmp_path / "home"
    entry = {"command": "sh", "args": [str(TREE), str(home / "grandchild.pid"), sys.executable]}
    with running_daemon(tmp_path, {"tree": entry}) as daemon:
        try:
            yield daemon
        finally:
            pid_file = home / "grandchild.pid"
            if pid_file.exists() and not _gone(int(pid_file.read_text())):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the test's own leftover


def test_a_killed_daemons_upstream_tree_is_ended_by_the_next_daemon(tree: Daemon) -> None:
    sleeper = _grandchild(tree)
    [record] = list((tree.state / "upstream-groups").iterdir())
    os.kill(tree.proc.pid, signal.SIGKILL)
    tree.proc.wait(timeout=WAIT)
    # The kernel ended the upstream itself (parent-death signal); its child lives on.
    assert not _gone(sleeper), "the grandchild went with the daemon; nothing to prove"
    try:
        # The next command starts a daemon, which ends the group before it serves.
        shown = tree.cli("servers")
        assert shown.returncode == 0, shown.stderr
        assert "mcpx: started the daemon" in shown.stderr, shown.stderr
        wait_until(lambda: _gone(sleeper), timeout=10, message=f"grandchild {sleeper} lives on")
        said = [line for line in tree.log_lines() if ENDED in line["msg"]]
        assert len(said) == 1 and f"group {record.name}," in said[0]["msg"], said
        assert "sleep" in said[0]["msg"], said
        assert not record.exists()
    finally:
        stopped = tree.cli("stop")
    assert stopped.returncode == 0, stopped


def test_stop_ends_an_upstreams_whole_tree(tree: Daemon) -> None:
    sleeper = _grandchild(tree)
    groups = tree.state / "upstream-groups"
    assert len(list(groups.iterdir())) == 1
    stopped = tree.cli("stop")
    assert stopped.returncode == 0, stopped
    # mcpx stop returns once the daemon is gone, and it ended its upstreams before that.
    assert _gone(sleeper), f"grandchild {sleeper} outlived mcpx stop"
    assert list(groups.iterdir()) == []  # ended normally: off the record


# -- which recorded groups are ended: only the recorded one --------------------------------


def _boot() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def _start_time(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def _record(directory: Path, pgid: int, start: int | None, mark: str) -> None:
    directory.mkdir(exist_ok=True)
    doc = {"pgid": pgid, "start": start, "boot": _boot(), "mark": mark}
    (directory / str(pgid)).write_text(json.dumps(doc))


@pytest.fixture
def strays() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT)


def _leaderless_group(mark: str | None) -> int:
    """A process group whose leader exited, leaving a ``sleep``: its pid (the group's
    id is the leader's); ``mark`` in its environment, if given."""
    env = {**os.environ, **({"MCPX_UPSTREAM_GROUP": mark} if mark else {})}
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    out, _ = shell.communicate(timeout=WAIT)
    sleeper = int(out)
    assert os.getpgid(sleeper) == shell.pid
    return sleeper


def test_only_the_recorded_group_is_ended(
    tmp_path: Path, strays: list[subprocess.Popen[bytes]]
) -> None:
    records = tmp_path / "upstream-groups"
    # A live leader whose start time is not the recorded one: its pid was reused.
    stranger = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    strays.append(stranger)
    _record(records, stranger.pid, _start_time(stranger.pid) + 1, "m1")
    # A group whose leader is gone, its members without the recorded mark.
    unmarked = _leaderless_group(None)
    _record(records, os.getpgid(unmarked), None, "m2")
    # The same with the mark: the one group that is ended.
    marked = _leaderless_group("m3")
    _record(records, os.getpgid(marked), None, "m3")
    # The stranger recorded rightly, but in another boot; and a record half written.
    doc = {"pgid": stranger.pid, "start": _start_time(stranger.pid), "boot": "x", "mark": "m"}
    (records / "another-boot").write_text(json.dumps(doc))
    (records / "7").write_text('{"pgid": 7, "sta')

    try:
        assert reap_groups(records) == 1
        assert _gone(marked)
        assert not _gone(stranger.pid) and not _gone(unmarked)
        assert list(records.iterdir()) == []  # every record read is cleared
    finally:
        for pid in (unmarked, marked):
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
