"""Why a server's tool filters offer what they do, in words a person can act on.

``mcpx.tools`` admits, then ``mcpx.excludeTools`` removes: a tool matching both is hidden.
Notes name the overlaps (an exclude pattern cutting into an allow pattern), and, when the
server's tool list is known, the tools each rule hid and the patterns that match nothing
it lists (most often a typo, which would otherwise hide every tool or none).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from ._servers import ServerConfig

__all__ = ["filter_notes"]


def filter_notes(server: ServerConfig, listed: Sequence[str] | None = None) -> list[str]:
    """What to know about ``server``'s filters; ``listed``: its tools' names, if known."""
    notes = []
    for allow in server.tools:
        for exclude in server.exclude_tools:
            if fnmatch.fnmatchcase(allow, exclude) or fnmatch.fnmatchcase(exclude, allow):
                notes.append(
                    f"excludeTools {exclude!r} overlaps tools {allow!r}: a tool matching "
                    "both is hidden (excludeTools wins)"
                )
    if listed is None:
        return notes
    for key, patterns in (("tools", server.tools), ("excludeTools", server.exclude_tools)):
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(name, pattern) for name in listed):
                notes.append(f"{key} {pattern!r} matches none of the {len(listed)} tools listed")
    both = [
        name
        for name in listed
        if _matches(name, server.tools) and _matches(name, server.exclude_tools)
    ]
    if both:
        notes.append(f"admitted by tools, hidden by excludeTools: {', '.join(sorted(both))}")
    return notes


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)
