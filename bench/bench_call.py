"""Call throughput and latency: mcpx's client and server sides against direct calls and peers.

    bash bench/setup.sh            # peers + fastmcp 4.1.x + mcp-proxy 0.13 in .tooling (once)
    .venv/bin/python bench/bench_call.py [--n 2000] [--reps 3] [--only e,h]

In one run, interleaved (the order rotated each repetition; the two rows of a ratio run
back to back), medians of ``--reps`` repetitions, each sequentially and 8-concurrently,
all against the same echo upstream over stdio (tests/fixtures/sdk_server.py on the
official SDK 2.3.0). A ratio is the median of the repetitions' own ratios: on a shared
machine the peers' figures drift by a quarter within minutes, and pairing cancels that.

(a)  direct: the official Python SDK client spawning the upstream itself;
(a') direct-raw: the raw JSON-lines host of (d) and (f) spawning the upstream itself;
(a'') the same in 2026-07-28, the era mcpx speaks to this (dual-era) upstream: its own
     speed there is the ceiling of every mcpx row once the upstream is saturated;
(b)  mcpx /v1: ``POST /v1/call`` to a warm daemon over its unix socket;
(c)  fastmcp HTTP (unix): ``fastmcp.server.create_proxy`` (4.1.x) on a unix socket,
     stateless 2026-07-28 ``tools/call`` POSTs;
(d)  mcpx serve: a raw JSON-lines host spawning ``mcpx serve`` (stdio) -> the daemon;
     ``initialize`` 2025-11-25 once, then ``tools/call`` of ``mcpx_call``;
(d') the same, 2026-07-28 (no handshake, ``_meta`` on each request);
(dL) (d) through a second daemon told to speak legacy to the upstream (the server's
     ``"protocol": "prefer-initialize"``): what pinning the era is worth with this one;
(e)  mcpx /mcp: stateless 2026-07-28 ``tools/call`` of ``mcpx_call`` POSTed to the
     daemon's ``/mcp`` on 127.0.0.1 by a raw HTTP/1.1 host (keep-alive, a socket per lane);
(eL) (e) through the daemon of (dL);
(f)  fastmcp stdio: the host of (d) spawning fastmcp's proxy run over stdio, calling ``echo``;
(g)  fastmcp HTTP: (c) on 127.0.0.1 instead of a unix socket;
(h)  mcp-proxy 0.13 (on the SDK 1.x, its own venv): its Streamable HTTP ``/mcp`` on
     127.0.0.1, one 2025-11-25 session (its ``Mcp-Session-Id``), the host of (e);
(sG) the official SDK 2.x client as the host (what users run; (a) is its direct call)
     spawning ``mcpx serve``, calling ``mcpx_call``, the upstream pinned legacy as in (dL);
(sP) the same host spawning ``mcpx serve --passthrough echo``, calling ``echo`` itself;
(sPd) (sP) in mcpx's default era to the upstream;
(sF) the same host spawning fastmcp's proxy over stdio (as in (f)), calling ``echo``;
(sR) the same host spawning a bare uvloop line relay (``workers.py relay``): the floor
     of one stdio hop in Python, for reference (no gateway does less);
(e*), (h*) the same two with httpx's async client as the host: it spends about 3 ms of
     CPU per call itself, more than either gateway, which is why (e) and (h) use the raw
     host, as (d) and (f) do over stdio.

The targets compare like with like. Both peers speak 2025-11-25 to the upstream (the run
checks it: ``upstream_era.py``), and this upstream takes longer per call in 2026-07-28, the
era mcpx speaks to a dual-era server by default (the spec's order). So a target is the
ratio of mcpx with the upstream in the peer's era, (dL)/(f) and (eL)/(h); the ratios of
mcpx's default era, (d)/(f) and (e)/(h), are printed beside them.

Also: a warm pool's first call from a fresh CLI process, the daemon's RSS with 10
upstreams started, and the number of upstream HTTP requests per call for a Streamable
HTTP upstream. Prints a table; only loopback and unix sockets.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import (
    FASTMCP_PY,
    MCP_PROXY,
    PY,
    ROOT,
    SDK_PY,
    SERVER,
    WORKERS,
    clean_env,
    fastmcp_http_proxy,
    free_port,
    mcp_proxy,
    mcpx_daemon,
    rss_kib,
    run_json,
    stop,
    wait_port,
)
from upstream_era import eras_spoken

LEGACY, MODERN = "2025-11-25", "2026-07-28"
SERVE = [PY, "-m", "mcpx", "serve"]
PASS = ["--passthrough", "echo"]
RELAY = [PY, WORKERS, "relay", "--", *SERVER]
FASTMCP_STDIO = [str(FASTMCP_PY), WORKERS, "fastmcp-stdio", "--", *SERVER]

# (key, label): the table's rows, in order.
PATHS = [
    ("a", "(a)  direct, SDK client"),
    ("a'", "(a') direct, raw host"),
    ("a''", "(a'') direct, raw host, 2026-07-28"),
    ("b", "(b)  mcpx /v1/call (unix)"),
    ("c", "(c)  fastmcp HTTP (unix)"),
    ("d", "(d)  mcpx serve, stdio 2025-11-25"),
    ("d'", "(d') mcpx serve, stdio 2026-07-28"),
    ("dL", "(dL) (d), upstream pinned legacy"),
    ("e", "(e)  mcpx /mcp, HTTP 2026-07-28"),
    ("eL", "(eL) (e), upstream pinned legacy"),
    ("f", "(f)  fastmcp proxy stdio->stdio"),
    ("g", "(g)  fastmcp proxy HTTP->stdio"),
    ("h", "(h)  mcp-proxy HTTP->stdio"),
    ("sG", "(sG) SDK host, mcpx serve, mcpx_call"),
    ("sP", "(sP) SDK host, mcpx serve --passthrough"),
    ("sPd", "(sPd) (sP), mcpx's default era"),
    ("sF", "(sF) SDK host, fastmcp proxy stdio"),
    ("sR", "(sR) SDK host, a bare line relay"),
    ("e*", "(e*) mcpx /mcp, httpx host"),
    ("h*", "(h*) mcp-proxy, httpx host"),
]
# (numerator, denominator, target or None): the ratios printed under the table.
RATIOS = [
    ("dL", "f", 2.0),
    ("eL", "h", 1.5),
    ("sP", "sF", 2.0),
    ("sP", "a", 0.85),
    ("sG", "sF", 2.0),
    ("sG", "a", 0.85),
    ("sR", "a", None),
    ("sP", "sR", None),
    ("sPd", "sF", None),
    ("sPd", "a", None),
    ("d", "f", None),
    ("e", "h", None),
    ("e*", "h*", None),
    ("d", "a", None),
    ("e", "a", None),
    ("d", "a'", None),
    ("d'", "a'", None),
    ("d", "a''", None),
    ("e", "a''", None),
    ("b", "c", None),
]


def throughput(
    n: int, reps: int, work: Path, only: frozenset[str] = frozenset()
) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    echo = {"command": SERVER[0], "args": SERVER[1:]}
    pinned = {"echo": {**echo, "protocol": "prefer-initialize"}}
    with (
        mcpx_daemon({"echo": echo}, work) as d,
        mcpx_daemon(pinned, work / "pinned") as dl,
        fastmcp_http_proxy(str(work / "fastmcp.sock")) as fastmcp_unix,
        fastmcp_http_proxy(str(free_port())) as fastmcp_tcp,
        mcp_proxy() as mcp_proxy_url,
    ):
        for daemon in (d, dl):  # start the instance
            run_json([PY, WORKERS, "http", "10", "1", "mcpx", daemon["socket"]])
        for rep in range(reps):
            for conc in (1, 8):
                nc = [str(n), str(conc)]
                runs = {
                    "a": [str(SDK_PY), WORKERS, "sdk", *nc, "--", *SERVER],
                    "a'": [PY, WORKERS, "stdio", *nc, LEGACY, "echo", "--", *SERVER],
                    "a''": [PY, WORKERS, "stdio", *nc, MODERN, "echo", "--", *SERVER],
                    "b": [PY, WORKERS, "http", *nc, "mcpx", d["socket"]],
                    "c": [PY, WORKERS, "http", *nc, "mcp", fastmcp_unix],
                    "d": [PY, WORKERS, "stdio", *nc, LEGACY, "mcpx:echo", "--", *SERVE],
                    "d'": [PY, WORKERS, "stdio", *nc, MODERN, "mcpx:echo", "--", *SERVE],
                    "dL": [PY, WORKERS, "stdio", *nc, LEGACY, "mcpx:echo", "--", *SERVE],
                    "e": [PY, WORKERS, "raw-http", *nc, "mcpx-mcp", d["url"]],
                    "eL": [PY, WORKERS, "raw-http", *nc, "mcpx-mcp", dl["url"]],
                    "f": [PY, WORKERS, "stdio", *nc, LEGACY, "echo", "--", *FASTMCP_STDIO],
                    "g": [PY, WORKERS, "http", *nc, "mcp", fastmcp_tcp],
                    "h": [PY, WORKERS, "raw-http", *nc, "legacy", mcp_proxy_url],
                    "sG": [str(SDK_PY), WORKERS, "sdk", *nc, "mcpx:echo", "--", *SERVE],
                    "sP": [str(SDK_PY), WORKERS, "sdk", *nc, "--", *SERVE, *PASS],
                    "sPd": [str(SDK_PY), WORKERS, "sdk", *nc, "--", *SERVE, *PASS],
                    "sF": [str(SDK_PY), WORKERS, "sdk", *nc, "--", *FASTMCP_STDIO],
                    "sR": [str(SDK_PY), WORKERS, "sdk", *nc, "--", *RELAY],
                    "e*": [PY, WORKERS, "http", *nc, "mcpx-mcp", d["url"]],
                    "h*": [PY, WORKERS, "http", *nc, "legacy", mcp_proxy_url],
                }
                for key in _order([k for k in runs if not only or k in only], rep):
                    env = dl["env"] if key in ("dL", "eL", "sG", "sP") else d["env"]
                    rps = run_json(runs[key], env=env)["rps"]
                    results.setdefault(f"{key}/{conc}", []).append(rps)
        results["cli-first-call"] = _first_calls(d["env"])
    return results


def _order(keys: list[str], rep: int) -> list[str]:
    """This repetition's running order: the rows a ratio compares run back to back
    (which goes first alternates), so that the machine's drift over a run, often
    larger than the effect, touches both sides of each ratio alike; the groups rotate."""
    groups: list[list[str]] = []
    for t, b, target in RATIOS:  # rows joined by targets form one group, each row once
        if not (target and t in keys and b in keys):
            continue
        joined = [g for g in groups if t in g or b in g]
        merged = [k for g in joined for k in g]
        merged += [k for k in (t, b) if k not in merged]
        groups = [g for g in groups if g not in joined] + [merged]
    for top, bottom, target in RATIOS:  # (d) runs beside (dL) and (f), its reference
        joins = [g for g in groups if bottom in g]
        if target is None and joins and top in keys and not any(top in g for g in groups):
            joins[0].append(top)
    grouped = {k for g in groups for k in g}
    groups += [[k] for k in keys if k not in grouped]
    if rep % 2:
        groups = [g[::-1] for g in groups]
    shift = rep % len(groups)
    return [k for g in groups[shift:] + groups[:shift] for k in g]


def paired_ratios(results: dict[str, list[float]], top: str, bottom: str, conc: int) -> list[float]:
    """Each repetition's ratio of two rows, from their back-to-back runs."""
    tops, bottoms = results[f"{top}/{conc}"], results[f"{bottom}/{conc}"]
    return [t / b for t, b in zip(tops, bottoms, strict=True)]


def _first_calls(env: dict[str, str], times: int = 5) -> list[float]:
    """Seconds of ``mcpx call`` from a fresh process, the pool warm."""
    first = []
    for _ in range(times):
        started = time.perf_counter()
        subprocess.run(
            [PY, "-m", "mcpx", "call", "echo", "echo", "text=x"],
            env=env,
            capture_output=True,
            check=True,
            timeout=60,
        )
        first.append(time.perf_counter() - started)
    return first


def rss_with_ten(work: Path) -> tuple[int, int]:
    servers = {f"echo{i}": {"command": SERVER[0], "args": SERVER[1:]} for i in range(10)}
    with mcpx_daemon(servers, work / "ten") as d:
        idle = rss_kib(d["pid"])
        for name in servers:
            _json_call(d["socket"], name)
        return idle, rss_kib(d["pid"])


def _json_call(sock: str, server: str) -> None:
    import httpx

    with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://b") as client:
        body = {"server": server, "tool": "echo", "arguments": {"text": "x"}}
        response = client.post("/v1/call", json=body, timeout=120)
        response.raise_for_status()


def http_requests_per_call(work: Path, calls: int = 20) -> float:
    """POSTs mcpx sent a Streamable HTTP upstream per /v1/call, from its own counter."""
    port = free_port()
    argv = [str(SDK_PY), str(ROOT / "tests" / "fixtures" / "sdk_server.py")]
    argv += ["--transport", "streamable-http", "--port", str(port)]
    upstream = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=clean_env(),
    )
    try:
        wait_port(port, upstream)
        url = f"http://127.0.0.1:{port}/mcp"
        with mcpx_daemon({"remote": {"url": url}}, work / "http") as d:
            _json_call(d["socket"], "remote")  # start + catalogue
            before = _http_requests(d["socket"])
            for _ in range(calls):
                _json_call(d["socket"], "remote")
            return (_http_requests(d["socket"]) - before) / calls
    finally:
        stop(upstream)


def _http_requests(sock: str) -> int:
    import httpx

    with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://b") as client:
        servers = client.get("/v1/servers").json()["servers"]
    return int(servers[0]["instances"][0]["httpRequests"])


def report(results: dict[str, list[float]], n: int, reps: int) -> None:
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"N={n} calls, median of {reps} interleaved repetitions (calls/s)")
    print(f"{'path':<36}{'sequential':>12}{'8-concurrent':>14}")
    for key, label in PATHS:
        if key + "/1" in med:  # --only leaves rows out
            print(f"{label:<36}{med[key + '/1']:>12.0f}{med[key + '/8']:>14.0f}")
    print()
    print("ratio: the median of the repetitions' ratios, each of two back-to-back runs")
    print(f"{'ratio':<36}{'sequential':>12}{'8-concurrent':>14}  target")
    spread = []
    for top, bottom, target in RATIOS:
        if f"{top}/1" not in med or f"{bottom}/1" not in med:
            continue
        cells = ""
        verdict = []
        for conc in (1, 8):
            each = paired_ratios(results, top, bottom, conc)
            ratio = statistics.median(each)
            cells += f"{ratio:>{12 if conc == 1 else 14}.2f}"
            if target is not None:
                verdict.append("met" if ratio >= target else "MISSED")
                spread.append(f"({top})/({bottom}) {conc}: " + " ".join(f"{r:.2f}" for r in each))
        want = f"  >= {target:g} ({' / '.join(verdict)})" if target is not None else ""
        if target is None and bottom in ("f", "h"):
            want = "  (mcpx's default era: the upstream's 2026-07-28 cost included)"
        print(f"{f'({top})/({bottom})':<36}{cells}{want}")
    if spread:
        print("each repetition (targets):", "; ".join(spread))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--only", default="", help="Only these rows, comma-separated (e.g. e,h); ratios need both"
    )
    args = parser.parse_args()
    for needed in (SDK_PY, FASTMCP_PY, MCP_PROXY):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing: run bash bench/setup.sh")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-") as tmp:
        work = Path(tmp)
        only = frozenset(filter(None, args.only.split(",")))
        results = throughput(args.n, args.reps, work, only)
        idle, ten = rss_with_ten(work)
        per_call = http_requests_per_call(work)
        eras = eras_spoken(work / "eras")
    report(results, args.n, args.reps)
    print()
    for row, era in eras.items():
        print(f"({row}) speaks {era} to the upstream")
    # The figures are only as quiet as the machine: other work shows in the load average.
    print(f"\n{os.cpu_count()} CPUs; load average (1 min) {load_before[0]:.2f} before, ", end="")
    print(f"{os.getloadavg()[0]:.2f} after")
    print()
    first = statistics.median(results["cli-first-call"])
    print(f"warm first call from a fresh CLI process: {first:.3f} s (median of 5)")
    print(f"daemon RSS: {idle / 1024:.1f} MiB idle, {ten / 1024:.1f} MiB with 10 upstreams started")
    print(f"upstream HTTP requests per call (Streamable HTTP upstream): {per_call:.2f}")


if __name__ == "__main__":
    main()
