"""Revisions, eras, the spec policy and the revision matrix, as data.

Sans-IO: nothing here does I/O or imports an async library.
"""

from ._policy import Policy, PolicyError
from ._revisions import (
    HEADERLESS,
    LEGACY,
    MODERN,
    NEWEST,
    OLDEST,
    REVISIONS,
    Era,
    UnknownRevisionError,
    at_or_after,
    before,
    between,
    era_of,
    index,
    only,
    parse_revision,
)

__all__ = [
    "HEADERLESS",
    "LEGACY",
    "MODERN",
    "NEWEST",
    "OLDEST",
    "REVISIONS",
    "Era",
    "Policy",
    "PolicyError",
    "UnknownRevisionError",
    "at_or_after",
    "before",
    "between",
    "era_of",
    "index",
    "only",
    "parse_revision",
]
