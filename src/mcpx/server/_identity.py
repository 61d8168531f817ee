"""Who a request is from: the scope its stateful instances and artifacts belong to.

Invariants:

- A client that names a session in ``_meta["dev.mcpx/session"]`` gets that session,
  prefixed ``named:`` so a chosen name can never collide with a transport-derived scope
  (``stdio:…`` or ``http:…``) another client owns.
- Otherwise the transport decides: the process on stdio, the ``Mcp-Session-Id`` on a
  legacy HTTP session. A 2026-07-28 request has none (None): its stdio process is not a
  session, and the caller gives it a scope of its own (statelessness, S-LIFE-14).
- A legacy POST outside a session has no identity either: nothing ties two such POSTs.
- An authenticated caller (``Conn.principal``) is its own identity where the request
  names none, and a session it names is its own (``<principal>|named:…``): one caller
  never reaches another's tasks, questions or instances by naming them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mcpx.config import DEFAULT_PROFILE
from mcpx.spec import MODERN
from mcpx.wire import InvalidParams

from ._conn import Conn

if TYPE_CHECKING:
    from mcpx.config import Settings

__all__ = ["SESSION_META", "identity_for", "profile_for"]

SESSION_META: Final = "dev.mcpx/session"


def identity_for(meta: Mapping[str, Any] | None, conn: Conn, *, process: str) -> str | None:
    """The identity of a request on ``conn``; None means "a scope of its own".

    ``conn`` is the view the request is served under (``Conn.for_request``);
    ``process`` names the stdio process, e.g. ``"stdio:4242"``.

    Raises:
        InvalidParams: ``dev.mcpx/session`` is present but not a non-empty string.
    """
    named = _named(meta)
    if named is not None:
        return f"named:{named}" if conn.principal is None else f"{conn.principal}|named:{named}"
    if conn.revision in MODERN:
        return conn.principal
    if conn.transport == "stdio":
        return process
    return None if conn.session_id is None else f"http:{conn.session_id}"


def profile_for(conn: Conn, settings: Settings) -> str:
    """The profile a request on ``conn`` is served in: the host always has one, its own,
    else the daemon's, else the default."""
    return conn.profile or str(settings["mcp.profile"]) or DEFAULT_PROFILE


def _named(meta: Mapping[str, Any] | None) -> str | None:
    if meta is None or SESSION_META not in meta:
        return None
    value = meta[SESSION_META]
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: _meta[{SESSION_META!r}] must be a non-empty string")
    return value
