"""Argument completion: the server's own answer, or mcpx's catalogue when it has none.

Invariants:

- A server that declared ``completions`` is asked; its answer is returned as sent.
- One that did not is never asked (a well-behaved one answers -32601, others answer
  anything): the reply comes from the names mcpx has catalogued for it, says
  ``source: "cache"`` and gives the reason.
- From the catalogue, a template variable's values are the values that variable takes
  in the server's listed resource URIs; a prompt argument has none to offer. Values
  start with what the client typed, at most 100 (CompleteResult's limit).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["declares_completions", "from_catalogue"]

_LIMIT: Final = 100
_EXPRESSION: Final = re.compile(r"\{([+#./;?&]?)([^{}]*)\}")


def declares_completions(entry: dict[str, Any]) -> bool:
    # An entry written before capabilities were catalogued: ask, as before.
    caps = entry.get("capabilities")
    return not isinstance(caps, dict) or caps.get("completions") is not None


def from_catalogue(
    server: str, entry: dict[str, Any], ref: dict[str, Any], argument: dict[str, Any]
) -> dict[str, Any]:
    """A CompleteResult made from ``server``'s catalogue entry, tagged as such."""
    name, typed = str(argument.get("name", "")), str(argument.get("value", ""))
    values: list[str] = []
    if ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
        uris = [r["uri"] for r in entry.get("resources") or [] if isinstance(r.get("uri"), str)]
        values = _template_values(ref["uri"], name, uris)
    matching = [v for v in values if v.startswith(typed)]
    return {
        "completion": {
            "values": matching[:_LIMIT],
            "total": len(matching),
            "hasMore": len(matching) > _LIMIT,
        },
        "source": "cache",
        "reason": f"{server} did not declare completions; values come from its listed names",
    }


def _template_values(template: str, variable: str, uris: list[str]) -> list[str]:
    """The distinct values ``variable`` takes in the ``uris`` that fit ``template``."""
    pattern, groups = _pattern(template)
    if variable not in groups:
        return []
    seen: dict[str, None] = {}
    for uri in uris:
        match = pattern.fullmatch(uri)
        if match is not None and match.group(groups[variable]):
            seen[match.group(groups[variable])] = None
    return list(seen)


def _pattern(template: str) -> tuple[re.Pattern[str], dict[str, str]]:
    # Simple expansion only ({var}, {+var}): enough for the names a listing shows.
    parts: list[str] = []
    groups: dict[str, str] = {}
    last = 0
    for i, match in enumerate(_EXPRESSION.finditer(template)):
        parts.append(re.escape(template[last : match.start()]))
        operator, names = match.groups()
        group = f"v{i}"
        for var in names.split(","):
            groups.setdefault(var.strip().rstrip("*"), group)
        parts.append(f"(?P<{group}>.*?)" if operator == "+" else f"(?P<{group}>[^/?#]*?)")
        last = match.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.DOTALL), groups
