"""Where the daemon keeps its files, and the embedded default upstream.

Light on purpose: every CLI command reads these to find the daemon.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from mcpx.config import ServerConfig

__all__ = ["DaemonPaths", "demo_server"]


@dataclass(frozen=True)
class DaemonPaths:
    state: Path

    @property
    def socket(self) -> Path:
        return self.state / "mcpx.sock"

    @property
    def stdio_socket(self) -> Path:
        """Raw newline-delimited JSON-RPC, one stdio host per connection (``mcpx serve``)."""
        return self.state / "mcpx-stdio.sock"

    @property
    def info(self) -> Path:
        return self.state / "daemon.json"

    @property
    def lock(self) -> Path:
        """Held (flock) by the running daemon for its lifetime: one per state dir."""
        return self.state / "daemon.lock"

    @property
    def starting(self) -> Path:
        """Held by a CLI process while it starts the daemon: one start at a time."""
        return self.state / "start.lock"

    @property
    def log(self) -> Path:
        return self.state / "daemon.log"

    @property
    def eras(self) -> Path:
        return self.state / "upstream-eras.json"

    @property
    def catalogue(self) -> Path:
        return self.state / "catalogue.json"

    @property
    def questions(self) -> Path:
        return self.state / "questions.db"

    @property
    def restarting(self) -> Path:
        """Made by ``mcpx restart`` before it stops the daemon: hosts are given back."""
        return self.state / "restarting"

    @property
    def tasks(self) -> Path:
        """Detached calls' outcomes, for callers that come back after a restart."""
        return self.state / "tasks.db"


def demo_server() -> ServerConfig:
    """The embedded default upstream: mcpx's own bundled demo server."""
    return ServerConfig(
        name="demo", transport="stdio", command=sys.executable, args=("-m", "mcpx", "demo-server")
    )
