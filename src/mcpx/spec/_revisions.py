"""The five MCP revisions mcpx speaks, their order and their eras.

Invariant: revisions are compared by their index in ``REVISIONS``, never as
strings. An unknown string is not a revision; ``parse_revision`` refuses it
with the list of valid ones, so every setting and every peer's declaration goes
through one gate.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "BATCHED",
    "HEADERLESS",
    "LEGACY",
    "MODERN",
    "NEWEST",
    "OLDEST",
    "REVISIONS",
    "Era",
    "UnknownRevisionError",
    "at_or_after",
    "before",
    "between",
    "era_of",
    "index",
    "only",
    "parse_revision",
]

# Oldest first. The index is the order; nothing else is.
REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

# What a request that declared nothing is spelled for: every shape this
# revision defines is understood by everything newer (guessing down is safe).
OLDEST: Final = "2024-11-05"
# A Streamable HTTP request without MCP-Protocol-Version: 2024-11-05 had no
# Streamable HTTP, and the later transport pages say to assume 2025-03-26.
HEADERLESS: Final = "2025-03-26"
NEWEST: Final = REVISIONS[-1]
# The revisions whose JSON-RPC has batches: 2025-03-26 added them, 2025-06-18 removed them.
BATCHED: Final = ("2025-03-26",)

_INDEX: Final = {rev: i for i, rev in enumerate(REVISIONS)}


class Era(StrEnum):
    """Legacy negotiates once (initialize); modern restates itself per request."""

    LEGACY = "legacy"
    MODERN = "modern"


LEGACY: Final = REVISIONS[:4]
MODERN: Final = REVISIONS[4:]


class UnknownRevisionError(ValueError):
    """A string that is not one of the five revisions."""

    def __init__(self, value: object, where: str = "") -> None:
        self.value = value
        place = f" in {where}" if where else ""
        super().__init__(
            f"unknown MCP revision {value!r}{place}; valid revisions: {', '.join(REVISIONS)}"
        )


def parse_revision(value: object, where: str = "") -> str:
    """Return ``value`` if it names a revision.

    Raises:
        UnknownRevisionError: ``value`` is not one of ``REVISIONS``.
    """
    if isinstance(value, str) and value in _INDEX:
        return value
    raise UnknownRevisionError(value, where)


def index(rev: str) -> int:
    """Position of ``rev`` in ``REVISIONS`` (oldest is 0).

    Raises:
        UnknownRevisionError: ``rev`` is not a revision.
    """
    try:
        return _INDEX[rev]
    except KeyError:
        raise UnknownRevisionError(rev) from None


def era_of(rev: str) -> Era:
    return Era.MODERN if index(rev) >= _INDEX[MODERN[0]] else Era.LEGACY


def at_or_after(rev: str, floor: str) -> bool:
    """``rev`` is ``floor`` or newer."""
    return index(rev) >= index(floor)


def before(rev: str, ceiling: str) -> bool:
    """``rev`` is older than ``ceiling``."""
    return index(rev) < index(ceiling)


def between(rev: str, oldest: str, newest: str) -> bool:
    """``oldest <= rev <= newest``, both ends included."""
    return index(oldest) <= index(rev) <= index(newest)


def only(rev: str, *revs: str) -> bool:
    """``rev`` is one of ``revs`` (each checked to be a revision)."""
    return index(rev) in {index(r) for r in revs}
