"""Revisions, eras, the spec policy and the revision matrix, as data.

Sans-IO: nothing here does I/O or imports an async library.
"""

from ._matrix import (
    MATRIX,
    RELATED_TASK,
    TASKS_EXTENSION,
    Row,
    defined,
    protocol_json,
    removed,
    rows,
)
from ._policy import Policy, PolicyError
from ._revisions import (
    BATCHED,
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
    "BATCHED",
    "HEADERLESS",
    "LEGACY",
    "MATRIX",
    "MODERN",
    "NEWEST",
    "OLDEST",
    "RELATED_TASK",
    "REVISIONS",
    "TASKS_EXTENSION",
    "Era",
    "Policy",
    "PolicyError",
    "Row",
    "UnknownRevisionError",
    "at_or_after",
    "before",
    "between",
    "defined",
    "era_of",
    "index",
    "only",
    "parse_revision",
    "protocol_json",
    "removed",
    "rows",
]
