"""How many questions one upstream may put: open at once, and how fast.

A question needs a host or a person to answer it; an upstream that floods mcpx with
them (a loop gone wrong, a hostile server) would otherwise fill the broker with rows
and the hosts with prompts. The spec asks clients to rate-limit sampling and
elicitation (C-SAMP-10, C-ELIC-8).

Invariants:
- Per server, at most ``open_limit`` sampling and elicitation questions are open at
  once, asked natively or held by the broker; one more is refused at once.
- Per server, questions come at most ``rate`` a second on average, in bursts of at
  most ``4 * rate`` (a token bucket); beyond that one is refused at once.
- A refusal is a JSON-RPC error with code ``THROTTLED`` (an application code, outside
  the range the spec reserves) that says which limit and its setting; nothing is
  asked and no broker row is made.
- ``roots/list`` is not counted: mcpx answers it at once, whoever else may.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from mcpx.wire import Throttled

__all__ = ["THROTTLED", "Throttle"]

THROTTLED: Final = Throttled.code
_BURST: Final = 4
COUNTED: Final = frozenset({"elicitation/create", "sampling/createMessage"})


class Throttle:
    def __init__(
        self, open_limit: int, rate: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._open_limit = open_limit
        self._rate = rate
        self._burst = float(_BURST * rate)
        self._clock = clock
        self._open: dict[str, int] = {}
        # Per server: tokens left, and when they were counted.
        self._tokens: dict[str, tuple[float, float]] = {}

    @classmethod
    def configured(cls, settings: Mapping[str, Any]) -> Throttle:
        """The limits ``settings`` set (the registry's defaults when given those)."""
        return cls(int(settings["proto.questionsOpen"]), int(settings["proto.questionRate"]))

    def open(self, server: str) -> int:
        return self._open.get(server, 0)

    @contextmanager
    def asking(self, server: str, method: str) -> Iterator[None]:
        """Held while one question is open; refuses it first if a limit is reached.

        Raises:
            Throttled: the server has too many open, or asks too fast.
        """
        if method not in COUNTED:
            yield
            return
        if self.open(server) >= self._open_limit:
            raise Throttled(
                f"{server} has {self._open_limit} questions open already "
                f"(proto.questionsOpen); answer or withdraw one first"
            )
        self._take(server)
        self._open[server] = self.open(server) + 1
        try:
            yield
        finally:
            left = self._open[server] - 1
            if left:
                self._open[server] = left
            else:
                del self._open[server]

    def _take(self, server: str) -> None:
        now = self._clock()
        tokens, at = self._tokens.get(server, (self._burst, now))
        tokens = min(self._burst, tokens + (now - at) * self._rate)
        if tokens < 1:
            raise Throttled(
                f"{server} asks faster than {self._rate:g} questions a second "
                f"(proto.questionRate); try again shortly"
            )
        self._tokens[server] = (tokens - 1, now)
