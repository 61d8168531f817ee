"""``mcpx doctor``'s view of OAuth servers: their sign-in as the daemon knows it.

Doctor starts servers in the CLI's own process, which holds no tokens: an oauth server
would look broken there even when the daemon is signed in to it. So its sign-in is read
first: from the running daemon (``GET /v1/auth``), else from ``<state>/oauth.db`` opened
read-only. A server nobody signed in to is a problem whose fix is ``mcpx auth login``;
one signed in to is started with a copy of its access token only (no refresh token: a
refresh here would rotate the daemon's), and never one about to expire.

Invariant: nothing here shows or returns a token.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mcpx.config import ServerConfig

if TYPE_CHECKING:
    from mcpx.oauth import MemoryStore

__all__ = ["is_oauth", "oauth_states", "seeded_store"]

_FRESH: Final = 300.0  # seconds a copied access token must still be good for
_NOBODY: Final = "nobody has logged in"


def is_oauth(server: ServerConfig) -> bool:
    return server.url is not None and (server.auth or {}).get("type") == "oauth"


def oauth_states(
    servers: Mapping[str, ServerConfig], daemon_rows: list[dict[str, Any]] | None, state: Path
) -> dict[str, dict[str, Any]]:
    """Per oauth server: ``loggedIn``, ``why`` a login is needed, and where that was read
    (``daemon`` or ``store``)."""
    oauth = [s for s in servers.values() if is_oauth(s)]
    if not oauth:
        return {}
    if daemon_rows is not None:
        rows = {str(r.get("server")): r for r in daemon_rows}
        out = {}
        for server in oauth:
            row = rows.get(server.name) or {}
            needed = bool(row.get("needsLogin", True))
            why = (row.get("why") or _NOBODY) if needed else None
            out[server.name] = {"loggedIn": not needed, "why": why, "source": "daemon"}
        return out
    return {
        s.name: {
            "loggedIn": (held := _stored(s, state)) is not None,
            "why": None if held is not None else _NOBODY,
            "source": "store",
        }
        for s in oauth
    }


def _stored(server: ServerConfig, state: Path) -> Any:
    """The shared tokens ``<state>/oauth.db`` holds for ``server`` (read-only), or None."""
    from mcpx.oauth import SqliteStore, store_key

    path = state / "oauth.db"
    if not path.exists() or server.scope == "identity":
        return None
    try:
        store = SqliteStore(path, read_only=True)
    except sqlite3.Error:
        return None
    try:
        return store.tokens(store_key(server), "")
    except sqlite3.Error:  # no table yet: nothing stored
        return None
    finally:
        store.close()


def seeded_store(server: ServerConfig, state: Path) -> MemoryStore | None:
    """A store holding a copy of ``server``'s access token, fit to start it here; None
    when there is none fresh enough (the server is then not started by doctor)."""
    from mcpx.oauth import MemoryStore, store_key

    tokens = _stored(server, state)
    if tokens is None or tokens.expires_within(_FRESH):
        return None
    seed = MemoryStore()
    seed.save_tokens(store_key(server), "", dataclasses.replace(tokens, refresh_token=None))
    return seed
