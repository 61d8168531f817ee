"""Ranking tools by words: exact name, then prefix, substring, server name, description.

Every word must match before any-word matching is tried.
"""

from __future__ import annotations

from typing import Any

__all__ = ["rank_tools"]


def _word_score(word: str, server: str, tool: dict[str, Any]) -> int | None:
    """Lower is better: exact name, prefix, substring, server name, description."""
    name = str(tool.get("name", "")).lower()
    if word == name:
        return 0
    if name.startswith(word):
        return 1
    if word in name:
        return 2
    if word in server.lower():
        return 3
    if word in str(tool.get("description", "")).lower():
        return 4
    return None


def rank_tools(
    items: list[tuple[str, dict[str, Any]]], query: str
) -> list[tuple[str, dict[str, Any]]]:
    """Tools matching ``query``, best first. Every word must match before
    any-word matching is tried."""
    words = [w for w in query.lower().split() if w]
    if not words:
        return items
    every: list[tuple[tuple[int, int, str], tuple[str, dict[str, Any]]]] = []
    some: list[tuple[tuple[int, int, str], tuple[str, dict[str, Any]]]] = []
    for server, tool in items:
        scores = [_word_score(w, server, tool) for w in words]
        hits = [s for s in scores if s is not None]
        if not hits:
            continue
        key = (sum(hits) + 5 * (len(words) - len(hits)), min(hits), f"{server}/{tool.get('name')}")
        (every if len(hits) == len(words) else some).append((key, (server, tool)))
    chosen = every or some
    return [pair for _, pair in sorted(chosen, key=lambda kv: kv[0])]
