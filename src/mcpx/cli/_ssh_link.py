"""``ssh://[user@]host[:port]``: the remote host's own daemon, through one ssh connection.

For the life of one command mcpx runs one OpenSSH master (``-N``, ``ControlMaster=yes``,
its control socket in a private 0700 directory of its own) and everything else rides on
it as a multiplexed session, so the key exchange and login happen once:

1. ``mcpx bridge --print-socket`` on the host: the remote daemon running (started there
   if needed: that is the host's own daemon) and its facts as one JSON line: socket,
   pid, version. A host without mcpx, or with an mcpx too old to have ``bridge``, is
   said here.
2. ``-O forward -L <private dir>/daemon.sock:<remote socket>``: OpenSSH's unix-socket
   forwarding. Each HTTP request is then a new channel on the open connection, costing
   no process on either side: this is how requests go, because a command makes several
   (a call asks for the tool's schema first, ``elicit answer`` reads then posts).
3. Only if the host refuses that forwarding (``AllowStreamLocalForwarding no``) each
   request runs ``mcpx bridge`` there instead, a stdio byte bridge to the daemon's
   socket: one remote process per request, slower, but needing nothing of sshd.

Step 1 starts a Python on the host (~0.3 s). So the host's state dir it names is
remembered here (``remembered``, per endpoint and ssh command), and the next command
reads the ``daemon.json`` there with ``cat`` instead, forwarding the socket it names
and asking ``/health`` through it. Anything short of that answering (no such file, a
daemon gone, another socket) falls back to step 1, which starts the daemon if needed.

A master of the user's own (``ControlMaster`` with a ``ControlPath`` in their ssh config,
or ``-S`` in ``daemon.sshCommand``) that already answers for the host is used instead:
no login at all. Nothing is started then, and the forwarding added to it is cancelled
when the command ends, so the user's master is left as it was.

Invariants:

- ``BatchMode=yes`` whenever stdin is not a terminal: no password or host-key prompt
  is left waiting for nobody.
- Every failure to get there is ``Unreachable`` (exit 5) naming the endpoint and why:
  unknown host, refused key, refused connection, no mcpx on the host.
- ``close`` ends the master by its pid (its sessions and forwarding end with it) and
  removes the private directory; it is run when the command ends.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import click

from mcpx import __version__

from ._endpoint import Endpoint, Unreachable
from ._http import UnixConnection

__all__ = ["SshLink", "remote_command", "ssh_reason"]

_CONNECT_WAIT: Final = 30.0  # seconds for ssh to log in (its own ConnectTimeout aside)
_REMOTE_WAIT: Final = 180.0  # seconds for the remote mcpx to bring its daemon up
_NO_COMMAND: Final = ("command not found", "No such file or directory", "not found")

# What ssh says, and what it means for the person reading it.
_REASONS: Final = (
    ("Could not resolve hostname", "unknown host"),
    ("Name or service not known", "unknown host"),
    ("Permission denied", "the key was refused"),
    ("Connection refused", "connection refused"),
    ("Host key verification failed", "the host key is not known or changed"),
    ("Connection timed out", "connection timed out"),
    ("No route to host", "no route to host"),
)


def ssh_reason(said: str) -> str:
    """Why ssh failed, in a few words, with the line it said."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    last = lines[-1] if lines else "nothing"
    for needle, reason in _REASONS:
        if needle in said:
            return f"{reason} (ssh said: {last})"
    return f"ssh failed (it said: {last})"


def remote_command(endpoint: Endpoint) -> list[str]:
    """ssh's arguments naming the host: port and user first, then the host."""
    argv: list[str] = []
    if endpoint.port is not None:
        argv += ["-p", str(endpoint.port)]
    if endpoint.user is not None:
        argv += ["-l", endpoint.user]
    return [*argv, endpoint.host]


class SshLink:
    """The host's daemon through one ssh master; ``open`` before use, ``close`` after."""

    def __init__(self, endpoint: Endpoint, ssh: list[str], remembered: Path | None = None) -> None:
        self.endpoint = endpoint
        self._ssh = ssh
        self._remembered = remembered  # where the host's state dir is remembered
        self._dir = Path(tempfile.mkdtemp(prefix="mcpx-ssh-"))
        self._control = self._dir / "cm"
        self._local = self._dir / "daemon.sock"
        self._master: subprocess.Popen[bytes] | None = None
        self._facts: dict[str, Any] = {}
        self._forwarded = False
        self._shared = False  # riding a master of the user's own, not ours
        self._added = False  # a forwarding was added to the master

    def _argv(self, *extra: str) -> list[str]:
        # ssh takes the first ControlPath it is given: ours would lose to a -S in the
        # user's command, so a shared master is reached by theirs alone.
        options = [] if self._shared else ["-o", f"ControlPath={self._control}"]
        if not sys.stdin.isatty():
            options += ["-o", "BatchMode=yes"]
        return [*self._ssh, *options, *extra]

    def session(self, *command: str) -> list[str]:
        """ssh running ``command`` on the host, over the master."""
        target = remote_command(self.endpoint)
        return self._argv("-o", "ControlMaster=no", *target, *command)

    def open(self) -> None:
        """Log in, learn the daemon's socket, forward it.

        Raises:
            Unreachable: ssh could not log in, or the host has no (usable) mcpx.
        """
        self.open_master()
        known = self._known_facts()
        if known is not None:
            self._facts = known
            if self._forward():
                self._forwarded = True
                return
            if self._added:
                self._forwarding("cancel")
                self._added = False
        self._facts = self._remote_facts()
        self._remember(str(self._facts.get("state") or ""))
        self._forwarded = self._forward()

    # -- the host's state dir, remembered --------------------------------------------------

    def _memory_key(self) -> str:
        return shlex.join([*self._ssh, self.endpoint.text])

    def _memory(self) -> dict[str, str]:
        if self._remembered is None:
            return {}
        try:
            memory = json.loads(self._remembered.read_text())
        except (OSError, ValueError):
            return {}
        return memory if isinstance(memory, dict) else {}

    def _remember(self, state: str) -> None:
        """Keep ``state`` (the host's state dir) for the next command; best effort."""
        if self._remembered is None or not state:
            return
        memory = self._memory()
        if memory.get(self._memory_key()) == state:
            return
        memory[self._memory_key()] = state
        fresh = self._remembered.with_name(f".{self._remembered.name}.{os.getpid()}")
        with contextlib.suppress(OSError):
            self._remembered.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(memory, out)
            os.replace(fresh, self._remembered)

    def _known_facts(self) -> dict[str, Any] | None:
        """The daemon's facts from the ``daemon.json`` in the remembered state dir, read
        with ``cat`` (no Python started there); None when there is nothing to go on."""
        state = self._memory().get(self._memory_key())
        if not isinstance(state, str) or not state:
            return None
        try:
            done = subprocess.run(
                self.session("cat", shlex.quote(f"{state}/daemon.json")),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_CONNECT_WAIT,
            )
            facts = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
        if not isinstance(facts, dict) or not isinstance(facts.get("socket"), str):
            return None
        facts = {k: facts[k] for k in ("socket", "pid", "version") if k in facts}
        return {**facts, "state": state}

    def _fail(self, why: str) -> Unreachable:
        return Unreachable(f"cannot reach the daemon at {self.endpoint.text}: {why}")

    def open_master(self) -> None:
        """Log in only: the master up, nothing run on the host yet (or the user's own
        master, already up, adopted).

        Raises:
            Unreachable: ssh could not run or log in.
        """
        if self._user_master():
            self._shared = True
            return
        said = self._dir / "ssh.stderr"
        master = ["-N", "-o", "ControlMaster=yes", "-o", "ControlPersist=no"]
        argv = self._argv(*master, *remote_command(self.endpoint))
        with open(said, "wb") as err:
            try:
                self._master = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
                )
            except OSError as exc:
                raise self._fail(f"cannot run {argv[0]!r} ({exc}); see daemon.sshCommand") from None
        deadline = time.monotonic() + _CONNECT_WAIT
        # The control socket appears once ssh has logged in; until then, or its exit, wait.
        while not self._control.exists():
            if self._master.poll() is not None:
                raise self._fail(ssh_reason(said.read_text(errors="replace")))
            if time.monotonic() > deadline:
                raise self._fail(f"ssh did not log in within {_CONNECT_WAIT:.0f}s")
            time.sleep(0.02)

    def _user_master(self) -> bool:
        """Whether the user's ssh command and config reach a master already up for the
        host (``-O check``: it logs in nowhere and fails at once when there is none)."""
        check = [*self._ssh, "-o", "BatchMode=yes", "-O", "check", *remote_command(self.endpoint)]
        try:
            done = subprocess.run(
                check, stdin=subprocess.DEVNULL, capture_output=True, timeout=_CONNECT_WAIT
            )
        except (OSError, subprocess.TimeoutExpired):
            return False  # not runnable: open_master says so, starting its own
        return done.returncode == 0

    def _remote_facts(self) -> dict[str, Any]:
        argv = self.session("mcpx", "bridge", "--print-socket")
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_REMOTE_WAIT
            )
        except subprocess.TimeoutExpired:
            raise self._fail(f"the remote mcpx did not answer within {_REMOTE_WAIT:.0f}s") from None
        err = done.stderr.decode(errors="replace")
        if done.returncode == 127 or (done.returncode and any(n in err for n in _NO_COMMAND)):
            raise self._fail(
                f"no mcpx on {self.endpoint.host}'s PATH (it said: {err.strip()}); install "
                "mcpx there, on the PATH of a non-interactive ssh session"
            )
        if done.returncode == 2 and "bridge" in err:
            raise self._fail(
                f"the mcpx on {self.endpoint.host} has no `mcpx bridge`: it is older than "
                f"this one ({__version__}); upgrade it there"
            )
        if done.returncode != 0:
            raise self._fail(f"the remote mcpx failed (status {done.returncode}): {err.strip()}")
        if err.strip():
            click.echo(err.rstrip(), err=True)  # the remote daemon's start, said there
        try:
            facts: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
            str(facts["socket"])
        except (ValueError, IndexError, KeyError, TypeError):
            raise self._fail(f"the remote mcpx said no socket: {done.stdout[:200]!r}") from None
        return facts

    def _forwarding(self, verb: str) -> subprocess.CompletedProcess[bytes]:
        """``-O forward`` (or ``cancel``) of the daemon's socket to the private one."""
        remote = str(self._facts["socket"])
        argv = self._argv("-O", verb, "-L", f"{self._local}:{remote}")
        return subprocess.run(
            [*argv, *remote_command(self.endpoint)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_CONNECT_WAIT,
        )

    def _forward(self) -> bool:
        done = self._forwarding("forward")
        self._added = done.returncode == 0
        if done.returncode != 0 or not self._local.exists():
            return False
        # sshd may refuse each channel (AllowStreamLocalForwarding no) though the local
        # socket is bound: one request through it tells.
        probe = UnixConnection(str(self._local), _CONNECT_WAIT)
        try:
            probe.request("GET", "/health")
            return probe.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            probe.close()

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._forwarded:
            return UnixConnection(str(self._local), timeout)
        return _BridgeConnection(self.session("mcpx", "bridge"), timeout)

    def headers(self) -> dict[str, str]:
        return {}

    def facts(self) -> dict[str, Any]:
        return dict(self._facts)

    def run(self, *command: str) -> subprocess.CompletedProcess[bytes]:
        """``command`` on the host over the master, its output captured."""
        return subprocess.run(
            self.session(*command), stdin=subprocess.DEVNULL, capture_output=True, check=False
        )

    def close(self) -> None:
        if self._shared and self._added:
            # The user's master outlives this command: take back what was added to it.
            self._added = self._forwarded = False
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self._forwarding("cancel")
        master, self._master = self._master, None
        if master is not None and master.poll() is None:
            master.terminate()
            try:
                master.wait(timeout=10)
            except subprocess.TimeoutExpired:
                master.kill()
                master.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)


class _BridgeConnection(http.client.HTTPConnection):
    """One HTTP connection carried by ``mcpx bridge`` on the host (ssh's stdio)."""

    def __init__(self, argv: list[str], timeout: float | None) -> None:
        super().__init__("mcpx", timeout=timeout)
        self._bridge_argv = argv
        self._proc: subprocess.Popen[bytes] | None = None

    def connect(self) -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            self._proc = subprocess.Popen(
                self._bridge_argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=subprocess.DEVNULL,
            )
        ours.settimeout(self.timeout)
        self.sock = ours

    def close(self) -> None:
        super().close()
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
