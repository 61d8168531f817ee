"""Processes the benchmark starts: the mcpx daemon, the peer proxies, the workers.

Every process is started in its own session and ended by its pid (its process group:
a proxy's upstream goes with it). Only loopback: unix sockets and 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOOLING = ROOT / ".tooling"
SDK_PY = TOOLING / "peers" / "mcp-2.3.0" / "bin" / "python"
FASTMCP_PY = TOOLING / "bench" / "fastmcp" / "bin" / "python"
MCP_PROXY = TOOLING / "bench" / "mcp-proxy" / "bin" / "mcp-proxy"
SERVER = [str(SDK_PY), str(ROOT / "tests" / "fixtures" / "sdk_server.py"), "--transport", "stdio"]
WORKERS = str(ROOT / "bench" / "workers.py")
PY = sys.executable
LOOPBACK = "127.0.0.1"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any MCPX_ variable, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}, **extra}


def run_json(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a worker to its end; its last stdout line, as JSON."""
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{argv[1:5]} failed: {out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def wait_socket(path: str, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
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


def wait_port(port: int, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{LOOPBACK}:{port} never accepted connections")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc``'s process group (it leads one: started with a new session)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Whatever the leader left behind in its group (an upstream it spawned).
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def mcpx_daemon(
    servers: dict[str, Any], work: Path, settings: dict[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """A daemon on ``<work>/state`` with its unix socket and a 127.0.0.1 port."""
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    config = work / ".mcpx.json"
    config.write_text(json.dumps({"mcpServers": servers, "settings": settings or {}}))
    argv = [PY, "-m", "mcpx", "daemon", "--state-dir", str(state), "--config", str(config)]
    argv += ["--port", "0", "--address", LOOPBACK]
    proc = subprocess.Popen(argv, env=clean_env(), start_new_session=True)
    try:
        wait_socket(str(state / "mcpx.sock"), proc)
        deadline = time.monotonic() + 60
        while not (state / "daemon.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        info = json.loads((state / "daemon.json").read_text())
        yield {
            "socket": str(state / "mcpx.sock"),
            "url": info["url"],
            "pid": info["pid"],
            "state": state,
            "config": config,
            # What `mcpx serve` and the CLI need to reach this daemon.
            "env": clean_env(MCPX_STATE_DIR=str(state), MCPX_CONFIG=str(config)),
        }
    finally:
        stop(proc)


@contextmanager
def fastmcp_http_proxy(where: str) -> Iterator[str]:
    """fastmcp's proxy over HTTP on ``where`` (a unix socket path, or a port number
    on 127.0.0.1); yields what the ``http`` worker takes as its target."""
    proc = subprocess.Popen(
        [str(FASTMCP_PY), WORKERS, "fastmcp-proxy", where, "--", *SERVER],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if where.isdigit():
            wait_port(int(where), proc)
            yield f"http://{LOOPBACK}:{where}"
        else:
            wait_socket(where, proc)
            yield where
    finally:
        stop(proc)


@contextmanager
def mcp_proxy(server: list[str] = SERVER) -> Iterator[str]:
    """mcp-proxy 0.13 on 127.0.0.1 fronting the stdio upstream; yields its base url.

    Its Streamable HTTP endpoint is ``/mcp`` (SSE is ``/sse``), on ``--port``; sessions
    are stateful unless ``--stateless``. It runs on the SDK 1.x (``mcp<2``), as a client
    of the same upstream (SDK 2.3.0) over stdio with the legacy handshake.
    """
    port = free_port()
    argv = [str(MCP_PROXY), "--host", LOOPBACK, "--port", str(port), "--log-level", "WARNING"]
    proc = subprocess.Popen(
        [*argv, "--", *server],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_port(port, proc)
        yield f"http://{LOOPBACK}:{port}"
    finally:
        stop(proc)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
