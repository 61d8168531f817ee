"""Listings that come in pages: following cursors, and starting over when one is refused.

Era-agnostic: the session hands in its ``request`` (already spelled for the era).

Invariants (the pagination pages of every revision; 2026-07-28 says it most plainly):

- Only a missing or null ``nextCursor`` ends a listing. ``""`` is a cursor like any
  other (C-PAGE-4), and every cursor goes back exactly as it came (C-PAGE-2).
- No cursor value means anything else either, not even one seen before: a server may
  keep its place elsewhere, and C-PAGE-2 allows no judging by value. So what stops a
  server that never ends is the number of pages, ``MAX_PAGES``.
- A cursor refused mid-listing (-32602, the code every revision names for an invalid
  cursor: it expired, the list changed) starts the listing again from the first page,
  once, keeping nothing from the pass it ended, so the items come from one pass
  (C-CACHE-14). A second refusal, or one on the first page, is raised as it came.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from mcpx import wire

from ._errors import UpstreamError

__all__ = ["MAX_PAGES", "paginate"]

log = logging.getLogger("mcpx.client")

MAX_PAGES: Final = 10_000

# Sends one request (method, params) and returns its final result.
Request = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class _CursorRefused(Exception):
    """A page asked for with a cursor was refused as invalid params (-32602)."""

    def __init__(self, error: wire.McpError) -> None:
        super().__init__(error.message)
        self.error = error


async def paginate(request: Request, method: str, key: str, *, server: str) -> list[Any]:
    """Every item under ``key`` of the listing ``method``, from its first page.

    Raises:
        McpError: the upstream refused a page (a cursor twice, or the first page).
        UpstreamError: as ``request`` raises it, or the listing is not a listing (a
            ``nextCursor`` that is not a string, more than ``MAX_PAGES`` pages).
    """
    try:
        return await _one_pass(request, method, key, server, restartable=True)
    except _CursorRefused as refused:
        log.info(
            "%s refused a cursor of %s (%s); listing again from the first page",
            server,
            method,
            refused.error.message,
        )
    return await _one_pass(request, method, key, server, restartable=False)


async def _one_pass(
    request: Request, method: str, key: str, server: str, *, restartable: bool
) -> list[Any]:
    """One pass over the listing, from its first page.

    Raises:
        _CursorRefused: a page asked for with a cursor got -32602 (``restartable`` only).
        McpError, UpstreamError: as for ``paginate``.
    """
    items: list[Any] = []
    cursor: str | None = None
    for _page in range(MAX_PAGES):
        try:
            result = await request(method, {} if cursor is None else {"cursor": cursor})
        except wire.InvalidParams as exc:
            if cursor is None or not restartable:
                raise
            raise _CursorRefused(exc) from exc
        items.extend(result.get(key) or [])
        cursor = result.get("nextCursor")
        if cursor is None:
            return items
        if not isinstance(cursor, str):
            raise UpstreamError(
                f"{server} answered {method} with a nextCursor that is not a string: {cursor!r}"
            )
    raise UpstreamError(f"{server} returned more than {MAX_PAGES} pages of {method}")
