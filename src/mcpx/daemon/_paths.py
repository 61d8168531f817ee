"""Where the daemon keeps its files, how it writes its log, and the embedded default upstream.

Light on purpose: every CLI command reads these to find the daemon.

The log (``daemon.log``) is JSON lines, each written whole with one ``write`` to a file
opened ``O_APPEND``. Writing it never raises nor prints: a full disk cannot stop the
daemon. A line that does not fit (a part written is taken back: the log stays whole
lines) is held, up to ``_HOLD`` bytes, and written in order once lines fit again; past
that, lines are dropped and counted, and after the held ones a warning says how many.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcpx.config import ServerConfig

__all__ = ["EX_STATE_FULL", "DaemonPaths", "demo_server", "setup_log"]

EX_STATE_FULL: Final = 7  # the daemon's exit status: its state dir's disk is full

log = logging.getLogger("mcpx.daemon")

_HOLD: Final = 1 << 16  # bytes of log lines kept while they do not fit, written later


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
    def upstream_groups(self) -> Path:
        """The process groups of the stdio upstreams running, one file each (``transport``)."""
        return self.state / "upstream-groups"

    @property
    def tasks(self) -> Path:
        """Detached calls' outcomes, for callers that come back after a restart."""
        return self.state / "tasks.db"


def demo_server() -> ServerConfig:
    """The embedded default upstream: mcpx's own bundled demo server."""
    return ServerConfig(
        name="demo", transport="stdio", command=sys.executable, args=("-m", "mcpx", "demo-server")
    )


def setup_log(path: Path, level: str) -> None:
    """Every logger's records at ``level`` or above go to ``path`` (0600) as JSON lines."""
    handler = _LogFile(path)
    handler.setFormatter(_JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel({"debug": 10, "info": 20, "notice": 25, "warning": 30}.get(level, 40))


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        server = getattr(record, "server", None)
        if server is not None:
            doc["server"] = server
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


class _LogFile(logging.Handler):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.chmod(path, 0o600)
        self._path = path
        self._held: deque[bytes] = deque()  # lines that did not fit, oldest first
        self._held_bytes = 0
        self._lost = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "replace")
        except Exception:  # a bad record (its arguments): said as logging says it
            self.handleError(record)
            return
        if self._catch_up() and self._write(line):
            return
        if self._held_bytes + len(line) <= _HOLD:
            self._held.append(line)
            self._held_bytes += len(line)
        else:
            self._lost += 1

    def _catch_up(self) -> bool:
        """Write the lines held, then how many were lost; whether all of it fitted."""
        while self._held:
            if not self._write(self._held[0]):
                return False
            self._held_bytes -= len(self._held.popleft())
        if self._lost:
            said = "%d log lines were lost: the state dir's disk is full (%s), or was"
            note = logging.LogRecord(
                log.name, logging.WARNING, __file__, 0, said, (self._lost, self._path.parent), None
            )
            if not self._write((self.format(note) + "\n").encode()):
                return False
            self._lost = 0
        return True

    def _write(self, data: bytes) -> bool:
        try:
            written = os.write(self._fd, data)
        except OSError:
            return False
        if written < len(data):  # a part of the line: taken back, the log stays lines
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            return False
        return True
