"""A real mcpx daemon for tests: its own process, a temporary state dir, an
ephemeral loopback port, a config file of real upstream servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .peers import bad_server_command, sdk_server_command
from .schemas import frame_errors
from .waiting import wait_until

# The revision a frame sent before any revision was judged (an HTTP refusal) is held to.
_UNJUDGED = "2025-11-25"


def sdk_entry(version: str = "1.23.3") -> dict[str, Any]:
    argv = sdk_server_command(version, "stdio")
    return {"command": argv[0], "args": argv[1:]}


def bad_entry(mode: str) -> dict[str, Any]:
    argv = bad_server_command(mode)
    return {"command": argv[0], "args": argv[1:]}


def legacy_session(
    mcp: httpx.Client, capabilities: dict[str, Any], revision: str = "2025-11-25"
) -> dict[str, str]:
    """A legacy ``/mcp`` session, initialized (only then is a host put questions:
    S-LIFE-6); the headers its requests carry."""
    params = {"protocolVersion": revision, "capabilities": capabilities}
    params["clientInfo"] = {"name": "t", "version": "1"}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": revision}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


@dataclass
class Daemon:
    home: Path
    state: Path
    config: Path
    proc: subprocess.Popen[bytes]
    info: dict[str, Any]

    def http(self) -> httpx.Client:
        transport = httpx.HTTPTransport(uds=self.info["socket"])
        return httpx.Client(transport=transport, base_url="http://mcpx", timeout=120)

    def env(self) -> dict[str, str]:
        """An environment for CLI runs that reach this daemon."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
        return {**clean, "MCPX_STATE_DIR": str(self.state), "MCPX_CONFIG": str(self.config)}

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcpx", *args],
            cwd=self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    @property
    def frames_path(self) -> Path:
        return self.state.parent / "frames.jsonl"

    def sent_frames(self) -> list[dict[str, Any]]:
        """Every frame the daemon sent a host (its log.frames trace), in order."""
        if not self.frames_path.exists():
            return []
        # Split on newlines only: JSON may carry U+2028 or U+0085 raw, which splitlines()
        # would also cut at.
        text = self.frames_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.split("\n") if line.strip()]

    def open_question(self, message: str, limit: float = 60) -> dict[str, Any]:
        """The broker's open question whose message is ``message``, once it is there
        (within ``limit`` seconds)."""

        def found() -> list[dict[str, Any]]:
            with self.http() as api:
                listed = api.get("/v1/questions").json()["questions"]
            return [q for q in listed if q["params"].get("message") == message]

        [question] = wait_until(found, timeout=limit, message=f"a question {message!r}")
        return dict(question)

    def frame_problems(self) -> list[str]:
        """How each traced frame fails its revision's schema (strict)."""
        out = []
        for i, line in enumerate(self.sent_frames()):
            rev = line["rev"] or _UNJUDGED
            for p in frame_errors(line["frame"], rev, sender="server", answering=line["answering"]):
                out.append(f"frame {i} ({rev}, answering {line['answering']}): {p}\n  {line}")
        return out

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """``GET /metrics``, each sample by its name and sorted labels (read with
        prometheus_client's own parser)."""
        with self.http() as api:
            text = api.get("/metrics").text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def log_lines(self) -> list[dict[str, Any]]:
        path = self.state / "daemon.log"
        text = path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.split("\n") if line.strip()]


def _wait_up(proc: subprocess.Popen[bytes], info_path: Path, limit: float = 60) -> dict[str, Any]:
    def up() -> dict[str, Any] | None:
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with status {proc.returncode}")
        try:
            info: dict[str, Any] = json.loads(info_path.read_text())
        except (OSError, ValueError):  # not written yet, or being written
            return None
        if info.get("pid") != proc.pid:  # not yet this daemon's (a killed one's)
            return None
        transport = httpx.HTTPTransport(uds=info["socket"])
        try:
            with httpx.Client(transport=transport, base_url="http://mcpx") as client:
                return info if client.get("/health", timeout=2).status_code == 200 else None
        except httpx.HTTPError:
            return None

    return wait_until(up, timeout=limit, message="the daemon coming up")


@contextmanager
def running_daemon(
    tmp: Path, servers: Mapping[str, Any], settings: Mapping[str, Any] | None = None
) -> Iterator[Daemon]:
    """Start ``mcpx daemon`` on a fresh state dir; stop it by its pid."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    state = tmp / "state"
    config = home / ".mcpx.json"
    # Every frame the daemon sends a host is traced and checked strictly when it stops.
    traced = {"log.frames": str(tmp / "frames.jsonl"), **(settings or {})}
    config.write_text(json.dumps({"mcpServers": dict(servers), "settings": traced}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    argv = [sys.executable, "-m", "mcpx", "daemon", "--state-dir", str(state)]
    argv += ["--config", str(config), "--port", "0", "--address", "127.0.0.1"]
    proc = subprocess.Popen(argv, cwd=home, env=env, start_new_session=True)
    try:
        info = _wait_up(proc, state / "daemon.json")
        daemon = Daemon(home, state, config, proc, info)
        yield daemon
        problems = daemon.frame_problems()
        assert not problems, "frames the daemon sent are invalid:\n" + "\n".join(problems[:20])
        # An answer written ahead of its request's task is always the one dispatch made.
        log = state / "daemon.log"
        assert not log.exists() or "made ahead" not in log.read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
