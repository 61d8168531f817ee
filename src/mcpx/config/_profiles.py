"""Profiles: which configured servers a caller may reach.

A profile is a name servers list in ``mcpx.profiles``; ``default`` is the profile of the
servers whose ``mcpx.default`` holds. A caller that names no profile gets ``mcp.profile``
when it is set, else ``default`` (MCP hosts), or every server (the operator's CLI and
/v1, which name one only to see what a host would).

Invariant: a profile name no server lists (other than ``default``) is refused, never read
as an empty profile: a typo must not look like "no tools".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ._servers import ServerConfig

__all__ = ["DEFAULT_PROFILE", "UnknownProfile", "known_profiles", "profile_reach"]

DEFAULT_PROFILE: Final = "default"


class UnknownProfile(ValueError):
    """A profile name that no configured server lists."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no profile named {name!r}; the config has: {', '.join(known)}")
        self.name = name
        self.known = known


def known_profiles(servers: Mapping[str, ServerConfig]) -> list[str]:
    """Every profile name the servers list, ``default`` first."""
    named = {p for s in servers.values() for p in s.profiles} - {DEFAULT_PROFILE}
    return [DEFAULT_PROFILE, *sorted(named)]


def profile_reach(servers: Mapping[str, ServerConfig], profile: str) -> frozenset[str]:
    """The names of the servers in ``profile``.

    Raises:
        UnknownProfile: no server lists ``profile`` (and it is not ``default``).
    """
    if profile == DEFAULT_PROFILE:
        return frozenset(n for n, s in servers.items() if s.in_default or profile in s.profiles)
    reach = frozenset(n for n, s in servers.items() if profile in s.profiles)
    if not reach:
        raise UnknownProfile(profile, known_profiles(servers))
    return reach
