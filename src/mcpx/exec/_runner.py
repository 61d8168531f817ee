"""One script run: a child Python process, sandboxed where asked, bounded by its limits.

``run_script`` writes the script, the generated package and the bootstrap into a fresh
private run dir, opens the run's socket (``open_relay``), starts the child and waits for
it, reading its output as it comes (capped), until it exits, a limit stops it, or the
caller's scope is cancelled.

Invariants:
- However the run ends (exit, timeout, output flood, cancellation) every process the script
  started is killed, the relay is closed and the run dir removed, in a shielded cleanup.
- The outcome names the limit that ended the run, if one did, and stderr ends with a line
  saying so (``limit_message``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from subprocess import DEVNULL, PIPE
from typing import Any, Final, Literal

import anyio
from anyio.abc import ByteReceiveStream, Process

from ._reaping import CappedOutput, kill_group, kill_tree
from ._relay import open_relay
from ._sandbox import (
    BOOTSTRAP_INSIDE,
    PACKAGE_DIR,
    RUN_DIR_INSIDE,
    SOCKET_NAME,
    bwrap_path,
    sandboxed_argv,
    script_env,
)

Limit = Literal["timeout", "memory", "cpu", "processes", "output"]
# Past this much dropped output a script is stopped: nobody will read what it prints.
DRAIN_LIMIT: Final = 256 * 1024 * 1024
# Once the script exited, how long output still in its pipes is waited for (a background
# process of its own may hold them open).
_DRAIN_GRACE: Final = 2.0
_BOOTSTRAP: Final = Path(__file__).with_name("_bootstrap.py")
# Run by root, a sandboxed script runs as a uid of its own from this range (never root:
# RLIMIT_NPROC does not bind root).
_UID_BASE: Final = 0x60000000
_UID_SPAN: Final = 1 << 24


class SandboxUnavailable(RuntimeError):
    """``sandbox="bwrap"`` was asked for and bubblewrap is not installed."""


@dataclass(frozen=True)
class ExecLimits:
    timeout: float  # whole run, seconds (kills the process tree)
    max_output: int  # bytes of stdout kept, as many of stderr; beyond: cut, with a marker line
    memory: int  # bytes, RLIMIT_AS
    cpu: int  # seconds, RLIMIT_CPU
    processes: int  # RLIMIT_NPROC

    def __post_init__(self) -> None:
        for name in ("timeout", "max_output", "memory", "cpu", "processes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ExecLimits.{name} must be positive, not {getattr(self, name)!r}")


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int
    stdout: str
    stderr: str
    result: Any  # main()'s return value (JSON-decoded) when returned
    returned: bool  # whether main() returned a value (result.json written)
    duration_ms: int
    limit: Limit | None  # which limit ended the run
    truncated: bool


def limit_message(limit: Limit, limits: ExecLimits) -> str:
    """What a person is told when ``limit`` ended a run."""
    said = {
        "timeout": f"it ran past exec.timeout ({limits.timeout:g}s)",
        "memory": f"it ran out of memory (exec.memory, {limits.memory} bytes)",
        "cpu": f"it used more CPU time than exec.cpu allows ({limits.cpu}s)",
        "processes": f"it tried to run more than exec.processes ({limits.processes}) processes",
        "output": f"it printed more than {DRAIN_LIMIT} bytes past exec.maxOutput",
    }
    return f"the script was stopped: {said[limit]}"


@dataclass
class _Run:
    """What one run leaves behind while it goes."""

    limits: ExecLimits
    stdout: CappedOutput
    stderr: CappedOutput
    stopped: Limit | None = None


def _write_package(root: Path, package: Mapping[str, str]) -> None:
    for relpath, text in package.items():
        rel = PurePosixPath(relpath)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"a package file must be a relative path inside it, not {relpath!r}")
        target = root.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _chown_tree(root: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, uid, uid)
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _argv(
    run_dir: Path, sandbox: str, settings: dict[str, Any], argv: Sequence[str], run_id: str
) -> tuple[list[str], dict[str, str]]:
    """The child's argv and the environment it is started with."""
    inside = RUN_DIR_INSIDE if sandbox == "bwrap" else str(run_dir)
    boot = BOOTSTRAP_INSIDE if sandbox == "bwrap" else str(_BOOTSTRAP)
    command = [sys.executable, "-I", "-u", "-B", boot, json.dumps(settings)]
    command += [f"{inside}/script.py", *argv]
    if sandbox != "bwrap":
        return command, script_env(run_dir=inside, run_id=run_id, home=str(run_dir))
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed, so scripts cannot be sandboxed: install it "
            "(Debian/Ubuntu: apt-get install bubblewrap) or set exec.sandbox to none"
        )
    env = script_env(run_dir=inside, run_id=run_id, home="/tmp")
    tmp_bytes = settings["memory"]  # /tmp is memory: no larger than the script's own
    full = sandboxed_argv(
        bwrap,
        command,
        run_dir=run_dir,
        bootstrap=_BOOTSTRAP,
        env=env,
        tmp_bytes=tmp_bytes,
        as_root=os.geteuid() == 0,
    )
    return full, {"PATH": env["PATH"], "LANG": env["LANG"]}


async def _pump(stream: ByteReceiveStream | None, sink: CappedOutput, done: anyio.Event) -> None:
    try:
        if stream is not None:
            async for chunk in stream:
                sink.add(chunk)
    finally:
        done.set()


async def _wait(proc: Process, run: _Run, stop: anyio.CancelScope) -> None:
    """Wait for the child to exit while its output is read; ``stop`` (the run's deadline,
    cancelled early by an output flood) kills it."""
    ends = (anyio.Event(), anyio.Event())
    async with anyio.create_task_group() as readers:
        readers.start_soon(_pump, proc.stdout, run.stdout, ends[0])
        readers.start_soon(_pump, proc.stderr, run.stderr, ends[1])
        with stop:
            await proc.wait()
        if stop.cancelled_caught:
            run.stopped = run.stopped or "timeout"
            kill_tree(proc.pid)  # not reaped yet: its pid is still its own
            await proc.wait()
        else:
            kill_group(proc.pid)  # what it left behind in its group (bubblewrap: nothing)
        with anyio.move_on_after(_DRAIN_GRACE):
            for end in ends:
                await end.wait()
        readers.cancel_scope.cancel()


def _exit_limit(run_dir: Path, exit_code: int) -> Limit | None:
    """The limit the child's exit shows it hit: named by the bootstrap, or by its signal."""
    try:
        named = (run_dir / "limit").read_text().split()
    except OSError:
        named = []
    if "memory" in named:
        return "memory"
    if "processes" in named:
        return "processes"
    if exit_code == 128 + signal.SIGXCPU:
        return "cpu"
    return None


def _returned(run_dir: Path) -> tuple[bool, Any]:
    try:
        return True, json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None


def _outcome(run: _Run, run_dir: Path, returncode: int, started: float) -> RunOutcome:
    # Killed by a signal: told as a shell (and bubblewrap) tells it, 128 + the signal.
    exit_code = 128 - returncode if returncode < 0 else returncode
    limit = run.stopped or _exit_limit(run_dir, exit_code)
    returned, result = _returned(run_dir)
    stderr = run.stderr.text("stderr")
    if limit is not None:
        stderr += f"mcpx: {limit_message(limit, run.limits)}\n"
    return RunOutcome(
        exit_code=exit_code,
        stdout=run.stdout.text("stdout"),
        stderr=stderr,
        result=result,
        returned=returned,
        duration_ms=int((time.monotonic() - started) * 1000),
        limit=limit,
        truncated=bool(run.stdout.dropped or run.stderr.dropped),
    )


async def _spawn_and_wait(
    command: list[str], env: dict[str, str], run_dir: Path, limits: ExecLimits
) -> tuple[_Run, int]:
    stop = anyio.CancelScope(deadline=anyio.current_time() + limits.timeout)

    def flooded() -> None:
        run.stopped = run.stopped or "output"
        stop.cancel()

    cap = limits.max_output
    run = _Run(
        limits, CappedOutput(cap, DRAIN_LIMIT, flooded), CappedOutput(cap, DRAIN_LIMIT, flooded)
    )
    proc = await anyio.open_process(
        command,
        stdin=DEVNULL,
        stdout=PIPE,
        stderr=PIPE,
        cwd=run_dir,
        env=env,
        start_new_session=True,
    )
    try:
        await _wait(proc, run, stop)
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:  # cancelled from outside: the tree dies first
                kill_tree(proc.pid)
            await proc.aclose()
    assert proc.returncode is not None  # aclose waited for it
    return run, proc.returncode


def _prepare(run_dir: Path, code: str, package: Mapping[str, str]) -> None:
    _write_package(run_dir / PACKAGE_DIR, package)
    (run_dir / "script.py").write_text(code, encoding="utf-8")


async def run_script(
    code: str,
    *,
    filename: str,
    argv: Sequence[str],
    inline: bool,
    package: Mapping[str, str],
    run_id: str,
    daemon_socket: Path,
    sandbox: Literal["bwrap", "none"],
    limits: ExecLimits,
    work_root: Path | None = None,
    headers: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run ``code`` (named ``filename`` in messages) with ``argv`` and the generated
    ``package`` importable; its calls reach ``daemon_socket`` as the run ``run_id``.

    Raises:
        SandboxUnavailable: ``sandbox`` is "bwrap" and bubblewrap is not installed.
        ValueError: a ``package`` path leaves the package, or ``sandbox`` is unknown.
    """
    if sandbox not in ("bwrap", "none"):
        raise ValueError(f"sandbox must be 'bwrap' or 'none', not {sandbox!r}")
    started = time.monotonic()
    run_dir = Path(tempfile.mkdtemp(prefix="mcpx-run-", dir=work_root))  # 0700
    try:
        _prepare(run_dir, code, package)
        root = sandbox == "bwrap" and os.geteuid() == 0
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN) if root else None
        settings = {"name": filename, "inline": inline, "memory": limits.memory}
        settings |= {"cpu": limits.cpu, "processes": limits.processes, "fsize": limits.memory}
        settings["uid"] = uid
        command, env = _argv(run_dir, sandbox, settings, argv, run_id)
        relay = open_relay(
            run_dir / SOCKET_NAME, run_id=run_id, daemon_socket=daemon_socket, headers=headers
        )
        async with relay:
            if uid is not None:
                _chown_tree(run_dir, uid)
            run, returncode = await _spawn_and_wait(command, env, run_dir, limits)
        return _outcome(run, run_dir, returncode, started)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
