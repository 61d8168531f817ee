"""The hosts connected right now, and what reaches them unasked.

Invariants:

- Every connection that can push (stdio, a legacy HTTP session) is registered for its
  lifetime; nothing is pushed to a connection that did not finish its handshake, nor
  in a revision it does not speak (the frame is spelled for the connection's own).
- A list change is relayed only where mcpx promised it: ``tools`` for the pass-through
  servers (whose tools are listed as mcpx's), ``resources`` for any server (every
  server's resources are listed). mcpx never declares ``prompts.listChanged``, so a
  prompts change is never relayed. A connection's subscription filter has the last
  word (legacy: every kind; 2026-07-28: what its listen stream asked for).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import anyio

from mcpx import wire
from mcpx.shapes import downgrade_notification
from mcpx.spec import Era, Policy

from ._conn import Conn
from ._subscriptions import same_uri

__all__ = ["Audience", "Trace"]

# The daemon's log.frames tap: (revision, frame, method answered).
Trace = Callable[[str | None, Mapping[str, Any], str | None], None]

log = logging.getLogger("mcpx.server")

_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


class Audience:
    """The connected hosts of one daemon."""

    def __init__(self, policy: Policy, trace: Trace | None = None) -> None:
        self._policy = policy
        self._trace = trace
        self._conns: dict[int, Conn] = {}  # by id: a Conn is mutable, so unhashable
        # Set when the daemon stops: listen streams end gracefully on it.
        self.closing = anyio.Event()

    def close(self) -> None:
        self.closing.set()

    def join(self, conn: Conn) -> None:
        self._conns[id(conn)] = conn

    def leave(self, conn: Conn) -> None:
        self._conns.pop(id(conn), None)

    def __len__(self) -> int:
        return len(self._conns)

    def upstream_notified(
        self, server: str, method: str, passthrough: Iterable[str], *, every: bool = False
    ) -> int:
        """Relay an upstream's list change where it was promised; how many hosts got it.

        ``passthrough``: the daemon's pass-through servers (a connection may have its own).
        ``every``: every server's tools are listed to hosts (``mcp.surface`` full).
        """
        kind = _LIST_CHANGED.get(method)
        if kind is None or kind == "prompts":
            return 0
        default = tuple(passthrough)

        def wants(conn: Conn) -> bool:
            through = conn.passthrough if conn.passthrough is not None else default
            if kind == "tools" and not every and server not in through:
                return False  # this host's tool list did not change
            return _wants_list_changed(conn, kind)

        return self.push(method, None, wants)

    def resource_updated(self, server: str, uri: str) -> int:
        """Tell every host watching ``uri`` on ``server``, under the URI it subscribed
        with; how many were told."""
        sent = 0
        for conn in list(self._conns.values()):
            for named, (owner, watched) in list(conn.watching.items()):
                if owner == server and same_uri(watched, uri):
                    sent += self._push_one(conn, "notifications/resources/updated", {"uri": named})
        return sent

    def push(
        self,
        method: str,
        params: dict[str, Any] | None,
        wants: Callable[[Conn], bool] | None = None,
    ) -> int:
        """Send a notification to every host that can take it (and ``wants`` it)."""
        sent = 0
        for conn in list(self._conns.values()):
            if wants is None or wants(conn):
                sent += self._push_one(conn, method, params)
        return sent

    def _push_one(self, conn: Conn, method: str, params: dict[str, Any] | None) -> int:
        if conn.push is None or conn.revision is None:
            return 0  # no handshake yet, or nothing to push on
        spelled = downgrade_notification(method, params, conn.revision, self._policy)
        frame = wire.notification(method, spelled)
        try:
            conn.push(frame)
        except Exception:  # one broken host must not stop the others
            log.exception("push to %s failed", conn.identity)
            return 0
        if self._trace is not None:
            self._trace(conn.revision, frame, None)
        return 1


def _wants_list_changed(conn: Conn, kind: str) -> bool:
    # Legacy list changes are unsolicited; a 2026-07-28 stream names what it wants.
    return conn.era is Era.LEGACY or conn.subscriptions.wants_list_changed(kind)
