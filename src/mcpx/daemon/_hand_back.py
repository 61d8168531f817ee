"""``mcpx restart`` without dropping a host: handed-off pipes go back to ``mcpx serve``.

A host on ``mcpx serve`` gave the daemon its pipes. A plain stop closes them and the host
sees its server exit. A restart (``<state>/restarting`` present when the stop begins)
hands them back instead: the daemon stops reading the host at once, answers what it had
read, and sends the shim ``RESUME <json>``: what the host told it (revision, capabilities,
client info, log level, subscriptions) and the bytes it had read but not served. The shim
hands its pipes to the next daemon with that state (and its own options, as at first),
which serves the host as if nothing happened: no second ``initialize`` (the host would
never send one).

Invariants:

- Nothing the host wrote is lost or served twice: reading stops on a line boundary of
  what was served, and every byte read past it travels in ``unread``; what the host
  writes meanwhile waits in its pipe.
- Every request read before the stop is answered by the old daemon (its calls get
  ``daemon.stopGrace``), before the shim is told.
- Questions the old daemon had put to the host are gone with it (the calls that asked
  were ended); the host's late answers reach the new daemon as unknown ids, ignored.
- Relayed connections (no hand-off) end as at a stop: they own no pipes to give back.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

import anyio

from mcpx.server import Conn

__all__ = ["RESUME", "HandBacks", "conn_state", "restore_conn", "resume_line"]

# The daemon's line to the shim of a hand-off: take the pipes back, with this state.
RESUME: Final = b"MCPX-STDIO-RESUME "


class _Handing(Protocol):
    def hand_back(self) -> None: ...


class HandBacks:
    """The handed-off hosts of this daemon, given back together when it restarts."""

    def __init__(self) -> None:
        self.restarting = False
        self._live: set[_Handing] = set()
        self._none_left = anyio.Event()
        self._none_left.set()

    def join(self, channel: _Handing) -> None:
        self._live.add(channel)
        self._none_left = anyio.Event()
        if self.restarting:
            channel.hand_back()  # came in while the daemon stops: straight back

    def leave(self, channel: _Handing) -> None:
        self._live.discard(channel)
        if not self._live:
            self._none_left.set()

    def begin(self) -> None:
        """The daemon restarts: every host stops being read now."""
        self.restarting = True
        for channel in list(self._live):
            channel.hand_back()

    async def wait(self, limit: float) -> None:
        """Until every host was given back (its answers written, its shim told)."""
        with anyio.move_on_after(limit):
            await self._none_left.wait()


def conn_state(conn: Conn, unread: bytes) -> dict[str, Any]:
    """What the next daemon needs to go on serving ``conn``'s host."""
    return {
        "revision": conn.revision,
        "capabilities": conn.capabilities,
        "clientInfo": conn.client_info,
        "logLevel": conn.log_level,
        "initialized": conn.initialized,
        "listChanged": sorted(conn.subscriptions.list_changed),
        "uris": sorted(conn.subscriptions.uris),
        "unread": base64.b64encode(unread).decode(),
    }


def restore_conn(conn: Conn, state: Mapping[str, Any]) -> tuple[list[str], bytes]:
    """``state`` onto a fresh ``conn``; the URIs to subscribe again, and the unread bytes.

    Raises:
        ValueError: ``state`` is not one ``conn_state`` made.
    """
    revision = state.get("revision")
    if revision is not None and not isinstance(revision, str):
        raise ValueError("revision")
    conn.revision = revision
    conn.capabilities = dict(state.get("capabilities") or {})
    info = state.get("clientInfo")
    conn.client_info = dict(info) if isinstance(info, Mapping) else None
    level = state.get("logLevel")
    conn.log_level = level if isinstance(level, str) else None
    conn.initialized = bool(state.get("initialized"))
    conn.subscriptions.list_changed = {str(k) for k in state.get("listChanged") or []}
    uris = [str(u) for u in state.get("uris") or []]
    unread = base64.b64decode(str(state.get("unread") or ""), validate=True)
    return uris, unread


def resume_line(state: Mapping[str, Any]) -> bytes:
    return RESUME + json.dumps(state, separators=(",", ":")).encode() + b"\n"
