"""Asking a host an upstream's question, in the host's own revision.

Invariants:

- A host is asked only what it declared: form or url elicitation, sampling (with
  ``tools`` or ``context`` only where declared too), roots. Anything else is left to
  the broker (the caller of ``can`` decides).
- The question is spelled for the host's revision (the transport traces the frame),
  and sent conservatively: an elicitation's schema keeps only the keys the restricted
  schema defines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from mcpx import spec
from mcpx.ops import HostAsker

from ._conn import Conn

__all__ = ["host_asker"]

JSON = dict[str, Any]
_SCHEMA_KEYS: Final = frozenset({"$schema", "type", "properties", "required"})


def host_asker(view: Conn, rev: str, ask: Callable[[str, JSON], Awaitable[JSON]]) -> HostAsker:
    """How the host behind ``view`` is asked, through its transport's ``ask``."""

    def can(method: str, params: Mapping[str, Any]) -> bool:
        if method == "elicitation/create":
            mode = params.get("mode", "form")
            return view.declared("elicitation.url" if mode == "url" else "elicitation.form")
        if method == "sampling/createMessage":
            needs_tools = bool(params.get("tools"))
            needs_context = params.get("includeContext") not in (None, "none")
            return (
                view.declared("sampling")
                and (not needs_tools or view.declared("sampling.tools"))
                and (not needs_context or view.declared("sampling.context"))
            )
        if method == "roots/list":
            return view.declared("roots")
        return False

    async def asking(method: str, params: JSON) -> JSON:
        spelled = _spelled(method, params, rev)
        return await ask(method, spelled)

    return HostAsker(can=can, ask=asking)


def _spelled(method: str, params: JSON, rev: str) -> JSON:
    if method != "elicitation/create":
        return params
    out = dict(params)
    # A form elicitation names no mode before url mode existed (2025-11-25).
    if out.get("mode") == "form" and not spec.defined(
        "capability", "elicitation.form", rev, "client"
    ):
        del out["mode"]
    schema = out.get("requestedSchema")
    if isinstance(schema, Mapping):
        # The restricted schema has four keys; servers add more (an SDK adds "title").
        out["requestedSchema"] = {k: v for k, v in schema.items() if k in _SCHEMA_KEYS}
    return out
