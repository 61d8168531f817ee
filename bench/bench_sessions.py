"""Calls while many legacy sessions are held: does a request's cost grow with the sessions?

    .venv/bin/python bench/bench_sessions.py [--sizes 100,1000,10000,50000] [--calls 3000]
        [--callers 64] [--src DIR]

One daemon (``proto.maxSessions`` raised above the largest size), the bundled demo
upstream (``mcpx demo-server``). For each size N, in increasing order, the daemon is
brought to N idle legacy sessions (2025-11-25 ``initialize`` POSTs, raw HTTP/1.1 over a
few keep-alive connections, so that 50,000 take seconds), then ``--callers`` hosts, each
with its own session and connection, call ``echo`` through ``mcpx_call`` (``tools/call``
on ``/mcp``) until ``--calls`` calls are answered, ``--reps`` times (medians are
printed). Before the first size, one round of calls warms the upstream and the daemon.
Printed per N: calls/s, p50 and p99 latency, and the daemon's own CPU time per call
(user + system, from /proc: the least sensitive to this machine's drifting speed), each
against N=100 (the target is flat: within 10 %), the time to open the sessions, and the
daemon's RSS. At the end the
first session opened is asked a ``ping``: it must still be there (held, not evicted).

``--src DIR`` runs the daemon from another checkout's ``src`` (PYTHONPATH), e.g. the code
before the session table was bounded: ``git archive HEAD | tar -x -C /tmp/old``.
Only loopback: the daemon's port on 127.0.0.1. Stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from harness import LOOPBACK, PY, clean_env, rss_kib, stop, wait_socket

REVISION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
DEMO = {"command": PY, "args": ["-m", "mcpx", "demo-server"]}


@contextmanager
def daemon(work: Path, max_sessions: int, src: str | None) -> Iterator[dict[str, Any]]:
    """A daemon on ``<work>/state`` allowed ``max_sessions``; its pid and port."""
    state, config = work / "state", work / ".mcpx.json"
    settings = {"proto.maxSessions": max_sessions, "log.level": "warning"}
    config.write_text(json.dumps({"mcpServers": {"demo": DEMO}, "settings": settings}))
    argv = [PY, "-m", "mcpx", "daemon", "--state-dir", str(state), "--config", str(config)]
    argv += ["--port", "0", "--address", LOOPBACK]
    env = clean_env(**({"PYTHONPATH": src} if src else {}))
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    try:
        wait_socket(str(state / "mcpx.sock"), proc)
        deadline = time.monotonic() + 60
        while not (state / "daemon.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        info = json.loads((state / "daemon.json").read_text())
        port = int(info["url"].rsplit(":", 1)[1])
        yield {"pid": proc.pid, "port": port}
    finally:
        stop(proc)


class Http:
    """One keep-alive HTTP/1.1 connection to the daemon's ``/mcp``: a request written
    whole, its response read by Content-Length (or to the last chunk)."""

    def __init__(self, stream: SocketStream, port: int) -> None:
        self._stream = stream
        self._host = f"{LOOPBACK}:{port}"
        self._buffer = b""

    @classmethod
    async def connect(cls, port: int) -> Http:
        return cls(await anyio.connect_tcp(LOOPBACK, port), port)

    async def post(
        self, frame: dict[str, Any] | None, sid: str | None = None
    ) -> tuple[int, str, bytes]:
        """(status, Mcp-Session-Id of the answer, body); no frame: DELETE the session."""
        data = b"" if frame is None else json.dumps(frame).encode()
        method = "POST" if frame is not None else "DELETE"
        lines = [f"{method} /mcp HTTP/1.1", f"Host: {self._host}"]
        lines += ["Content-Type: application/json", f"Accept: {ACCEPT}"]
        lines += [f"Content-Length: {len(data)}"]
        if sid is not None:
            lines += [f"Mcp-Session-Id: {sid}", f"MCP-Protocol-Version: {REVISION}"]
        await self._stream.send("\r\n".join(lines).encode() + b"\r\n\r\n" + data)
        head = (await self._until(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        if "content-length" in fields:
            body = await self._exactly(int(fields["content-length"]))
        else:
            chunks = []
            while size := int((await self._until(b"\r\n")).split(b";")[0], 16):
                chunks.append(await self._exactly(size))
                await self._exactly(2)
            await self._until(b"\r\n")
            body = b"".join(chunks)
        return status, fields.get("mcp-session-id", ""), body

    async def _until(self, mark: bytes) -> bytes:
        while (at := self._buffer.find(mark)) < 0:
            self._buffer += await self._stream.receive()
        found, self._buffer = self._buffer[:at], self._buffer[at + len(mark) :]
        return found

    async def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._buffer += await self._stream.receive()
        found, self._buffer = self._buffer[:size], self._buffer[size:]
        return found

    async def aclose(self) -> None:
        await self._stream.aclose()


def _initialize() -> dict[str, Any]:
    params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "bench"}}
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}


def _echo(i: int) -> dict[str, Any]:
    call = {"server": "demo", "tool": "echo", "arguments": {"text": f"m{i}"}}
    params = {"name": "mcpx_call", "arguments": call}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


async def open_sessions(port: int, count: int, lanes: int = 8) -> list[str]:
    """``count`` new sessions, opened over ``lanes`` connections; their ids."""
    sids: list[str] = []

    async def lane(share: int) -> None:
        http = await Http.connect(port)
        try:
            for _ in range(share):
                status, sid, body = await http.post(_initialize())
                if status != 200 or not sid:
                    raise RuntimeError(f"initialize: HTTP {status}: {body[:300]!r}")
                sids.append(sid)
        finally:
            await http.aclose()

    async with anyio.create_task_group() as tg:
        for i in range(lanes):
            tg.start_soon(lane, count // lanes + (1 if i < count % lanes else 0))
    return sids


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (its children not counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def call_phase(
    port: int, pid: int, callers: int, calls: int, warmup: int
) -> dict[str, float]:
    """``callers`` hosts, each its own session, call until ``calls`` are answered."""
    cpu0 = cpu_seconds(pid)
    sids = await open_sessions(port, callers, lanes=callers)
    latencies: list[float] = []
    counter = iter(range(1, warmup + calls + 1))
    started: list[float] = []

    async def caller(sid: str) -> None:
        http = await Http.connect(port)
        try:
            for i in counter:
                if i == warmup + 1:
                    started.append(time.perf_counter())
                t0 = time.perf_counter()
                status, _, body = await http.post(_echo(i), sid)
                if status != 200 or f"m{i}".encode() not in body:
                    raise RuntimeError(f"call: HTTP {status}: {body[:300]!r}")
                if i > warmup:
                    latencies.append(time.perf_counter() - t0)
        finally:
            await http.aclose()

    async with anyio.create_task_group() as tg:
        for sid in sids:
            tg.start_soon(caller, sid)
    elapsed = time.perf_counter() - started[0]
    http = await Http.connect(port)
    try:
        for sid in sids:  # the callers' sessions end: N stays what is held
            await http.post(None, sid)
    finally:
        await http.aclose()
    cpu_us = (cpu_seconds(pid) - cpu0) / (warmup + calls) * 1e6
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "rps": len(latencies) / elapsed,
        "p50": cuts[49] * 1e3,
        "p99": cuts[98] * 1e3,
        "cpu_us": cpu_us,
    }


async def still_there(port: int, sid: str) -> bool:
    http = await Http.connect(port)
    try:
        status, _, _ = await http.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid)
    finally:
        await http.aclose()
    return status == 200


async def run(args: argparse.Namespace) -> None:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-sessions-") as work:
        cap = sizes[-1] + args.callers + 16
        with daemon(Path(work), cap, args.src) as d:
            await call_phase(d["port"], d["pid"], args.callers, args.calls, args.warmup)  # warm
            held: list[str] = []
            for n in sizes:
                t0 = time.perf_counter()
                held += await open_sessions(d["port"], n - len(held))
                opened = time.perf_counter() - t0
                reps = [
                    await call_phase(d["port"], d["pid"], args.callers, args.calls, args.warmup)
                    for _ in range(args.reps)
                ]
                figures = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
                rows.append({"n": n, "open_s": opened, "rss": rss_kib(d["pid"]) / 1024, **figures})
                print(json.dumps(rows[-1]), flush=True)
            first_held = await still_there(d["port"], held[0])
    base = rows[0]
    print(
        f"\n{args.callers} callers, {args.calls} calls x {args.reps} per size (medians); "
        f"ratios against N={base['n']:g}"
    )
    print(
        f"{'N':>7} {'open s':>7} {'calls/s':>8} {'ratio':>6} {'p50 ms':>7} {'ratio':>6}"
        f" {'p99 ms':>7} {'ratio':>6} {'CPU us/call':>11} {'ratio':>6} {'RSS MiB':>8}"
    )
    for r in rows:
        print(
            f"{r['n']:>7g} {r['open_s']:>7.1f} {r['rps']:>8.0f} {r['rps'] / base['rps']:>6.2f}"
            f" {r['p50']:>7.1f} {r['p50'] / base['p50']:>6.2f} {r['p99']:>7.1f}"
            f" {r['p99'] / base['p99']:>6.2f} {r['cpu_us']:>11.0f}"
            f" {r['cpu_us'] / base['cpu_us']:>6.2f} {r['rss']:>8.0f}"
        )
    print(f"the first session opened is still held: {first_held}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,50000")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--src", default=None, help="run the daemon from this src dir")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
