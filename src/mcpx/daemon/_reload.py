"""The config file, followed: a server added, changed or removed takes effect without
a restart (which would end every connected ``mcpx serve`` host).

Invariants:

- The file is looked at every ``daemon.configPoll`` (its size and mtime; its text when
  they moved). A text that does not change what it says changes nothing.
- A file that does not load (bad JSON, an entry mcpx refuses, gone) changes nothing: the
  daemon goes on with what it had, and says why (log, ``config.rejected`` event). So does
  one that drops a server ``mcp.passthrough`` names.
- Only the servers apply live. A changed ``settings`` block is reported, and takes
  effect at ``mcpx restart``: sockets, pools and limits were built from the old values.
- After a change: the catalogue forgets the servers that changed or went, hosts are told
  of the lists that changed (where they were promised ``listChanged``), and a
  ``config.reloaded`` event names what changed.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcpx.config import ConfigError, ServerConfig, load_config_file

if TYPE_CHECKING:
    from mcpx.ops import Catalogue
    from mcpx.pool import Pool
    from mcpx.server import Audience

__all__ = ["ConfigFollower", "applying"]

log = logging.getLogger("mcpx.daemon")

_TOOLS_CHANGED = "notifications/tools/list_changed"
_RESOURCES_CHANGED = "notifications/resources/list_changed"


class ConfigFollower:
    """Applies the config file's servers to a running daemon when the file changes."""

    def __init__(
        self,
        path: Path,
        default: Mapping[str, ServerConfig],
        passthrough: tuple[str, ...],
        apply: Callable[[Mapping[str, ServerConfig]], dict[str, list[str]]],
        announce: Callable[[str, dict[str, Any]], object],
    ) -> None:
        """``default``: the servers when the file names none (the embedded demo);
        ``apply``: the pool's; ``announce(kind, data)``: an event for /v1/events."""
        self.path = path
        self._default = dict(default)
        self._passthrough = passthrough
        self._apply = apply
        self._announce = announce
        self._seen = self._stat()
        self._digest = self._text_digest()
        self._settings = self._file_settings()

    async def follow(self, poll: float) -> None:
        """Look every ``poll`` seconds, for as long as the daemon runs."""
        while True:
            await anyio.sleep(poll)
            self.check()

    def check(self) -> dict[str, Any] | None:
        """Apply the file if it changed; the ``config.reloaded`` data, if it applied."""
        seen = self._stat()
        if seen == self._seen:
            return None
        self._seen = seen
        digest = self._text_digest()
        if digest == self._digest:
            return None  # touched, or saved unchanged
        try:
            loaded = load_config_file(self.path)
        except ConfigError as exc:
            self._reject(str(exc), digest)
            return None
        # The embedded default stands in only for a file that names no server at all
        # (one whose servers are all disabled offers none).
        servers = dict(loaded.servers) if loaded.servers or loaded.disabled else self._default
        lost = [name for name in self._passthrough if name not in servers]
        if lost:
            reason = (
                f"{self.path}: mcp.passthrough names {', '.join(lost)}, which the file no "
                "longer configures"
            )
            self._reject(reason, digest)
            return None
        self._digest = digest
        changes = self._apply(servers)
        settings = dict(loaded.settings)
        if settings != self._settings:
            changed = sorted(
                k for k in {*settings, *self._settings} if settings.get(k) != self._settings.get(k)
            )
            changes["settingsAtRestart"] = changed
            log.warning(
                "config %s: settings %s changed; they take effect at `mcpx restart`",
                self.path,
                ", ".join(changed),
            )
        data = {"path": str(self.path), **changes}
        log.info("config %s reloaded: %s", self.path, data)
        self._announce("config.reloaded", data)
        return data

    def _reject(self, reason: str, digest: str | None) -> None:
        self._digest = digest  # said once, not at every look
        log.error("config not reloaded, the daemon goes on as it was: %s", reason)
        self._announce("config.rejected", {"path": str(self.path), "error": reason})
        return None

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _text_digest(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError:
            return None

    def _file_settings(self) -> dict[str, object]:
        try:
            return dict(load_config_file(self.path).settings)
        except ConfigError:
            return {}


def applying(
    pool: Pool,
    catalogue: Catalogue,
    audience: Audience,
    passthrough: Iterable[str],
    *,
    every: bool = False,
) -> Callable[[Mapping[str, ServerConfig]], dict[str, list[str]]]:
    """The follower's ``apply``: the pool's, then what that makes stale. Hosts hear of
    the resource list once (every server's resources are in it); of a tool list, where
    the server is passed through to them (or ``every`` server's tools are listed)."""
    through = tuple(passthrough)

    def apply(servers: Mapping[str, ServerConfig]) -> dict[str, list[str]]:
        changes = pool.apply(servers)
        for name in (*changes["removed"], *changes["changed"]):
            catalogue.invalidate(name)
        touched = [*changes["added"], *changes["removed"], *changes["changed"]]
        if touched:
            audience.upstream_notified(touched[0], _RESOURCES_CHANGED, through)
        for server in touched:
            audience.upstream_notified(server, _TOOLS_CHANGED, through, every=every)
        return changes

    return apply
