"""Ranking tools for a query: BM25F over each tool's words, the server as context.

A tool is a document of five fields, each weighted (``FIELD_WEIGHTS``): its name split
into words (``_ - . /``, camelCase and digits), its title, its description, its
parameters' names and descriptions (``inputSchema`` properties, and theirs one level
down), and its server's name and description. A word's frequency in each field is
normalised by that field's length and summed under the weights (BM25F), then saturated
once with ``k1``; rare words weigh more (idf over the tools indexed together).

Invariants:
- Pure: no I/O, no clock. The server descriptions come in as a mapping.
- A query with no word in any tool returns nothing; an empty query returns every tool in
  the order given; ties keep ``server/name`` order, so a ranking is deterministic.
- An index is built once per catalogue state: the last few states are kept, keyed by the
  identity of the tool objects (the catalogue replaces a server's tools on a new listing,
  it never edits them in place) and the server descriptions.

Why our own BM25F and not ``bm25s`` (``bench/search_quality.py --bm25s``, 303 tools, 98
labelled queries, the same tokens for both, fields repeated by weight for ``bm25s``):
quality is a tie (recall@5 0.910 / MRR 0.853 here, 0.900 / 0.852 for ``bm25s``), but
``bm25s`` brings numpy: 200-550 ms to import and 14 MB more resident, in a daemon that must
not load them at CLI start. Its own tokeniser splits neither camelCase nor snake_case, so
the tokenising here would stay anyway, and it weighs fields only by repeating text. This
index of 300 tools builds in tens of milliseconds, once per catalogue state.
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["FIELD_WEIGHTS", "ToolIndex", "index_for", "rank_tools", "tool_fields", "words"]

Pair = tuple[str, dict[str, Any]]

# Tuned on the training half of tests/data/tool_search_key.json (bench/search_quality.py).
FIELD_WEIGHTS: Final = {"name": 4.0, "title": 2.0, "description": 1.0, "params": 0.7, "server": 0.6}
_K1: Final = 1.2
_B: Final = 0.75
_KEEP: Final = 8  # catalogue states indexed at once (a server filter makes another)

# Words that say nothing of which tool is meant; removed from tools and queries alike.
_STOP: Final = frozenset(
    "a an and any are as at be by can do does for from has have how i in into is it its "  # noqa: SIM905
    "me my of on or our please so some that the their them then there this those to up "
    "us via was we what when where which who why will with you your".split()
)
# Abbreviations a model writes for what tools spell out (whole words, any case).
_SHORT: Final = {
    "pr": "pull request",
    "prs": "pull requests",
    "mr": "merge request",
    "mrs": "merge requests",
    "k8s": "kubernetes",
    "db": "database",
    "repo": "repository",
    "repos": "repositories",
    "dir": "directory",
    "env": "environment",
}
_PARTS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _stem(word: str) -> str:
    """A light suffix stripper, the same for tools and queries: plurals, -ing, -ed."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2] if word[-3] != "e" else word[:-1]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The words of ``text`` as the index sees them: split on anything not a letter or
    digit, on camelCase humps and between letters and digits; lowercased and stemmed,
    without stop words (unless that leaves nothing); the usual abbreviations spelt out."""
    spelt = " ".join(_SHORT.get(w.lower().strip(".,;:!?()"), w) for w in text.split())
    raw = [p.lower() for p in _PARTS.findall(spelt)]
    kept = [w for w in raw if w not in _STOP] or raw
    return [_stem(w) for w in kept]


def _param_text(schema: object) -> Iterable[str]:
    """Names and descriptions of ``inputSchema`` properties, and of theirs one level down
    (an object's ``properties`` or an array's ``items.properties``)."""
    for name, prop in _properties(schema).items():
        yield str(name)
        if not isinstance(prop, Mapping):
            continue
        yield str(prop.get("description") or "")
        inner = prop.get("items") if prop.get("type") == "array" else prop
        for sub, subprop in _properties(inner).items():
            yield str(sub)
            if isinstance(subprop, Mapping):
                yield str(subprop.get("description") or "")


def _properties(schema: object) -> Mapping[str, object]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def tool_fields(server: str, about: str | None, tool: Mapping[str, Any]) -> dict[str, list[str]]:
    """A tool's words per field of ``FIELD_WEIGHTS``; ``about`` is its server's description."""
    return {
        "name": words(str(tool.get("name") or "")),
        "title": words(str(tool.get("title") or "")),
        "description": words(str(tool.get("description") or "")),
        "params": words(" ".join(_param_text(tool.get("inputSchema")))),
        "server": words(f"{server} {about or ''}"),
    }


@dataclass(frozen=True)
class _Doc:
    pair: Pair
    key: str  # server/name: the tie-break
    counts: dict[str, Counter[str]]  # field -> word -> frequency
    lengths: dict[str, int]


class ToolIndex:
    """The BM25F index of one list of tools; ``rank`` answers queries against it."""

    def __init__(
        self,
        items: list[Pair],
        servers: Mapping[str, str | None],
        weights: Mapping[str, float] = FIELD_WEIGHTS,
    ) -> None:
        self.items = items
        self.weights = weights  # settable: the bench tunes them on one index
        self._docs = []
        for server, tool in items:
            fields = tool_fields(server, servers.get(server), tool)
            self._docs.append(
                _Doc(
                    (server, tool),
                    f"{server}/{tool.get('name')}",
                    {f: Counter(ws) for f, ws in fields.items()},
                    {f: len(ws) for f, ws in fields.items()},
                )
            )
        n = max(len(self._docs), 1)
        self._avg = {f: sum(d.lengths[f] for d in self._docs) / n or 1.0 for f in FIELD_WEIGHTS}
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(set().union(*doc.counts.values()))
        self._idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def _score(self, doc: _Doc, query: list[str]) -> float:
        score = 0.0
        for word in query:
            tf = 0.0
            for field, weight in self.weights.items():
                count = doc.counts[field].get(word)
                if count:
                    norm = 1 - _B + _B * doc.lengths[field] / self._avg[field]
                    tf += weight * count / norm
            if tf:
                score += self._idf[word] * tf / (_K1 + tf)
        return score

    def rank(self, query: str) -> list[Pair]:
        """The tools with any word of ``query``, best first; every tool for an empty one."""
        if not query.strip():
            return list(self.items)
        wanted = [w for w in words(query) if w in self._idf]
        scored = [(self._score(d, wanted), d) for d in self._docs]
        hits = sorted((kv for kv in scored if kv[0] > 0), key=lambda kv: (-kv[0], kv[1].key))
        return [d.pair for _, d in hits]


_Key = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, str | None], ...]]
_indexes: OrderedDict[_Key, ToolIndex] = OrderedDict()


def index_for(items: list[Pair], servers: Mapping[str, str | None] | None = None) -> ToolIndex:
    """The index of ``items``, reused while the same tool objects and server descriptions
    come back (the index holds the tools, so their identities cannot be reused)."""
    about = dict(servers or {})
    key: _Key = (
        tuple((s, id(t)) for s, t in items),
        tuple(sorted((s, about.get(s)) for s in {s for s, _ in items})),
    )
    index = _indexes.get(key)
    if index is None:
        index = _indexes[key] = ToolIndex(list(items), about)
        while len(_indexes) > _KEEP:
            _indexes.popitem(last=False)
    _indexes.move_to_end(key)
    return index


def rank_tools(
    items: list[Pair], query: str, servers: Mapping[str, str | None] | None = None
) -> list[Pair]:
    """Tools matching ``query``, best first (BM25F); ``servers`` maps a server's name to
    its description, read as context for each of its tools."""
    if not query.strip():
        return items
    return index_for(items, servers).rank(query)
