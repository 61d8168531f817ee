"""The MCP logging levels ordered by severity, and which of several is the most verbose."""

from __future__ import annotations

from typing import Final

from ._registry import LOG_LEVELS

__all__ = ["LEVEL_RANK", "more_verbose"]

# Least severe (most verbose) first: a lower rank lets more lines through.
LEVEL_RANK: Final = {level: i for i, level in enumerate(LOG_LEVELS)}


def more_verbose(*levels: str | None) -> str | None:
    """The most verbose of ``levels`` (None where none is set)."""
    known = [lv for lv in levels if lv in LEVEL_RANK]
    return min(known, key=LEVEL_RANK.__getitem__) if known else None
