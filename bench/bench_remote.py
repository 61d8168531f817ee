"""A daemon on another machine (issue 23): what ssh costs per call and on the first call.

    .venv/bin/python bench/bench_remote.py [--n 500] [--cli 10] [--reps 3]

The "other machine" is this one: a real OpenSSH server on a free 127.0.0.1 port, started
as the tests start it (``tests/support/sshd.py``: a throwaway host key, a key made for the
run, sessions running this checkout's mcpx with a state dir of their own). Local and
remote daemons have the same upstream, the SDK 2.3.0 echo server of bench_call.py over
stdio, and the same settings. In one run, the rows interleaved (the order rotated each
repetition), medians of ``--reps`` repetitions:

(a)  an SDK 2.3.0 host (``mcp.Client`` over stdio, this file's ``host`` worker) spawning
     local ``mcpx serve``: ``--n`` sequential ``mcpx_call`` of ``echo``, calls/s; and the
     host's first call (spawn, handshake, call) in seconds;
(b)  the same host spawning ``ssh -F cfg mcpx-test-box mcpx serve --transport stdio``;
(c)  ``mcpx call`` through ``ssh://`` one process per call (``--cli`` of them in a row,
     each a fresh command that logs in, the host's state dir remembered from the last):
     calls/s and the median latency; (cF) the same with the host forgotten before each
     (``mcpx bridge --print-socket`` run there every time, as before it was remembered);
     (c0) the same against the local daemon, for scale;
(d)  the first call's latency of a fresh ``mcpx call`` through ``ssh://`` when ssh must
     log in (as (c)) against one riding an OpenSSH ControlMaster already up (started
     here with ``-M -S``; ``daemon.sshCommand`` is ``ssh -F cfg -S <ctl>``).

Only loopback and unix sockets; every process started here is ended by its pid.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import PY, ROOT, SDK_PY, SERVER, clean_env, mcpx_daemon, run_json

ECHO = {"command": SERVER[0], "args": SERVER[1:]}
SETTINGS: dict[str, Any] = {"log.frames": ""}  # the tests' frame trace off: it costs per frame
ROWS = [
    ("a", "(a)  SDK host -> local mcpx serve"),
    ("b", "(b)  SDK host -> ssh box mcpx serve"),
    ("c0", "(c0) mcpx call, local daemon, per process"),
    ("c", "(c)  mcpx call via ssh://, per process"),
    ("cF", "(cF) (c), the host's state dir forgotten"),
    ("dM", "(dM) mcpx call via ssh://, ControlMaster up"),
]


# --- the host: run by the SDK 2.3.0 python -------------------------------------------------


def host(n: int, argv: list[str]) -> None:
    """``n`` sequential ``mcpx_call`` of echo through ``mcp.Client``; one JSON line."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def run() -> None:
        started = time.perf_counter()
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        async with Client(params) as client:

            async def one(i: int) -> None:
                args = {"server": "echo", "tool": "echo", "arguments": {"text": f"m{i}"}}
                result = await client.call_tool("mcpx_call", args)
                if result.is_error or f"m{i}" not in str(result.content):
                    raise RuntimeError(f"call {i} answered {str(result)[:300]}")

            await one(0)
            first = time.perf_counter() - started
            started = time.perf_counter()
            for i in range(1, n + 1):
                await one(i)
            elapsed = time.perf_counter() - started
            revision = client.protocol_version
        print(json.dumps({"first": first, "rps": n / elapsed, "revision": revision}))

    anyio.run(run)


# --- the runner ------------------------------------------------------------------------------


def _cli_call(env: dict[str, str], forget: bool = False) -> float:
    """Seconds of one ``mcpx call echo echo`` from a fresh process; ``forget``: the ssh://
    host's remembered state dir removed first."""
    if forget:
        (Path(env["MCPX_STATE_DIR"]) / "ssh-hosts.json").unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        [PY, "-m", "mcpx", "call", "echo", "echo", "text=x"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 or done.stdout.strip() != "x":
        raise RuntimeError(f"mcpx call failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - started


@contextmanager
def _control_master(ssh: list[str], alias: str, control: Path) -> Iterator[None]:
    """An OpenSSH master to the box, as a user keeps one; ended by its pid."""
    argv = [*ssh, "-M", "-S", str(control), "-N", "-o", "BatchMode=yes", alias]
    master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not control.exists():
            if master.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the ControlMaster did not come up ({master.poll()})")
            time.sleep(0.02)
        yield
    finally:
        master.terminate()
        master.wait(timeout=30)


def measure(n: int, cli: int, reps: int, work: Path) -> dict[str, list[float]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.sshd import running_sshd  # the tests' own sshd set-up, reused

    results: dict[str, list[float]] = {}
    (work / "box").mkdir()
    with (
        mcpx_daemon({"echo": ECHO}, work / "local") as local,
        running_sshd(work / "box", {"echo": ECHO}, SETTINGS) as box,
    ):
        ssh = ["ssh", "-F", str(box.config)]
        remote_serve = [*ssh, box.host_alias, "mcpx", "serve", "--transport", "stdio"]
        via_ssh = clean_env(
            MCPX_STATE_DIR=str(work / "client-state"),
            MCPX_DAEMON_ENDPOINT=f"ssh://{box.host_alias}",
            MCPX_DAEMON_SSH_COMMAND=" ".join(ssh),
        )
        control = work / "cm"
        via_master = via_ssh | {"MCPX_DAEMON_SSH_COMMAND": f"{' '.join(ssh)} -S {control}"}
        worker = [str(SDK_PY), __file__, "host"]

        def serve_row(key: str, argv: list[str], env: dict[str, str]) -> Callable[[], None]:
            def run() -> None:
                seen = run_json([*worker, str(n), "--", *argv], env=env)
                results.setdefault(f"{key}/rps", []).append(seen["rps"])
                results.setdefault(f"{key}/first", []).append(seen["first"])

            return run

        def cli_row(key: str, env: dict[str, str], forget: bool = False) -> Callable[[], None]:
            def run() -> None:
                each = [_cli_call(env, forget) for _ in range(cli)]
                results.setdefault(f"{key}/rps", []).append(len(each) / sum(each))
                results.setdefault(f"{key}/first", []).append(statistics.median(each))

            return run

        rows = {
            "a": serve_row("a", [PY, "-m", "mcpx", "serve"], local["env"]),
            "b": serve_row("b", remote_serve, clean_env()),
            "c0": cli_row("c0", local["env"]),
            "c": cli_row("c", via_ssh),
            "cF": cli_row("cF", via_ssh, forget=True),
        }
        with _control_master(ssh, box.host_alias, control):
            rows["dM"] = cli_row("dM", via_master)
            for env in (local["env"], via_ssh, via_master):  # daemons and upstreams up
                _cli_call(env)
            for rep in range(reps):
                keys = list(rows)
                shift = rep % len(keys)
                for key in keys[shift:] + keys[:shift]:
                    rows[key]()
    return results


def report(results: dict[str, list[float]], n: int, cli: int, reps: int) -> None:
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"median of {reps} interleaved repetitions; hosts: {n} sequential calls after one;")
    print(f"CLI rows: {cli} fresh `mcpx call` processes in a row")
    print(f"{'path':<46}{'calls/s':>9}{'first call (s)':>16}")
    for key, label in ROWS:
        if f"{key}/rps" in med:
            print(f"{label:<46}{med[key + '/rps']:>9.1f}{med[key + '/first']:>16.3f}")
    print()
    print(f"(b)/(a) calls/s: {med['b/rps'] / med['a/rps']:.2f}")
    login, shared = med["c/first"], med["dM/first"]
    print(f"(d) first call via ssh://: {login:.3f} s logging in, {shared:.3f} s on a master up")
    print(f"    ({login - shared:.3f} s for the login; (c0) local: {med['c0/first']:.3f} s)")
    forgot = med["cF/first"]
    print(f"(c) remembered host: {login:.3f} s, forgotten: {forgot:.3f} s ({forgot - login:.3f} s)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "host":  # the worker, in the SDK's python
        rest = sys.argv[2:]
        host(int(rest[0]), rest[rest.index("--") + 1 :])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="calls per host run")
    parser.add_argument("--cli", type=int, default=10, help="mcpx call processes per CLI row")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if not SDK_PY.exists():
        raise SystemExit(f"{SDK_PY} is missing: run scripts/peers.sh")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-remote-") as tmp:
        results = measure(args.n, args.cli, args.reps, Path(tmp))
    report(results, args.n, args.cli, args.reps)
    print(f"\n{os.cpu_count()} CPUs; load average (1 min) {load_before[0]:.2f} before, ", end="")
    print(f"{os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
