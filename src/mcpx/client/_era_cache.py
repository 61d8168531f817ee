"""The upstream era cache: one probe per server configuration, not per start.

The 2026-07-28 versioning page makes era a property of the server; mcpx
remembers it per configuration (a hash of what defines the process or the
endpoint), in memory and in ``<state>/upstream-eras.json``.

Invariants:
- The file is written atomically (temp file + rename), mode 0600, with a
  format version. A missing, unreadable, corrupt or other-version file is
  treated as empty and rewritten on the next store: it is a cache, never an
  authority.
- ``force-*`` preferences never read or write it (the caller's concern).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from mcpx.config import ServerConfig, write_state_json

__all__ = ["FORMAT", "EraCache", "Remembered", "config_key"]

log = logging.getLogger("mcpx.client")

FORMAT: Final = 1


def config_key(server: ServerConfig) -> str:
    """A stable hash of what makes two configurations the same upstream."""
    what = {
        "transport": server.transport,
        "command": server.command,
        "args": list(server.args),
        "env": dict(sorted(server.env.items())),
        "cwd": server.cwd,
        "url": server.url,
        "headers": dict(sorted(server.headers.items())),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Remembered:
    """What a probe found: the era, the revision, and for HTTP which transport."""

    era: str
    revision: str
    transport: str
    server: str
    at: float


class EraCache:
    """Eras by configuration key; ``path`` None keeps it in memory only."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._eras: dict[str, Remembered] | None = None

    def get(self, server: ServerConfig) -> Remembered | None:
        return self._load().get(config_key(server))

    def put(self, server: ServerConfig, era: str, revision: str, transport: str) -> None:
        eras = self._load()
        eras[config_key(server)] = Remembered(era, revision, transport, server.name, time.time())
        self._save(eras)

    def forget(self, server: ServerConfig) -> None:
        eras = self._load()
        if eras.pop(config_key(server), None) is not None:
            self._save(eras)

    def _load(self) -> dict[str, Remembered]:
        if self._eras is None:
            self._eras = self._read()
        return self._eras

    def _read(self) -> dict[str, Remembered]:
        if self.path is None:
            return {}
        try:
            doc: Any = json.loads(self.path.read_text(encoding="utf-8"))
            if doc.get("format") != FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, not {FORMAT}")
            return {k: Remembered(**v) for k, v in doc["eras"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning("ignoring the era cache %s (%s); it will be rewritten", self.path, exc)
            return {}

    def _save(self, eras: dict[str, Remembered]) -> None:
        if self.path is None:
            return
        doc = {"format": FORMAT, "eras": {k: asdict(v) for k, v in sorted(eras.items())}}
        write_state_json(self.path, doc, indent=1)
