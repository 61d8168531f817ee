"""The daemon's SQLite files in the state directory (questions, tasks).

Invariants: a file is created 0600 before SQLite opens it, and kept 0600, since what it
holds (questions, results) may carry secrets; the journal is WAL, so a reader never waits
for a writer; autocommit (``isolation_level=None``): transactions are explicit.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

__all__ = ["open_state_db"]


def open_state_db(path: Path) -> sqlite3.Connection:
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    os.chmod(path, 0o600)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    return db
