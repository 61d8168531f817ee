"""The one interface every question from an upstream goes through.

A legacy server asks with a request on the wire (``sampling/createMessage``,
``elicitation/create``, ``roots/list``, ``ping``); a 2026-07-28 server asks in
an ``input_required`` result. Both reach ``QuestionHandler.answer`` with the
method and params, so the two eras can never answer the same question two
ways. The questions issue implements the real handler (native relay to the
host, the broker); the default here answers as a client that declared nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mcpx.wire import MethodNotFound

__all__ = ["DeclineEverything", "QuestionHandler", "QuestionOrigin"]


@dataclass(frozen=True)
class QuestionOrigin:
    """Where a question came from: which server, in which era, on which call, and on
    which of the server's instances (the pool's scope key; "" for the shared one)."""

    server: str
    revision: str
    call_id: str | int | None = None
    scope: str = ""


class QuestionHandler(Protocol):
    def capabilities(self, revision: str) -> dict[str, Any]:
        """The client capabilities mcpx declares upstream for ``revision``."""
        ...

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        """The result for one question.

        Raises:
            McpError: the answer is an error (e.g. -32601 for an undeclared kind).
        """
        ...


def narrowed(ours: dict[str, Any], host: dict[str, Any] | None) -> dict[str, Any]:
    """``ours`` cut down to what ``host`` declared too (None: no host to narrow by).

    mcpx must never declare upstream a capability its host did not: the upstream would
    ask, and only the host could answer. A sub-capability survives only where both sides
    have it; ``{}`` and ``true`` mean "declared, no settings".
    """
    if host is None:
        return ours
    out: dict[str, Any] = {}
    for key, value in ours.items():
        theirs = host.get(key)
        if theirs is None or theirs is False:
            continue
        if isinstance(value, dict) and isinstance(theirs, dict) and value:
            out[key] = narrowed(value, theirs)
        else:
            out[key] = value
    return out


class DeclineEverything:
    """A client that declared no capability: ``ping`` is answered, nothing else."""

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {}

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        if method == "ping":
            return {}
        raise MethodNotFound(f"mcpx declared no capability for {method}")
