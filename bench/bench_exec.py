"""Scripts (``mcpx exec``): what one tool call costs inside a script, and a run's start-up.

    .venv/bin/python bench/bench_exec.py [--calls 300] [--runs 15] [--reps 3]

Against one warm daemon whose upstream is the SDK 2.3.0 echo server of bench_call.py
(tests/fixtures/sdk_server.py over stdio), in one run, medians of ``--reps`` repetitions:

(v)  /v1/call: a warm client (httpx over the unix socket), one call after another: the
     floor of any call through the daemon;
(x)  one call from inside a script: a run making ``--calls`` sequential ``demo.echo``
     calls, less an empty run, divided by ``--calls``; under bubblewrap and unconfined;
(xa) the same calls fanned out 8 at a time with ``asyncio.gather`` (``aio``);
(c)  ``mcpx call`` from a fresh CLI process (what a shell script pays per call);
(r)  a run's start-up: ``POST /v1/exec`` of an empty script, answered (the generated
     client, the run dir, the sandbox, the interpreter), under bubblewrap and unconfined;
(re) ``mcpx exec -c pass`` from a fresh CLI process.

Only loopback and unix sockets; every process started here is ended by its pid.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import PY, SERVER, mcpx_daemon


def _v1_calls(api: httpx.Client, n: int) -> float:
    body = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
    started = time.perf_counter()
    for _ in range(n):
        r = api.post("/v1/call", json=body)
        r.raise_for_status()
    return (time.perf_counter() - started) / n


def _run(api: httpx.Client, code: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    r = api.post("/v1/exec", json={"code": code}, timeout=600)
    elapsed = time.perf_counter() - started
    doc: dict[str, Any] = r.json()
    if r.status_code != 200 or not doc.get("ok"):
        raise RuntimeError(f"the run failed: {r.status_code} {json.dumps(doc)[:2000]}")
    return elapsed, doc


def _script_call(api: httpx.Client, calls: int, fan: bool) -> float:
    if fan:
        code = (
            "import asyncio\nfrom mcpx_tools import demo\n"
            "async def main():\n"
            f"    for _ in range({calls // 8}):\n"
            "        await asyncio.gather(*(demo.aio.echo(text='hi') for _ in range(8)))\n"
        )
        made = calls // 8 * 8
    else:
        code = f"from mcpx_tools import demo\nfor _ in range({calls}):\n    demo.echo(text='hi')\n"
        made = calls
    empty, _ = _run(api, "from mcpx_tools import demo\n")
    full, _ = _run(api, code)
    return (full - empty) / made


def _cli(env: dict[str, str], *argv: str) -> float:
    started = time.perf_counter()
    out = subprocess.run([PY, "-m", "mcpx", *argv], env=env, capture_output=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"mcpx {argv} failed: {out.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    demo = {"command": SERVER[0], "args": SERVER[1:]}
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-exec-") as tmp:
        for sandbox in ("bwrap", "none"):
            servers = {"demo": demo}
            work = Path(tmp) / sandbox
            with mcpx_daemon(servers, work, {"exec.sandbox": sandbox}) as d:
                transport = httpx.HTTPTransport(uds=d["socket"])
                with httpx.Client(transport=transport, base_url="http://mcpx", timeout=120) as api:
                    _, seen = _run(api, "import os\nprint(os.path.exists('/run/mcpx'))\n")
                    assert (seen["stdout"].strip() == "True") == (sandbox == "bwrap"), seen
                    _v1_calls(api, 50)  # warm the instance
                    for _ in range(args.reps):
                        rows.setdefault("(v) /v1/call, ms per call", []).append(
                            _v1_calls(api, args.calls) * 1e3
                        )
                        key = f"(x) one call in a script [{sandbox}], ms"
                        rows.setdefault(key, []).append(_script_call(api, args.calls, False) * 1e3)
                        key = f"(xa) one call, 8 at a time [{sandbox}], ms"
                        rows.setdefault(key, []).append(_script_call(api, args.calls, True) * 1e3)
                        starts = [_run(api, "pass\n")[0] for _ in range(args.runs)]
                        key = f"(r) run start-up, /v1/exec of `pass` [{sandbox}], ms"
                        rows.setdefault(key, []).append(_median(starts) * 1e3)
                        if sandbox == "bwrap":
                            cli = [_cli(d["env"], "call", "demo", "echo", "text=hi")]
                            cli += [_cli(d["env"], "call", "demo", "echo", "text=hi")]
                            rows.setdefault("(c) mcpx call, fresh CLI, ms", []).append(
                                _median(cli) * 1e3
                            )
                            ex = [_cli(d["env"], "exec", "-c", "pass") for _ in range(3)]
                            rows.setdefault("(re) mcpx exec -c pass, fresh CLI, ms", []).append(
                                _median(ex) * 1e3
                            )
    width = max(len(k) for k in rows)
    print(f"{'row':<{width}}  median of {args.reps}")
    for key, values in rows.items():
        print(f"{key:<{width}}  {_median(values):8.2f}")


if __name__ == "__main__":
    main()
