"""The one function every upstream question goes through: the host first, the broker after.

Invariants:

- One function for both eras: a legacy server's request on the wire and a modern
  server's ``input_required`` round reach ``answer`` alike (the client calls it).
- A question belongs to a call only when that call is the only one in flight on the
  instance that asked, its (server, scope key) (``CallsInFlight`` against the pool's
  in-flight count for the key): with two, attribution is a guess, and one client's
  question must never reach another. Unattributed, it goes to the broker, and every
  caller waiting on that instance hears of it.
- The owning host is asked natively only if it declared what the question needs (form
  or url elicitation, sampling, roots) and its connection can be asked; otherwise the
  broker keeps it until someone answers, declines or it expires (as cancel).
- The host sees who asks: "<server> (via mcpx) asks: …".
- ``roots/list`` nobody can answer gets mcpx's own roots (none configured: empty).
- A question needing more than mcpx declared to that server (``_undeclared``) is refused
  at once, before anyone is asked; roots go upstream only as ``file://`` URIs without
  ``..`` (``_answers``), whoever gave them.
- A server with too many questions open, or asking too fast (``_throttle``), is refused
  at once too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from mcpx import spec
from mcpx.client import QuestionOrigin
from mcpx.config import SETTINGS, StateDiskFull
from mcpx.wire import InternalError, McpError, MethodNotFound

from ._answers import exposable_roots
from ._broker import Broker, Question, QuestionClosed
from ._calls_in_flight import CallsInFlight, HostAsker
from ._throttle import Throttle
from ._undeclared import check_askable

if TYPE_CHECKING:
    from mcpx.pool import Pool

# Told of each question settled: (server, method, answered by, outcome, asked at (wall
# clock)); the daemon's telemetry sets it when it traces.
OnWait = Callable[[str, str, str, str, float], None]

__all__ = ["ASKABLE", "QuestionRouter", "attributed"]

log = logging.getLogger("mcpx.questions")

_ELICIT: Final = "elicitation/create"
ASKABLE: Final = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})


def attributed(message: object, server: str) -> str:
    return f"{server} (via mcpx) asks: {message}"


class QuestionRouter:
    """The daemon's ``QuestionHandler``."""

    def __init__(
        self,
        broker: Broker,
        calls: CallsInFlight,
        pool: Callable[[], Pool | None],
        closing: Callable[[], bool] = lambda: False,
        throttle: Throttle | None = None,
    ) -> None:
        self._broker = broker
        self._calls = calls
        self._pool = pool
        self._closing = closing
        # Without one given: the limits the settings registry declares by default.
        self._throttle = throttle or Throttle.configured(
            {name: SETTINGS[name].default for name in ("proto.questionsOpen", "proto.questionRate")}
        )
        self.on_wait: OnWait | None = None

    def capabilities(self, revision: str) -> dict[str, Any]:
        """What mcpx declares upstream, in ``revision``'s terms: it can always answer
        elicitation and sampling (the broker at least) and roots (its own)."""
        caps: dict[str, Any] = {}
        for name, subs in (("elicitation", ("form", "url")), ("sampling", ()), ("roots", ())):
            if spec.defined("capability", name, revision, "client"):
                caps[name] = {
                    sub: {}
                    for sub in subs
                    if spec.defined("capability", f"{name}.{sub}", revision, "client")
                }
        return caps

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method not in ASKABLE:
            raise MethodNotFound(f"mcpx does not answer {method}")
        check_askable(method, params, self.capabilities(asked.revision))
        shown = _shown(method, params, asked.server)
        waited = _Waited(self.on_wait, asked.server, method)
        with self._throttle.asking(asked.server, method), waited:
            owner = self._owner(asked.server, asked.scope)
            if owner is not None and owner.can(method, shown):
                log.info("%s asks its caller: %s", asked.server, method)
                waited.by = "host"
                result = await owner.ask(method, shown)
            elif method == "roots/list":
                waited.by = "mcpx"
                result = {"roots": []}
            else:
                waited.by = "broker"
                result = await self._brokered(method, shown, asked, waited)
            waited.outcome = waited.outcome or _outcome(result)
        # A host's roots are checked too: the upstream gets only what may be exposed.
        return exposable_roots(result, asked.server) if method == "roots/list" else result

    def caller_can(self, server: str, scope: str, method: str, params: dict[str, Any]) -> bool:
        """Whether the one call in flight on the instance (``server``, ``scope``) has a
        host that can be asked ``method`` itself (an OAuth login's url elicitation)."""
        owner = self._owner(server, scope)
        return owner is not None and owner.can(method, _shown(method, params, server))

    def hold(
        self, server: str, params: dict[str, Any], *, identity: str | None, ttl: float
    ) -> Question:
        """Keep a URL-mode elicitation nobody present can answer in the broker, without
        waiting on it (an OAuth login: the daemon's callback closes it)."""
        shown = _shown(_ELICIT, params, server)
        routing = "broker: an OAuth sign-in nobody present could do"
        question = self._broker.ask(
            server, _ELICIT, shown, identity=identity, routing=routing, ttl=ttl
        )
        log.info("%s needs a sign-in; held by the broker as %s", server, question.id)
        return question

    def held(self, qid: str) -> Question | None:
        """The broker's question ``qid``, if it is there."""
        return self._broker.get(qid)

    def done_with(self, qid: str) -> None:
        """What ``hold`` kept was done another way: answered, if it is still open."""
        with suppress(QuestionClosed, StateDiskFull):  # closed meanwhile; or it expires
            self._broker.answer(qid, {})

    async def _brokered(
        self,
        method: str,
        shown: dict[str, Any],
        asked: QuestionOrigin,
        waited: _Waited,
    ) -> dict[str, Any]:
        try:
            question = self._broker.ask(
                asked.server, method, shown, identity=None, routing="broker: no host could be asked"
            )
        except StateDiskFull as exc:  # logged where it happened; the server is told why
            raise InternalError(f"mcpx could not keep the question: {exc}") from exc
        log.info("%s asked %s; held by the broker as %s", asked.server, method, question.id)
        # Every caller waiting on the server hears of it: any of them may be the one.
        # (One taken over from before a restart may have its answer already.)
        waiting = question.state == "pending"
        told: set[int] = set()  # a run's calls share one asker: tell it once
        for call in self._calls.calls_on(asked.server, asked.scope) if waiting else ():
            if call is not None and call.brokered is not None and id(call) not in told:
                told.add(id(call))
                call.brokered(question)
        try:
            outcome = await self._broker.wait(question.id)
        except BaseException:
            # Cancelled (the call ended, or the upstream withdrew the question): nobody
            # is left to take an answer. Not so when the daemon is stopping: the
            # question outlives it (the same ask after the restart takes it over).
            if not self._closing():
                self._broker.withdraw(question.id)
            raise
        settled = self._broker.get(question.id)
        if settled is not None and settled.state == "expired":
            waited.outcome = "expired"
        if method != "elicitation/create" and outcome.get("action") in ("decline", "cancel"):
            # Only an elicitation has an action; declining anything else is an error
            # (the spec's example for a user who rejected sampling uses -1).
            how = "declined" if outcome["action"] == "decline" else "dismissed (cancel)"
            waited.outcome = waited.outcome or _outcome(outcome)
            raise McpError(f"{method} was {how} through mcpx's broker", code=-1)
        return outcome

    def _owner(self, server: str, scope: str) -> HostAsker | None:
        # The calls registered on this instance against the requests in flight on it.
        pool = self._pool()
        in_flight = (
            sum(i.in_flight for i in pool.instances(server) if i.scope_key == scope)
            if pool
            else None
        )
        return self._calls.owner(server, scope, in_flight)


def _shown(method: str, params: dict[str, Any], server: str) -> dict[str, Any]:
    if method == "elicitation/create" and "message" in params:
        return {**params, "message": attributed(params["message"], server)}
    return params


def _outcome(result: dict[str, Any]) -> str:
    action = result.get("action")
    return {"decline": "declined", "cancel": "cancelled"}.get(str(action), "answered")


class _Waited:
    """One question's wait, told to ``on_wait`` when it is settled (or failed)."""

    __slots__ = ("by", "method", "on_wait", "outcome", "server", "started")

    def __init__(self, on_wait: OnWait | None, server: str, method: str) -> None:
        self.on_wait, self.server, self.method = on_wait, server, method
        self.started = time.time()
        self.by = "nobody"
        self.outcome: str | None = None

    def __enter__(self) -> _Waited:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.on_wait is None:
            return
        outcome = self.outcome if self.outcome is not None else "failed"
        self.on_wait(self.server, self.method, self.by, outcome, self.started)
