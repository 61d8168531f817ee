"""Which scopes to ask for (the spec's scope selection strategy, SEP-2207, SEP-2350)."""

from __future__ import annotations

from ._discovery import Discovery

__all__ = ["select_scope", "union_scopes"]


def select_scope(
    challenged: str | None, configured: str | None, discovery: Discovery
) -> str | None:
    """The challenge's scope, else the configured scopes, else the resource's
    ``scopes_supported``, else none (the parameter is omitted). ``offline_access`` is
    added only when the authorization server lists it (a refresh token is wanted)."""
    scope = challenged or configured
    if scope is None and discovery.scopes_supported:
        scope = " ".join(discovery.scopes_supported)
    if scope and "offline_access" in discovery.as_scopes and "offline_access" not in scope.split():
        scope += " offline_access"
    if scope and "offline_access" not in discovery.as_scopes:
        # Never ask for what the server does not offer (SEP-2207).
        scope = " ".join(s for s in scope.split() if s != "offline_access") or None
    return scope


def union_scopes(first: str | None, second: str | None) -> str | None:
    """Both scope strings' scopes, ``first``'s order kept, no duplicates (SEP-2350)."""
    merged: list[str] = []
    for scope in (first or "").split() + (second or "").split():
        if scope not in merged:
            merged.append(scope)
    return " ".join(merged) or None
