"""Asking a host an upstream's question, in the host's own revision, and waiting for its answer.

Invariants:

- A host is asked only what it declared: form or url elicitation, sampling (with
  ``tools`` or ``context`` only where declared too), roots. Anything else is left to
  the broker (the caller of ``can`` decides).
- The question is spelled for the host's revision (the transport traces the frame),
  and sent conservatively: an elicitation's schema keeps only the keys the restricted
  schema defines; a ``task`` member (augmentation nobody declared) is dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from mcpx import spec, wire
from mcpx.questions import HostAsker
from mcpx.spec import MODERN, RELATED_TASK
from mcpx.wire import InternalError, McpError

from ._conn import Conn

__all__ = ["HostQuestions", "for_task", "host_asker"]

JSON = dict[str, Any]
_SCHEMA_KEYS: Final = frozenset({"$schema", "type", "properties", "required"})


def host_asker(view: Conn, rev: str, ask: Callable[[str, JSON], Awaitable[JSON]]) -> HostAsker:
    """How the host behind ``view`` is asked, through its transport's ``ask``."""

    def can(method: str, params: Mapping[str, Any]) -> bool:
        if method == "elicitation/create":
            mode = params.get("mode", "form")
            return view.declared("elicitation.url" if mode == "url" else "elicitation.form")
        if method == "sampling/createMessage":
            needs_tools = bool(params.get("tools"))
            needs_context = params.get("includeContext") not in (None, "none")
            return (
                view.declared("sampling")
                and (not needs_tools or view.declared("sampling.tools"))
                and (not needs_context or view.declared("sampling.context"))
            )
        if method == "roots/list":
            return view.declared("roots")
        return False

    async def asking(method: str, params: JSON) -> JSON:
        spelled = _spelled(method, params, rev)
        return await ask(method, spelled)

    return HostAsker(can=can, ask=asking)


def for_task(asker: HostAsker, task_id: str) -> HostAsker:
    """``asker`` for a call running as the core task ``task_id``: each question carries
    the related-task ``_meta`` the host ties it to its task by (S-TASK-9)."""

    async def asking(method: str, params: JSON) -> JSON:
        meta = params.get("_meta")
        related = {RELATED_TASK: {"taskId": task_id}}
        tagged = {**meta, **related} if isinstance(meta, Mapping) else related
        return await asker.ask(method, {**params, "_meta": tagged})

    return HostAsker(can=asker.can, ask=asking, brokered=asker.brokered)


def _spelled(method: str, params: JSON, rev: str) -> JSON:
    # An upstream's task augmentation (never declared to it, so ignored: S-TASK-20) is
    # not passed on either: a host's tasks capability is not mcpx's to use.
    out = {k: v for k, v in params.items() if k != "task"}
    if method != "elicitation/create":
        return out
    if rev in MODERN:
        # A url elicitation's id correlates a later completion notification, which a
        # 2026-07-28 host (asked in-band, never notified) has no use for.
        out.pop("elicitationId", None)
    # A form elicitation names no mode before url mode existed (2025-11-25).
    if out.get("mode") == "form" and not spec.defined(
        "capability", "elicitation.form", rev, "client"
    ):
        del out["mode"]
    schema = out.get("requestedSchema")
    if isinstance(schema, Mapping):
        # The restricted schema has four keys; servers add more (an SDK adds "title").
        out["requestedSchema"] = {k: v for k, v in schema.items() if k in _SCHEMA_KEYS}
    return out


@dataclass
class _Waiting:
    done: anyio.Event = field(default_factory=anyio.Event)
    reply: dict[str, Any] = field(default_factory=dict)


@dataclass
class HostQuestions:
    """The questions one connection put to its client, waiting for its answers.

    Ids are negative: a client's own requests never use them, so an answer is never
    mistaken for anything else.
    """

    _waiting: dict[int, _Waiting] = field(default_factory=dict)
    _last: int = 0
    # The client can answer no more (its input ended): asking it fails at once.
    _gone: bool = False

    async def ask(
        self,
        send: Callable[[JSON], None],
        method: str,
        params: JSON,
        timeout: float,
    ) -> JSON:
        """Send the question through ``send`` (its request frame); the client's result.

        Raises:
            McpError: the client answered with an error, or not within ``timeout``.
        """
        if self._gone:
            raise InternalError(f"the client went away: it cannot answer {method}")
        self._last -= 1
        rid = self._last
        waiting = self._waiting[rid] = _Waiting()
        send(wire.request(rid, method, params))
        try:
            with anyio.fail_after(timeout):
                await waiting.done.wait()
        except TimeoutError:
            # Given up on (S-LIFE-10): the client is told, so that it stops asking.
            reason = f"not answered within {timeout:g} s"
            send(wire.notification("notifications/cancelled", {"requestId": rid, "reason": reason}))
            raise InternalError(f"the client did not answer {method} in {timeout:g} s") from None
        except anyio.get_cancelled_exc_class():
            # Withdrawn (the upstream cancelled its question, or the call ended): the
            # client is told to stop asking its user; its late answer is ignored.
            send(wire.notification("notifications/cancelled", {"requestId": rid}))
            raise
        finally:
            self._waiting.pop(rid, None)
        if "error" in waiting.reply:
            raise McpError.from_error(waiting.reply["error"])
        result: JSON = waiting.reply.get("result") or {}
        return result

    def gone(self) -> None:
        """The client's input ended: no question to it can be answered any more. Each
        waiting one fails now (the upstream is told, and its call can end within the
        drain) rather than when its timeout would have come."""
        self._gone = True
        error = {"code": InternalError.code, "message": "the client went away before answering"}
        for waiting in self._waiting.values():
            waiting.reply = {"error": error}
            waiting.done.set()

    def answered(self, frame: Mapping[str, Any]) -> None:
        """The client's result or error frame: wakes the question it answers, if any."""
        rid = frame.get("id")
        waiting = self._waiting.get(rid) if isinstance(rid, int) else None
        if waiting is not None:
            waiting.reply = dict(frame)
            waiting.done.set()
