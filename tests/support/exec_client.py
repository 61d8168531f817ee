"""The generated typed client (``mcpx_tools``) in tests: the tools a real daemon lists,
the package written to a directory, and ``mypy --strict`` run on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .daemon import Daemon

__all__ = ["DEMO", "live_tools", "mypy_strict", "write_package"]

# mcpx's own demo server, on stdio.
DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


def live_tools(daemon: Daemon) -> dict[str, list[dict[str, Any]]]:
    """Each server's tools as the daemon lists them (``GET /v1/tools``)."""
    with daemon.http() as http:
        doc = http.get("/v1/tools").json()
    assert not doc["errors"], doc["errors"]
    tools: dict[str, list[dict[str, Any]]] = {}
    for tool in doc["tools"]:
        server = tool.pop("server")
        tools.setdefault(server, []).append(tool)
    return tools


def write_package(files: dict[str, str], where: Path) -> Path:
    """``files`` (relative path -> text) written under ``where``; ``where``."""
    for rel, text in files.items():
        path = where / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return where


def mypy_strict(where: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` on ``targets`` in ``where``, with nothing of this project's config."""
    (where / "mypy.ini").write_text("[mypy]\n")
    argv = [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini"]
    argv += ["--cache-dir", str(where / ".mypy_cache"), *targets]
    env = {**os.environ, "MYPYPATH": str(where)}
    return subprocess.run(
        argv, cwd=where, env=env, capture_output=True, text=True, timeout=300, check=False
    )
