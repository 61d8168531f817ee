"""The pool's own errors: a server name no config has, and a server with no free slot."""

from __future__ import annotations

from mcpx.client import UpstreamError

__all__ = ["PoolFull", "UnknownServer"]


class UnknownServer(KeyError):
    """No configured server has that name."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(name)

    def __str__(self) -> str:
        return f"no server named {self.name!r}; configured: {', '.join(self.known) or 'none'}"


class PoolFull(UpstreamError):
    """Every instance slot of a server is busy."""
