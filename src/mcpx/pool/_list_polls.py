"""Polling the lists a modern upstream will not announce changes of (C-SUB-3).

A 2026-07-28 upstream acknowledges a ``subscriptions/listen`` with the part of the
filter it honours; a list kind it declared ``listChanged`` for but left out of the
acknowledgement will change silently. For those kinds mcpx lists again every
``protoMessages.listMaxAge`` (what it promises hosts a list stays fresh), and a
listing that differs from the last one is handled as the change notification that
never came.

Invariants:
- Only the kinds asked for and left out are polled; a kind acknowledged is not.
- The first listing is the baseline: no change is reported for it.
- A failed listing is logged and skipped; polling goes on at the next turn.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio

from mcpx import wire
from mcpx.client import Session, UpstreamError

__all__ = ["LIST_FLAGS", "left_out", "poll_lists"]

log = logging.getLogger("mcpx.pool")

# A list kind, and its flag in a listen filter.
LIST_FLAGS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


def left_out(asked: Mapping[str, Any], acknowledged: Mapping[str, Any]) -> list[str]:
    """The list kinds ``asked`` for whose flag the acknowledgement's params lack."""
    honoured = acknowledged.get("notifications")
    honoured = honoured if isinstance(honoured, Mapping) else {}
    return [
        kind
        for kind, flag in LIST_FLAGS.items()
        if asked.get(flag) is True and honoured.get(flag) is not True
    ]


def _lister(session: Session, kind: str) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
    if kind == "tools":
        return session.list_tools
    if kind == "prompts":
        return session.list_prompts
    return session.list_resources


async def poll_lists(
    session: Session,
    kinds: list[str],
    interval: float,
    changed: Callable[[str], None],
) -> None:
    """List ``kinds`` every ``interval`` seconds; ``changed(method)`` with the change
    notification's method when a listing differs from the one before. Runs until
    cancelled."""
    seen: dict[str, bytes] = {}
    while True:
        for kind in kinds:
            try:
                items = await _lister(session, kind)()
            except (UpstreamError, wire.McpError) as exc:
                log.info("%s: polling %s/list failed: %s", session.name, kind, exc)
                continue
            digest = hashlib.sha256(wire.dumps(items)).digest()
            if kind in seen and seen[kind] != digest:
                changed(f"notifications/{kind}/list_changed")
            seen[kind] = digest
        await anyio.sleep(interval)
