"""Sending a stdio host's ``tools/call`` upstream as soon as its line is read.

A ``tools/call`` (of a pass-through tool, or of ``mcpx_call``) is most of what a host
sends, and the upstream is the slow part of it: so the request is written to the
upstream in the event loop's read callback, before the task that serves it runs, and
that task, going through ``dispatch`` as every request does, finds it written
(``client.SENT_AHEAD``) and only waits for the answer. The upstream's answer, when it is
a plain result, is written to the host as it arrives (``reply_ahead``), before that
task wakes to make the same answer. Everything else about the call (its checks, its
registration, its record and metrics, its errors) happens on the one path every
request takes.

Invariants:

- Only what ``dispatch`` would send unchanged: a legacy session's ``tools/call``
  carrying only ``name`` and ``arguments`` (no ``_meta``: no progress token, no trace
  context, no revision of its own; no ``task``), of a tool a pass-through server
  lists or of ``mcpx_call`` asking for nothing but the call, to a ready instance of a
  legacy upstream that takes the line at once; and nothing that would refuse it there
  (``ops.send_ahead``, ``ops.call_ahead``). Anything else is sent by the request's task,
  as ever.
- The task's request takes what was sent ahead only when it is the same request on the
  same connection; one nobody took (the host withdrew its request before it ran) is
  cancelled upstream, and its answer dropped.
- An answer written ahead is the one ``dispatch`` makes (``HostSession.serve`` logs an
  error if they ever differ) and is the only one sent; none is written for a request
  the host withdrew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from mcpx import wire
from mcpx.client import SentAhead
from mcpx.ops import call_ahead, input_problem
from mcpx.ops import send_ahead as ops_send_ahead
from mcpx.shapes import call_result_problem, without_nulls
from mcpx.spec import LEGACY

from . import _modes as modes
from . import _passthrough as passthrough
from ._conn import Conn
from ._dispatch import spelled_result
from ._identity import identity_for, profile_for
from ._surface import readable_uris

if TYPE_CHECKING:
    from mcpx.ops import OpContext

__all__ = ["Shape", "reply_ahead", "send_ahead"]

JSON = dict[str, Any]
# What the surface makes of the upstream's result before it is spelled for the host.
Shape = Callable[[JSON], JSON]

# The params of a call that goes upstream exactly as the host sent it.
_PLAIN: Final = frozenset({"name", "arguments"})
_GATEWAY_CALL: Final = "mcpx_call"


def _as_sent(result: JSON) -> JSON:
    return result


def send_ahead(
    ctx: OpContext, conn: Conn, frame: Mapping[str, Any]
) -> tuple[SentAhead, Shape] | None:
    """The ``tools/call`` ``frame`` written upstream now, for the task that serves it on
    ``conn`` to take, with what the surface makes of its result; None when nothing was
    (see the invariants)."""
    if frame.get("method") != "tools/call" or conn.revision not in LEGACY:
        return None  # (without _meta, dispatch judges a legacy session's frame its own)
    params = frame.get("params")
    if not isinstance(params, dict) or not params.keys() <= _PLAIN or not conn.initialized:
        return None
    name = params.get("name")
    if not isinstance(name, str):
        return None
    here = ctx.evolve(
        passthrough=conn.passthrough,
        profile=profile_for(conn, ctx.settings),
        identity=identity_for(None, conn, process=conn.identity or "stdio"),
    )
    owners = passthrough.owners_now(here, "tools")
    if owners is None:
        return None
    server = owners.get(name)
    if server is not None:  # a pass-through tool: its result as the upstream sent it
        ahead = ops_send_ahead(here, server, params)
        return None if ahead is None else (ahead, _as_sent)
    op = modes.own_ops(modes.mode(here)).get(name) if name == _GATEWAY_CALL else None
    args = params.get("arguments")
    if op is None or not isinstance(args, dict) or input_problem(op, args, headers=False):
        return None
    ahead = call_ahead(here, args)
    return None if ahead is None else (ahead, partial(readable_uris, str(args["server"])))


def reply_ahead(
    ctx: OpContext,
    conn: Conn,
    request_id: wire.RequestId,
    outcome: JSON | Exception,
    shape: Shape,
) -> wire.Frame | None:
    """The answer ``dispatch`` gives the call sent ahead, made as the upstream's answer
    arrives, when it is a plain result that passes its check (as ``request_for_caller``
    checks it), so that it can be written to the host at once; None for anything else
    (an error, a malformed result), which only ``dispatch`` answers."""
    if not isinstance(outcome, dict) or outcome.get("resultType", "complete") != "complete":
        return None
    if call_result_problem(outcome) is not None:
        return None
    result = shape(without_nulls(outcome))
    spelled = spelled_result("tools/call", result, str(conn.revision), ctx, ctx.settings)
    return wire.result(request_id, spelled)
