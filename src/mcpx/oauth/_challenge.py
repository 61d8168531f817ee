"""``WWW-Authenticate`` Bearer challenges (RFC 6750 §3, RFC 9728 §5.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["Challenge", "parse_challenge"]

# One auth-param: name=token or name="quoted string" (with \-escapes).
_PARAM: Final = re.compile(r'([A-Za-z0-9_\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))')
_SCHEME: Final = re.compile(r"(?:^|,)\s*([A-Za-z0-9_\-]+)(?=\s+[A-Za-z0-9_\-]+\s*=|\s*(?:,|$))")


@dataclass(frozen=True)
class Challenge:
    """The Bearer challenge's parameters that matter here."""

    bearer: bool = False
    error: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None


def parse_challenge(header: str | None) -> Challenge:
    """The Bearer challenge in a ``WWW-Authenticate`` value; ``bearer`` is False when there
    is none. Other schemes' parameters are ignored."""
    if not header:
        return Challenge()
    start = None
    for match in _SCHEME.finditer(header):
        if start is not None:
            header = header[start : match.start()]
            break
        if match.group(1).lower() == "bearer":
            start = match.end()
    else:
        if start is None:
            return Challenge()
        header = header[start:]
    params = {
        m.group(1).lower(): re.sub(r"\\(.)", r"\1", m.group(2))
        if m.group(2) is not None
        else m.group(3)
        for m in _PARAM.finditer(header)
    }
    return Challenge(
        bearer=True,
        error=params.get("error"),
        scope=params.get("scope") or None,
        resource_metadata=params.get("resource_metadata"),
    )
