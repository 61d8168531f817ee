"""What a CLI run against a daemon elsewhere (``daemon.endpoint``) is given in tests."""

from __future__ import annotations

import os
from pathlib import Path


def client_env(tmp: Path, endpoint: str, **extra: str) -> tuple[dict[str, str], Path]:
    """An environment with an empty state dir of its own, no config, and ``endpoint``;
    the working directory to run in."""
    home = tmp / "client"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {"MCPX_STATE_DIR": str(tmp / "client-state"), "MCPX_DAEMON_ENDPOINT": endpoint}
    return env | extra, home
