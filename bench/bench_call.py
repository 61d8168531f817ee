"""Call throughput and latency: mcpx against a direct call and against fastmcp's proxy.

    bash bench/setup.sh            # peers + fastmcp 4.1.x in .tooling (once)
    .venv/bin/python bench/bench_call.py [--n 2000] [--reps 3]

In one run, interleaved, medians of ``--reps`` repetitions, all against the same echo
upstream over stdio (tests/fixtures/sdk_server.py on the official SDK 2.3.0):

(a) direct: the official Python SDK client talking to the upstream itself;
(b) mcpx: ``POST /v1/call`` to a warm daemon over its unix socket;
(c) fastmcp: ``fastmcp.server.create_proxy`` (4.1.x) served on a unix socket,
    called with stateless 2026-07-28 ``tools/call`` POSTs.

Each sequentially and 8-concurrently. Also: a warm pool's first call from a fresh CLI
process, the daemon's RSS with 10 upstreams started, and the number of upstream HTTP
requests per call for a Streamable HTTP upstream. Prints a table; only loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOOLING = ROOT / ".tooling"
SDK_PY = TOOLING / "peers" / "mcp-2.3.0" / "bin" / "python"
FASTMCP_PY = TOOLING / "bench" / "fastmcp" / "bin" / "python"
SERVER = [str(SDK_PY), str(ROOT / "tests" / "fixtures" / "sdk_server.py"), "--transport", "stdio"]
WORKERS = str(ROOT / "bench" / "workers.py")
PY = sys.executable


def _run_json(argv: list[str]) -> dict[str, Any]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _wait_socket(path: str, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        if os.path.exists(path):
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"{path} never accepted connections")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def mcpx_daemon(servers: dict[str, Any], work: Path) -> Iterator[dict[str, Any]]:
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    config = work / ".mcpx.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    argv = [PY, "-m", "mcpx", "daemon", "--state-dir", str(state), "--config", str(config)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    try:
        _wait_socket(str(state / "mcpx.sock"), proc)
        while not (state / "daemon.json").exists():
            time.sleep(0.05)
        info = json.loads((state / "daemon.json").read_text())
        yield {
            "socket": str(state / "mcpx.sock"),
            "pid": info["pid"],
            "state": state,
            "config": config,
        }
    finally:
        _stop(proc)


@contextmanager
def fastmcp_proxy(work: Path) -> Iterator[str]:
    path = str(work / "fastmcp.sock")
    proc = subprocess.Popen(
        [str(FASTMCP_PY), WORKERS, "fastmcp-proxy", path, "--", *SERVER],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_socket(path, proc)
        yield path
    finally:
        _stop(proc)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def throughput(n: int, reps: int, work: Path) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    with (
        mcpx_daemon({"echo": {"command": SERVER[0], "args": SERVER[1:]}}, work) as d,
        fastmcp_proxy(work) as proxy,
    ):
        _run_json([PY, WORKERS, "http", "10", "1", "mcpx", d["socket"]])  # start the instance
        for _rep in range(reps):
            for conc in (1, 8):
                runs = {
                    "direct": [str(SDK_PY), WORKERS, "sdk", str(n), str(conc), "--", *SERVER],
                    "mcpx": [PY, WORKERS, "http", str(n), str(conc), "mcpx", d["socket"]],
                    "fastmcp": [PY, WORKERS, "http", str(n), str(conc), "mcp", proxy],
                }
                for name, argv in runs.items():
                    results.setdefault(f"{name}/{conc}", []).append(_run_json(argv)["rps"])
        first = []
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MCPX_")},
            "MCPX_STATE_DIR": str(d["state"]),
            "MCPX_CONFIG": str(d["config"]),
        }
        for _ in range(5):
            started = time.perf_counter()
            subprocess.run(
                [PY, "-m", "mcpx", "call", "echo", "echo", "text=x"],
                env=env,
                capture_output=True,
                check=True,
                timeout=60,
            )
            first.append(time.perf_counter() - started)
        results["cli-first-call"] = first
    return results


def rss_with_ten(work: Path) -> tuple[int, int]:
    servers = {f"echo{i}": {"command": SERVER[0], "args": SERVER[1:]} for i in range(10)}
    with mcpx_daemon(servers, work / "ten") as d:
        idle = _rss_kib(d["pid"])
        for name in servers:
            _run_json_call(d["socket"], name)
        return idle, _rss_kib(d["pid"])


def _run_json_call(sock: str, server: str) -> None:
    import httpx

    with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://b") as client:
        body = {"server": server, "tool": "echo", "arguments": {"text": "x"}}
        response = client.post("/v1/call", json=body, timeout=120)
        response.raise_for_status()


def http_requests_per_call(work: Path, calls: int = 20) -> float:
    """POSTs mcpx sent a Streamable HTTP upstream per /v1/call, from its own counter."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        str(SDK_PY),
        str(ROOT / "tests" / "fixtures" / "sdk_server.py"),
        "--transport",
        "streamable-http",
        "--port",
        str(port),
    ]
    upstream = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        with mcpx_daemon({"remote": {"url": url}}, work / "http") as d:
            _run_json_call(d["socket"], "remote")  # start + catalogue
            before = _http_requests(d["socket"])
            for _ in range(calls):
                _run_json_call(d["socket"], "remote")
            return (_http_requests(d["socket"]) - before) / calls
    finally:
        _stop(upstream)


def _http_requests(sock: str) -> int:
    import httpx

    with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://b") as client:
        servers = client.get("/v1/servers").json()["servers"]
    return int(servers[0]["instances"][0]["httpRequests"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    for needed in (SDK_PY, FASTMCP_PY):
        if not needed.exists():
            raise SystemExit(f"{needed} is missing: run bash bench/setup.sh")
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-") as tmp:
        work = Path(tmp)
        results = throughput(args.n, args.reps, work)
        idle, ten = rss_with_ten(work)
        per_call = http_requests_per_call(work)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"N={args.n} calls, median of {args.reps} interleaved repetitions (calls/s)")
    print(f"{'path':<10}{'sequential':>12}{'8-concurrent':>14}")
    for name in ("direct", "mcpx", "fastmcp"):
        print(f"{name:<10}{med[name + '/1']:>12.0f}{med[name + '/8']:>14.0f}")
    for conc in (1, 8):
        print(
            f"mcpx/fastmcp ({conc}): {med[f'mcpx/{conc}'] / med[f'fastmcp/{conc}']:.2f}x   "
            f"mcpx/direct ({conc}): {med[f'mcpx/{conc}'] / med[f'direct/{conc}']:.2f}x"
        )
    print(f"warm first call from a fresh CLI process: {med['cli-first-call']:.3f} s (median of 5)")
    print(f"daemon RSS: {idle / 1024:.1f} MiB idle, {ten / 1024:.1f} MiB with 10 upstreams started")
    print(f"upstream HTTP requests per call (Streamable HTTP upstream): {per_call:.2f}")


if __name__ == "__main__":
    main()
