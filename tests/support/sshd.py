"""A real OpenSSH server for tests: the "remote machine" is this one, over loopback.

``running_sshd(tmp, servers)`` starts ``/usr/sbin/sshd -D -e`` on a free 127.0.0.1 port
with a throwaway host key and an authorized key made for the run, and writes an ssh
*client* config naming it ``mcpx-test-box``. ``ssh -F <config> mcpx-test-box mcpx ...``
then runs this same checkout's mcpx as the remote one, with its own state dir and config
(``MCPX_STATE_DIR``/``MCPX_CONFIG`` set by sshd's ``SetEnv`` for every session), so a
remote daemon started by a session is independent of any local one.

Nothing outlives the block: sshd and every connection it serves are ended by pid
(``Sshd.stop``), then the remote daemon a session may have started (by the pid in its
``daemon.json``). Frames that remote daemon sent are checked against their revision's
schema, as ``running_daemon`` does. ``scripts/peers.sh`` installs openssh-server; a
missing sshd is an error naming it, never a skip.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from .peers import PROJECT, free_port, listen_addresses
from .processes import proc_stat, process_gone
from .schemas import frame_errors
from .waiting import WaitTimedOut, wait_until

SSHD = Path("/usr/sbin/sshd")
HOST_ALIAS = "mcpx-test-box"
# sshd's privilege separation directory (Debian's path); it must exist to start as root.
PRIVSEP_DIR = Path("/run/sshd")
_UNJUDGED = "2025-11-25"  # as tests/support/daemon.py: a frame sent before any revision
_BIND_TRIES = 5  # a free port can be taken between picking it and sshd binding it


class SshdMissing(RuntimeError):
    """OpenSSH's server is not installed: run scripts/peers.sh."""


@dataclass(frozen=True)
class Sshd:
    port: int
    host_alias: str
    config: Path  # the ssh *client* config: Host mcpx-test-box
    remote_state: Path  # MCPX_STATE_DIR of every session
    remote_config: Path  # MCPX_CONFIG of every session
    pid: int

    def ssh_command(self) -> list[str]:
        """``ssh`` to the box; append the remote command."""
        return ["ssh", "-F", str(self.config), self.host_alias]

    def stop(self) -> None:
        """End sshd and every connection it serves (each by its pid): every ssh client
        sees its connection drop, every session's command its stdin close."""
        sessions = _children(self.pid)  # before the listener goes: then they are orphans
        _terminate(self.pid)
        for pid in sessions:
            _terminate(pid)
        for pid in (self.pid, *sessions):
            _wait_gone(pid, f"sshd process {pid}")

    # --- the remote mcpx -------------------------------------------------------------

    def remote_info(self) -> dict[str, Any] | None:
        """The remote daemon's daemon.json, or None before one has started."""
        try:
            info: dict[str, Any] = json.loads((self.remote_state / "daemon.json").read_text())
        except (OSError, ValueError):
            return None
        return info

    def remote_http(self) -> httpx.Client:
        """A client of the remote daemon's /v1 API, over its unix socket."""
        info = self.remote_info()
        if info is None:
            raise AssertionError(
                f"no remote daemon has started (no {self.remote_state}/daemon.json)"
            )
        transport = httpx.HTTPTransport(uds=info["socket"])
        return httpx.Client(transport=transport, base_url="http://mcpx", timeout=120)

    @property
    def frames_path(self) -> Path:
        return self.remote_state.parent / "frames.jsonl"

    def frame_problems(self) -> list[str]:
        """How each frame the remote daemon sent a host fails its revision's schema."""
        if not self.frames_path.exists():
            return []
        text = self.frames_path.read_text(encoding="utf-8")
        out = []
        for i, raw in enumerate(line for line in text.split("\n") if line.strip()):
            line = json.loads(raw)
            rev = line["rev"] or _UNJUDGED
            for p in frame_errors(line["frame"], rev, sender="server", answering=line["answering"]):
                out.append(f"frame {i} ({rev}, answering {line['answering']}): {p}\n  {line}")
        return out

    def stop_remote_daemon(self) -> None:
        """SIGTERM the remote daemon (if one runs) by its pid, and wait for it to go."""
        info = self.remote_info()
        pid = int(info["pid"]) if info and info.get("pid") else 0
        if pid <= 0 or process_gone(pid):
            return
        _terminate(pid)
        try:
            _wait_gone(pid, "the remote daemon", timeout=30)
        except WaitTimedOut:
            # It was started in a session of its own: its group is its pid, and holds its
            # upstreams too.
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _wait_gone(pid, "the remote daemon (killed)")


# --- processes, by pid -------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields is not None and fields[1] == str(pid):
                found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` now (bounded: a process tree is finite, /proc is read
    once per level)."""
    found: list[int] = []
    level = [pid]
    while level:
        level = [child for parent in level for child in _children(parent)]
        found += level
    return found


def _terminate(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


def _wait_gone(pid: int, what: str, timeout: float = 30) -> None:
    wait_until(lambda: process_gone(pid), timeout=timeout, message=f"{what} exiting")


# --- set-up ------------------------------------------------------------------------------


def _keygen(path: Path, comment: str) -> str:
    """A new ed25519 key pair without a passphrase; the public key line."""
    argv = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)]
    subprocess.run(argv, check=True, capture_output=True, timeout=30)
    return path.with_suffix(".pub").read_text().strip()


def _sshd_config(box: Path, port: int, remote_state: Path, remote_config: Path) -> str:
    path = f"{PROJECT / '.venv' / 'bin'}:/usr/bin:/bin"
    lines = [
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {box / 'host_key'}",
        f"PidFile {box / 'sshd.pid'}",
        f"AuthorizedKeysFile {box / 'authorized_keys'}",
        "StrictModes no",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PrintMotd no",
        "PrintLastLog no",
        "Banner none",
        "Subsystem sftp internal-sftp",
        f"SetEnv PATH={path} MCPX_STATE_DIR={remote_state} MCPX_CONFIG={remote_config}",
    ]
    return "\n".join(lines) + "\n"


def _client_config(box: Path, port: int) -> str:
    user = pwd.getpwuid(os.getuid()).pw_name
    lines = [
        f"Host {HOST_ALIAS}",
        "  HostName 127.0.0.1",
        f"  Port {port}",
        f"  User {user}",
        f"  IdentityFile {box / 'id_ed25519'}",
        f"  UserKnownHostsFile {box / 'known_hosts'}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  IdentitiesOnly yes",
        "  LogLevel ERROR",
    ]
    return "\n".join(lines) + "\n"


def _check_installed() -> None:
    if not SSHD.is_file():
        raise SshdMissing(
            f"OpenSSH's server is not installed (no {SSHD}): run scripts/peers.sh from "
            f"{PROJECT} (it installs Debian's openssh-server)"
        )
    if not PRIVSEP_DIR.is_dir() and os.geteuid() == 0:
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)


def _listening_or_exited(proc: subprocess.Popen[bytes], port: int) -> bool:
    return proc.poll() is not None or "127.0.0.1" in listen_addresses(port)


def _start(
    box: Path, remote_state: Path, remote_config: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """sshd listening on a free loopback port (a few ports tried if one is taken)."""
    log = box / "sshd.log"
    for _ in range(_BIND_TRIES):
        port = free_port()
        cfg = box / "sshd_config"
        cfg.write_text(_sshd_config(box, port, remote_state, remote_config))
        with open(log, "ab") as err:
            argv = [str(SSHD), "-D", "-e", "-f", str(cfg)]
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err)

        said = f"sshd listening on 127.0.0.1:{port} (its log: {log})"
        wait_until(partial(_listening_or_exited, proc, port), timeout=30, message=said)
        if proc.poll() is None:
            return proc, port
    raise RuntimeError(f"sshd did not start in {_BIND_TRIES} tries; its log:\n{log.read_text()}")


@contextmanager
def running_sshd(
    tmp: Path, servers: Mapping[str, Any], settings: Mapping[str, Any] | None = None
) -> Iterator[Sshd]:
    """An sshd on loopback whose sessions run this checkout's mcpx against a "remote"
    state dir and config holding ``servers`` and ``settings``; everything ended on exit."""
    _check_installed()
    box = tmp / "ssh"
    box.mkdir(mode=0o700)
    remote = tmp / "remote"
    remote.mkdir()
    remote_state = remote / "state"
    remote_config = remote / "mcpx.json"
    traced = {"log.frames": str(remote / "frames.jsonl"), **(settings or {})}
    remote_config.write_text(json.dumps({"mcpServers": dict(servers), "settings": traced}))
    host_key = _keygen(box / "host_key", "mcpx-test-host")
    (box / "authorized_keys").write_text(_keygen(box / "id_ed25519", "mcpx-test-run") + "\n")
    proc, port = _start(box, remote_state, remote_config)
    (box / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n")
    config = box / "config"
    config.write_text(_client_config(box, port))
    sshd = Sshd(port, HOST_ALIAS, config, remote_state, remote_config, proc.pid)
    try:
        yield sshd
        problems = sshd.frame_problems()
        assert not problems, "frames the remote daemon sent are invalid:\n" + "\n".join(
            problems[:20]
        )
    finally:
        # Sessions' commands (shims) and what they started go with their connection or
        # the remote daemon; any left after both is ended here, by pid.
        under = _descendants(proc.pid)
        sshd.stop()
        proc.wait(timeout=10)  # reaped: it is our child
        sshd.stop_remote_daemon()
        try:
            wait_until(lambda: all(map(process_gone, under)), timeout=30, message="sessions ending")
        except WaitTimedOut:
            for pid in under:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            raise
