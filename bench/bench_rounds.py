"""Sequential calls of the official SDK host, every path timed in the same moments.

    bash bench/setup.sh            # peers + fastmcp in .tooling (once)
    .venv/bin/python bench/bench_rounds.py [--n 2000] [--reps 3] [--only a,sP,sR]

``bench_call.py`` runs each row on its own, back to back with the row it is compared
with; on a shared machine a row's rate moves by a third between two runs minutes apart,
so a sequential ratio there says as much about the machine as about mcpx. Here one SDK
2.x client holds a session to each path at once and makes one call to each in turn,
round after round (the order rotated every round, ``workers.py sdk-rounds``): every path
sees the same machine at the same moments, and the ratio of two mean call times is what
the two rows' sequential rates would be in the same conditions. Paths, as in
``bench_call.py`` (the upstream pinned legacy for mcpx, as the peers speak it):

(a)  direct: the upstream spawned by the host itself;
(sP) ``mcpx serve --passthrough echo``, calling ``echo``;
(sG) ``mcpx serve``, calling ``mcpx_call``;
(sF) fastmcp's stdio proxy, calling ``echo``;
(sR) a bare uvloop line relay: the floor of one stdio hop in Python.

A ratio is a rate's (the inverse of mean call times): (sP)/(a) = mean(a) / mean(sP).
Prints each repetition and their median; only stdio and a daemon's unix socket.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from bench_call import FASTMCP_STDIO, PASS, RELAY, SERVE
from harness import FASTMCP_PY, PY, SDK_PY, SERVER, WORKERS, mcpx_daemon, run_json

# (key, label, target the host calls, argv): the paths, each a session of the host.
PATHS = [
    ("a", "(a)  direct, SDK client", "echo", SERVER),
    ("sP", "(sP) mcpx serve --passthrough", "echo", [*SERVE, *PASS]),
    ("sG", "(sG) mcpx serve, mcpx_call", "mcpx:echo", SERVE),
    ("sF", "(sF) fastmcp proxy stdio", "echo", FASTMCP_STDIO),
    ("sR", "(sR) a bare line relay", "echo", RELAY),
]
# (numerator, denominator, target or None), as in bench_call.py.
RATIOS = [
    ("sP", "a", 0.85),
    ("sG", "a", 0.85),
    ("sP", "sF", 2.0),
    ("sG", "sF", 2.0),
    ("sR", "a", None),
    ("sP", "sR", None),
]


def rounds(
    n: int, reps: int, work: Path, only: frozenset[str] = frozenset()
) -> list[dict[str, dict[str, float]]]:
    """Each repetition's mean and median call time per path (µs); ``only``: these paths."""
    argv = [str(SDK_PY), WORKERS, "sdk-rounds", str(n)]
    paths = [p for p in PATHS if not only or p[0] in only]
    for i, (key, _, target, path) in enumerate(paths):
        argv += (["++"] if i else []) + [key, target, *path]
    echo = {"command": SERVER[0], "args": SERVER[1:], "protocol": "prefer-initialize"}
    with mcpx_daemon({"echo": echo}, work) as daemon:
        run_json([PY, WORKERS, "http", "10", "1", "mcpx", daemon["socket"]])  # started
        return [run_json(argv, env=daemon["env"])["rows"] for _ in range(reps)]


def report(runs: list[dict[str, dict[str, float]]], n: int) -> None:
    print(f"{n} rounds of one sequential call per path, {len(runs)} repetitions")
    print(f"{'path':<34}{'mean µs, each repetition':>34}{'calls/s':>10}")
    for key, label, _, _ in PATHS:
        if key not in runs[0]:
            continue
        means = [run[key]["mean_us"] for run in runs]
        rate = 1e6 / statistics.median(means)
        print(f"{label:<34}{' '.join(f'{m:>8.0f}' for m in means):>34}{rate:>10.0f}")
    print()
    print(f"{'ratio (of rates)':<34}{'each repetition':>34}{'median':>10}  target")
    for top, bottom, target in RATIOS:
        if top not in runs[0] or bottom not in runs[0]:
            continue
        each = [run[bottom]["mean_us"] / run[top]["mean_us"] for run in runs]
        ratio = statistics.median(each)
        verdict = ""
        if target is not None:
            met = sum(r >= target for r in each)
            verdict = f"  >= {target:g}: {met} of {len(each)} met"
        cells = " ".join(f"{r:>8.2f}" for r in each)
        print(f"{f'({top})/({bottom})':<34}{cells:>34}{ratio:>10.2f}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default="", help="Only these paths, comma-separated (a,sP)")
    args = parser.parse_args()
    for needed in (SDK_PY, FASTMCP_PY):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing: run bash bench/setup.sh")
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mcpx-rounds-") as tmp:
        only = frozenset(filter(None, args.only.split(",")))
        runs = rounds(args.n, args.reps, Path(tmp), only)
    report(runs, args.n)
    print(
        f"\n{os.cpu_count()} CPUs; load average (1 min) {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )


if __name__ == "__main__":
    main()
