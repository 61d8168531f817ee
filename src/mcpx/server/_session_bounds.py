"""The refusals for what one host may send at once, worded once for every session.

Invariants:

- A 2025-03-26 batch longer than ``proto.maxBatch`` messages is refused whole
  (``InvalidRequest``, -32600): answering part of it would split its answer.
- A client has at most ``proto.maxBatch`` batched requests waiting or running; a batch
  that would pass that is refused whole too (``Throttled``, -429), so how many requests
  wait in line for a client's slots is bounded.
- A batch holding ``initialize`` is refused whole (-32600, with that request's id): the
  handshake is never part of a batch.
- Every refusal names the setting that bounds it, and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpx import wire
from mcpx.wire import InvalidRequest, Kind, McpError, Throttled

__all__ = ["batch_refusal", "requests_in", "too_many_running"]


def requests_in(decoded: wire.Decoded) -> int:
    """How many of a batch's messages are requests (the rest answer nothing)."""
    return sum(1 for kind, _ in decoded.messages if kind is Kind.REQUEST)


def batch_refusal(
    decoded: wire.Decoded, settings: Mapping[str, Any], batched: int
) -> McpError | None:
    """Why ``decoded`` is refused whole, or None; ``batched``: the client's batched
    requests waiting or running now."""
    most = int(settings["proto.maxBatch"])
    size = len(decoded.messages) + len(decoded.errors)
    if size > most:
        return InvalidRequest(
            f"Invalid Request: a batch of {size} messages is over proto.maxBatch ({most}); "
            "send smaller batches"
        )
    if batched and batched + requests_in(decoded) > most:
        return Throttled(
            f"{batched} batched requests are waiting or running (proto.maxBatch is {most}); "
            "retry once they are answered"
        )
    for kind, frame in decoded.messages:
        if kind is Kind.REQUEST and frame.get("method") == "initialize":
            return InvalidRequest(
                "initialize must not be part of a batch", request_id=frame.get("id")
            )
    return None


def too_many_running(settings: Mapping[str, Any], *, waiting: bool = False) -> Throttled:
    """The refusal of a request over ``proto.maxConcurrentCalls``."""
    most = int(settings["proto.maxConcurrentCalls"])
    also = f" and {most} waiting" if waiting else ""
    return Throttled(
        f"{most} requests are running{also} (proto.maxConcurrentCalls); retry once one is answered"
    )
