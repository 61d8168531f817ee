"""A JSON cache file in the state dir, written whole or not at all.

Invariants:
- Atomic: a temp file beside it, mode 0600, renamed over it; a reader sees the old
  document or the new one, never a part.
- Best-effort: a cache is never an authority, so a write that fails (the disk is full,
  the state dir is read-only) is one warning and ``False``, never an error for the call
  that led to it: an upstream still starts, a listing is still answered.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_state_json"]

log = logging.getLogger("mcpx.config")


def write_state_json(path: Path, doc: Any, *, indent: int | None = None) -> bool:
    """Write ``doc`` to ``path`` atomically; whether it was written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", dir=path.parent)
    except OSError as exc:
        log.warning("%s not written (kept in memory): %s", path.name, exc)
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=indent)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        log.warning("%s not written (kept in memory): %s", path.name, exc)
        return False
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
