"""How well a tool ranking finds the right tool: recall@5 and MRR over a labelled key.

The catalogue is ``tests/data/tool_catalogue/<server>.json`` (each a ``tools/list``
result; ``_descriptions.json`` holds each server's description), the key is
``tests/data/tool_search_key.json`` (query -> relevant ``server/tool`` ids, each query in
the ``train`` half, on which weights are tuned, or the ``held-out`` half).

``baseline_rank`` is the ranking mcpx had before BM25 (words: exact name, prefix,
substring, server name, description), kept here only as the figure to beat.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

DATA: Final = Path(__file__).resolve().parents[1] / "data"
CATALOGUE: Final = DATA / "tool_catalogue"
KEY: Final = DATA / "tool_search_key.json"

Pair = tuple[str, dict[str, Any]]
Ranker = Callable[[list[Pair], str], list[Pair]]


@dataclass(frozen=True)
class Query:
    text: str
    relevant: frozenset[str]
    half: str


@dataclass(frozen=True)
class Figures:
    recall_at_5: float
    mrr: float
    queries: int

    def __str__(self) -> str:
        return f"recall@5 {self.recall_at_5:.3f}  MRR {self.mrr:.3f}  ({self.queries} queries)"


def catalogue() -> list[Pair]:
    """Every (server, tool) of the test catalogue, servers in name order."""
    return [
        (path.stem, tool)
        for path in sorted(CATALOGUE.glob("*.json"))
        if not path.stem.startswith("_")
        for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]
    ]


def server_descriptions() -> dict[str, str | None]:
    about: dict[str, str | None] = json.loads(
        (CATALOGUE / "_descriptions.json").read_text(encoding="utf-8")
    )
    return about


def queries(half: str | None = None) -> list[Query]:
    """The labelled queries, all or those of one half (``train`` or ``held-out``)."""
    doc = json.loads(KEY.read_text(encoding="utf-8"))
    found = [Query(q["query"], frozenset(q["relevant"]), q["half"]) for q in doc["queries"]]
    return [q for q in found if half is None or q.half == half]


def measure(rank: Ranker, items: list[Pair], key: list[Query]) -> Figures:
    """recall@5: the share of a query's relevant tools in its first five, averaged;
    MRR: one over the rank of the first relevant tool (0 if none is ranked), averaged."""
    recall = reciprocal = 0.0
    for query in key:
        ids = [f"{s}/{t['name']}" for s, t in rank(items, query.text)]
        recall += len(query.relevant & set(ids[:5])) / len(query.relevant)
        first = next((i for i, tool in enumerate(ids, 1) if tool in query.relevant), None)
        reciprocal += 1 / first if first else 0.0
    return Figures(recall / len(key), reciprocal / len(key), len(key))


def _word_score(word: str, server: str, tool: Mapping[str, Any]) -> int | None:
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


def baseline_rank(items: list[Pair], query: str) -> list[Pair]:
    """The ranking before BM25 (src/mcpx/ops/_search.py until issue 26), unchanged.
    Every word must match before any-word matching is tried."""
    words = [w for w in query.lower().split() if w]
    if not words:
        return items
    every: list[tuple[tuple[int, int, str], Pair]] = []
    some: list[tuple[tuple[int, int, str], Pair]] = []
    for server, tool in items:
        scores = [_word_score(w, server, tool) for w in words]
        hits = [s for s in scores if s is not None]
        if not hits:
            continue
        key = (sum(hits) + 5 * (len(words) - len(hits)), min(hits), f"{server}/{tool.get('name')}")
        (every if len(hits) == len(words) else some).append((key, (server, tool)))
    chosen = every or some
    return [pair for _, pair in sorted(chosen, key=lambda kv: kv[0])]
