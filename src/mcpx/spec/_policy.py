"""spec.precedence and spec.lenient: which revision's rules win a conflict.

Most differences are settled by the revision the peer states. Where two
revisions require incompatible behaviour and the peer's version does not settle
it, the policy decides: the first revision in ``precedence`` wins, and a
revision in ``lenient`` is not held strictly. The policy is immutable; it is
built once from settings and handed to whoever consults it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._revisions import REVISIONS, index, parse_revision

__all__ = ["Policy", "PolicyError"]


class PolicyError(ValueError):
    """A precedence or lenient list that cannot be a policy."""


@dataclass(frozen=True)
class Policy:
    precedence: tuple[str, ...] = tuple(reversed(REVISIONS))
    lenient: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        precedence: Iterable[str] = (),
        first: str | None = None,
        lenient: Iterable[str] = (),
    ) -> Policy:
        """The effective policy from the three settings.

        A partial ``precedence`` is completed with the missing revisions,
        newest first; ``first`` then moves one revision to the front.

        Raises:
            UnknownRevisionError: any value is not a revision.
            PolicyError: a revision is listed twice in ``precedence``.
        """
        given = [parse_revision(r, "spec.precedence") for r in precedence]
        if len(set(given)) != len(given):
            dupes = sorted({r for r in given if given.count(r) > 1}, key=index)
            raise PolicyError(f"spec.precedence lists {', '.join(dupes)} more than once")
        order = given + [r for r in reversed(REVISIONS) if r not in given]
        if first is not None:
            front = parse_revision(first, "spec.first")
            order.remove(front)
            order.insert(0, front)
        loose = frozenset(parse_revision(r, "spec.lenient") for r in lenient)
        return cls(tuple(order), loose)

    def first(self) -> str:
        """The revision whose rules win every precedence-governed conflict."""
        return self.precedence[0]

    def strict(self, rev: str) -> bool:
        """Whether mcpx holds ``rev`` strictly (not listed in spec.lenient)."""
        return parse_revision(rev) not in self.lenient

    def wins(self, a: str, b: str) -> str:
        """Of two revisions in conflict, the one whose rule applies."""
        return a if self.precedence.index(a) < self.precedence.index(b) else b

    def as_json(self) -> dict[str, Any]:
        return {
            "precedence": list(self.precedence),
            "first": self.first(),
            "lenient": sorted(self.lenient, key=index),
            "strict": [r for r in REVISIONS if r not in self.lenient],
        }
