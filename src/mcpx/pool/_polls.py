"""Polling what a modern upstream will not announce (C-SUB-3).

A 2026-07-28 upstream acknowledges a ``subscriptions/listen`` with the part of the
filter it honours. A list kind it declared ``listChanged`` for, or a resource URI mcpx
subscribed to, that the acknowledgement leaves out will change silently. For those mcpx
lists (or reads) again every ``protoMessages.listMaxAge`` (what it promises hosts a
list stays fresh), and an answer that differs from the last one is handled as the
notification that never came.

Invariants:
- Only what was asked for and left out is polled; what was acknowledged is not.
- The first answer is the baseline: no change is reported for it.
- A failed poll is logged and skipped; polling goes on at the next turn.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final

import anyio

from mcpx import wire
from mcpx.client import Session, UpstreamError
from mcpx.config import Settings

__all__ = [
    "LIST_FLAGS",
    "follow_listen",
    "left_out",
    "poll_interval",
    "poll_lists",
    "poll_resources",
    "unacknowledged_uris",
]

log = logging.getLogger("mcpx.pool")

# A list kind, and its flag in a listen filter.
LIST_FLAGS: Final = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}

# Nothing is polled more often than this, whatever protoMessages.listMaxAge says.
_FLOOR: Final = 0.25
_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"

Poller = Callable[[], Awaitable[None]]


async def follow_listen(
    stream: AsyncIterator[dict[str, Any]],
    notified: Callable[[str, dict[str, Any]], None],
    left_out_poller: Callable[[Mapping[str, Any]], Poller | None],
) -> None:
    """Hand what a listen stream says to ``notified(method, params)``, but for its
    acknowledgements: each one (a stream opened again is acknowledged again) replaces
    the polling of what the one before left out with ``left_out_poller(params)``'s,
    if any. Returns when the stream ends, polling stopped."""
    async with anyio.create_task_group() as tg:
        polling = anyio.CancelScope()
        async for note in stream:
            if note["method"] != _ACKNOWLEDGED:
                notified(note["method"], note["params"])
                continue
            polling.cancel()
            poll = left_out_poller(note["params"])
            if poll is not None:
                polling = anyio.CancelScope()
                tg.start_soon(_poll_in, polling, poll)
        tg.cancel_scope.cancel()


async def _poll_in(scope: anyio.CancelScope, poll: Poller) -> None:
    with scope:
        await poll()


def poll_interval(settings: Settings) -> float:
    """As often as hosts are told a list stays fresh (0, never fresh: once a minute)."""
    return max(float(settings["protoMessages.listMaxAge"]) or 60.0, _FLOOR)


def _honoured(acknowledged: Mapping[str, Any]) -> Mapping[str, Any]:
    honoured = acknowledged.get("notifications")
    return honoured if isinstance(honoured, Mapping) else {}


def left_out(asked: Mapping[str, Any], acknowledged: Mapping[str, Any]) -> list[str]:
    """The list kinds ``asked`` for whose flag the acknowledgement's params lack."""
    honoured = _honoured(acknowledged)
    return [
        kind
        for kind, flag in LIST_FLAGS.items()
        if asked.get(flag) is True and honoured.get(flag) is not True
    ]


def unacknowledged_uris(asked: list[str], acknowledged: Mapping[str, Any]) -> list[str]:
    """The resource URIs ``asked`` for that the acknowledgement's params do not list."""
    kept = _honoured(acknowledged).get("resourceSubscriptions")
    agreed = {uri for uri in kept if isinstance(uri, str)} if isinstance(kept, list) else set()
    return [uri for uri in asked if uri not in agreed]


async def _poll(
    name: str,
    fetches: Mapping[str, Callable[[], Awaitable[Any]]],
    interval: float,
    changed: Callable[[str], None],
) -> None:
    seen: dict[str, bytes] = {}
    while True:
        for key, fetch in fetches.items():
            try:
                answer = await fetch()
            except (UpstreamError, wire.McpError) as exc:
                log.info("%s: polling %s failed: %s", name, key, exc)
                continue
            digest = hashlib.sha256(wire.dumps(answer)).digest()
            if key in seen and seen[key] != digest:
                changed(key)
            seen[key] = digest
        await anyio.sleep(interval)


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
    fetches = {f"{kind}/list": _lister(session, kind) for kind in kinds}

    def differs(listed: str) -> None:
        changed(f"notifications/{listed.split('/')[0]}/list_changed")

    await _poll(session.name, fetches, interval, differs)


async def poll_resources(
    session: Session,
    uris: list[str],
    interval: float,
    changed: Callable[[str], None],
) -> None:
    """Read ``uris`` every ``interval`` seconds; ``changed(uri)`` when a resource's
    contents differ from the read before. Runs until cancelled."""

    def reader(uri: str) -> Callable[[], Awaitable[Any]]:
        async def contents() -> Any:
            # Only the contents: a modern result's _meta and ttlMs are not the resource.
            read = await session.request("resources/read", {"uri": uri})
            return read.get("contents")

        return contents

    await _poll(session.name, {uri: reader(uri) for uri in uris}, interval, changed)
