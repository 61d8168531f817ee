"""Rows downgrade needs that the revision matrix does not hold yet.

Invariant: this is the only place in ``shapes`` that names a revision. Each
entry is a row asked for in ``mcpx.spec._matrix``; when the matrix gains it,
the entry goes and its caller asks ``mcpx.spec.defined`` instead.
"""

from __future__ import annotations

from typing import Final

from mcpx import spec

__all__ = ["PENDING_ROWS", "pending"]

# name -> floor (first revision that defines it).
PENDING_ROWS: Final = {
    # SEP-2106: structuredContent may be any JSON value, not only an object.
    "CallToolResult.structuredContent[any]": "2026-07-28",
    # SEP-2106: outputSchema may be any schema, not only a root type:"object".
    "Tool.outputSchema[any]": "2026-07-28",
    # SEP-2575: the result _meta key naming the server (ResultMetaObject).
    "ResultMetaObject.io.modelcontextprotocol/serverInfo": "2026-07-28",
    # DiscoverResult is a CacheableResult; the matrix lists the other five only.
    "DiscoverResult.ttlMs": "2026-07-28",
    "DiscoverResult.cacheScope": "2026-07-28",
}


def pending(name: str, rev: str) -> bool:
    """Whether ``rev`` defines the pending row ``name``.

    Raises:
        KeyError: ``name`` is not a pending row.
    """
    return spec.at_or_after(rev, PENDING_ROWS[name])
