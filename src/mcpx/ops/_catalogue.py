"""The on-disk catalogue of what each server offers, so discovery needs no upstream.

Per server: tools, prompts, resources and templates as last listed, the era
and revision, when, and the error if listing failed. Refreshed when asked
(``refresh``), when a server is listed for the first time, and after its
``list_changed`` (which drops the entry). Stored in ``<state>/catalogue.json``
(atomic write, mode 0600); a missing or unreadable file is an empty catalogue.
A broken server is listed with its error instead of hiding the rest.

What is handed out holds only the tools the server's filters offer (``mcpx.tools``,
``mcpx.excludeTools``); the file keeps the whole listing, so a filter changed while the
daemon was down applies to what it reads back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from mcpx import wire
from mcpx.client import UpstreamError
from mcpx.config import ServerConfig, write_state_json
from mcpx.pool import Pool, call_budget

__all__ = ["Catalogue", "ToolsByName"]

log = logging.getLogger("mcpx.ops")

_FORMAT = 1
# A listing this recent is not repeated when an instance starts.
_FRESH_SECONDS = 5.0


class ToolsByName:
    """A listing's tools by name: ``first`` and ``last`` differ only for a name an
    upstream lists twice."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        named = [(t["name"], t) for t in tools if isinstance(t.get("name"), str)]
        self.last: dict[str, dict[str, Any]] = dict(named)
        self.first: dict[str, dict[str, Any]] = dict(reversed(named))


class Catalogue:
    def __init__(self, path: Path | None, pool: Pool) -> None:
        self.path = path
        self.pool = pool
        self._entries: dict[str, dict[str, Any]] = self._read()
        self._locks: dict[str, anyio.Lock] = {}
        # Counts every change to what ``settled`` says (an entry stored or dropped, a
        # listing begun or ended), so that whoever keeps something judged from it can
        # tell at once that it still holds.
        self.version = 0
        # Per server: the stored entry, the config it was filtered for, the filtered copy
        # (the same object while neither changes: pass-through indexes by identity).
        self._offered: dict[str, tuple[dict[str, Any], ServerConfig, dict[str, Any]]] = {}
        # Per server: an entry handed out and its tools by name, so that a call finds its
        # tool without walking every listed one (an entry is replaced, never edited).
        self._named: dict[str, tuple[dict[str, Any], ToolsByName]] = {}

    async def entry(self, server: str, *, refresh: bool = False) -> dict[str, Any]:
        """What ``server`` offers (from disk unless asked to refresh or never listed).

        Raises:
            UnknownServer: no such server.
        """
        self.pool.server(server)
        if not refresh and (settled := self.settled(server)) is not None:
            return settled  # no listing under way (the common case)
        lock = self._locks.get(server)
        if lock is None:
            lock = self._locks[server] = anyio.Lock()
        async with lock:
            if refresh or server not in self._entries:
                with self._changing():
                    self._entries[server] = await self._list(server)
                self._save()
        return self._offer(server, self._entries[server])

    def settled(self, server: str) -> dict[str, Any] | None:
        """What ``entry`` gives now without waiting; None: it would list first (never
        listed, or a listing under way), or no such server."""
        known = self._entries.get(server)
        if known is None or server not in self.pool.servers:
            return None
        lock = self._locks.get(server)
        return self._offer(server, known) if lock is None or not lock.locked() else None

    def _offer(self, server: str, entry: dict[str, Any]) -> dict[str, Any]:
        """``entry`` with only the tools the server's filters offer."""
        config = self.pool.servers.get(server)
        if config is None or not config.filtered or not entry.get("tools"):
            return entry
        known = self._offered.get(server)
        if known is not None and known[0] is entry and known[1] is config:
            return known[2]
        tools = [t for t in entry["tools"] if config.offers_tool(str(t.get("name")))]
        shown = {**entry, "tools": tools}
        self._offered[server] = (entry, config, shown)
        return shown

    async def entries(
        self, names: list[str], *, refresh: bool = False
    ) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            out[name] = await self.entry(name, refresh=refresh)
        return out

    def server_started(self, server: str) -> None:
        """A fresh instance: list it again in the background, unless just listed."""
        entry = self._entries.get(server)
        if entry is not None and time.time() - entry.get("refreshedAt", 0) < _FRESH_SECONDS:
            return
        lock = self._locks.get(server)
        if lock is not None and lock.locked():
            return  # a listing is under way (it is what started the instance)
        self.pool.spawn(self._refresh_quietly, server)

    async def _refresh_quietly(self, server: str) -> None:
        lock = self._locks.setdefault(server, anyio.Lock())
        async with lock:
            with self._changing():
                self._entries[server] = await self._list(server)
            self._save()

    def listed(self, server: str) -> dict[str, Any]:
        """The stored entry as the server listed it, before its filters."""
        return self._entries.get(server) or {}

    def tools_by_name(self, server: str, entry: dict[str, Any]) -> ToolsByName:
        """``entry``'s tools by name (``entry``: as ``entry`` or ``known`` handed it out)."""
        named = self._named.get(server)
        if named is None or named[0] is not entry:
            named = self._named[server] = (entry, ToolsByName(entry.get("tools") or []))
        return named[1]

    def known(self, server: str) -> dict[str, Any]:
        """The stored entry, without listing anything."""
        entry = self._entries.get(server)
        return self._offer(server, entry) if entry else {}

    def invalidate(self, server: str) -> None:
        if self._entries.pop(server, None) is not None:
            self.version += 1
            self._save()

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """A listing under way (its lock held): ``settled`` says None until it ends."""
        self.version += 1
        try:
            yield
        finally:
            self.version += 1

    async def _list(self, server: str) -> dict[str, Any]:
        budget = call_budget(self.pool.settings)
        entry: dict[str, Any] = {"refreshedAt": time.time(), "error": None}
        try:
            inst = await self.pool.instance(server)
            session = inst.session
            assert session is not None and session.negotiated is not None
            caps = session.negotiated.capabilities
            entry["era"] = session.negotiated.era.value
            entry["revision"] = session.negotiated.revision
            entry["serverInfo"] = session.negotiated.server_info
            entry["capabilities"] = caps
            entry["tools"] = await session.list_tools(timeout=budget) if "tools" in caps else []
            entry["prompts"] = (
                await session.list_prompts(timeout=budget) if "prompts" in caps else []
            )
            has_resources = "resources" in caps
            entry["resources"] = (
                await session.list_resources(timeout=budget) if has_resources else []
            )
            entry["templates"] = (
                await session.list_resource_templates(timeout=budget) if has_resources else []
            )
        except (UpstreamError, wire.McpError) as exc:
            log.warning("%s: listing failed: %s", server, exc)
            entry["error"] = str(exc)
        return entry

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return {}
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            if doc.get("format") != _FORMAT:
                return {}
            return {k: v for k, v in doc["servers"].items() if isinstance(v, dict)}
        except (OSError, ValueError, KeyError, AttributeError):
            return {}

    def _save(self) -> None:
        if self.path is not None:
            write_state_json(self.path, {"format": _FORMAT, "servers": self._entries})
