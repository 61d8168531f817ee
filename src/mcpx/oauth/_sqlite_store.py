"""The durable ``TokenStore``: ``<state>/oauth.db`` (SQLite, mode 0600, WAL).

Tokens are kept per (server key, user), client identities per (server key, issuer), as
``_store`` says. The rows hold secrets: nothing here logs or returns one outside the
values ``_model`` defines (whose reprs leave them out). One connection, used from the
daemon's event loop only; each write is one statement (autocommit).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mcpx.config import open_state_db

from ._model import ClientIdentity, Tokens

__all__ = ["SqliteStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tokens (key TEXT NOT NULL, user TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (key, user))",
    "CREATE TABLE IF NOT EXISTS clients (key TEXT NOT NULL, issuer TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (key, issuer))",
)


class SqliteStore:
    """A ``TokenStore`` that outlives the daemon."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """``read_only``: for another process than the daemon (``mcpx doctor``), which
        reads what is there and never writes (the file must exist)."""
        self.path = path
        if read_only:
            self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            return
        self._db = open_state_db(path)
        for statement in _SCHEMA:
            self._db.execute(statement)

    def close(self) -> None:
        self._db.close()

    def tokens(self, key: str, user: str) -> Tokens | None:
        row = self._db.execute(
            "SELECT data FROM tokens WHERE key = ? AND user = ?", (key, user)
        ).fetchone()
        return None if row is None else Tokens(**json.loads(row[0]))

    def save_tokens(self, key: str, user: str, tokens: Tokens) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO tokens (key, user, data) VALUES (?, ?, ?)",
            (key, user, json.dumps(asdict(tokens))),
        )

    def drop_tokens(self, key: str, user: str) -> None:
        self._db.execute("DELETE FROM tokens WHERE key = ? AND user = ?", (key, user))

    def client(self, key: str, issuer: str) -> ClientIdentity | None:
        row = self._db.execute(
            "SELECT data FROM clients WHERE key = ? AND issuer = ?", (key, issuer)
        ).fetchone()
        if row is None:
            return None
        data: dict[str, Any] = json.loads(row[0])
        data["redirect_uris"] = tuple(data.get("redirect_uris") or ())
        return ClientIdentity(**data)

    def save_client(self, key: str, issuer: str, client: ClientIdentity) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO clients (key, issuer, data) VALUES (?, ?, ?)",
            (key, issuer, json.dumps(asdict(client))),
        )
