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

__all__ = ["Asked", "DeclineEverything", "QuestionHandler"]


@dataclass(frozen=True)
class Asked:
    """Where a question came from: which server, in which era, on which call."""

    server: str
    revision: str
    call_id: str | int | None = None


class QuestionHandler(Protocol):
    def capabilities(self, revision: str) -> dict[str, Any]:
        """The client capabilities mcpx declares upstream for ``revision``."""
        ...

    async def answer(self, method: str, params: dict[str, Any], asked: Asked) -> dict[str, Any]:
        """The result for one question.

        Raises:
            McpError: the answer is an error (e.g. -32601 for an undeclared kind).
        """
        ...


class DeclineEverything:
    """A client that declared no capability: ``ping`` is answered, nothing else."""

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {}

    async def answer(self, method: str, params: dict[str, Any], asked: Asked) -> dict[str, Any]:
        if method == "ping":
            return {}
        raise MethodNotFound(f"mcpx declared no capability for {method}")
