"""The standalone GET stream of legacy Streamable HTTP (2025-03-26 to 2025-11-25).

The server may push requests and notifications on it that belong to no client request.
``ListenStream`` opens it in the transport's task group, delivers its frames through the
transport's inbox, and resumes it with ``Last-Event-ID`` when the server drops it.

Invariants:

- At most one stream is open: opening again first cancels the current one (a session that
  re-initializes wants the new session's stream, not the old one's).
- Opening reports exactly one outcome: open, not offered (405), or why it failed. After
  that, a stream that breaks ends quietly; ``is_open`` tells, and the session may reopen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from mcpx.config import Redactor

from ._base import TransportError
from ._http_stream import (
    BodyReader,
    ExchangeFailed,
    OpenGet,
    connection_failed,
    content_type,
    status_error,
)
from ._inbox import Inbox

__all__ = ["ListenStream"]

Outcome = bool | TransportError


class _Once:
    """Reports how opening went, exactly once; ``on_failure`` runs first if it failed.

    (First: the opener resumes as soon as it hears, and must already see no stream.)
    """

    def __init__(self, task_status: TaskStatus[Outcome], on_failure: Callable[[], None]) -> None:
        self._task_status = task_status
        self._on_failure = on_failure
        self.outcome: Outcome | None = None

    def report(self, outcome: Outcome) -> None:
        if self.outcome is None:
            self.outcome = outcome
            if outcome is not True:
                self._on_failure()
            self._task_status.started(outcome)


class ListenStream:
    """Opens, follows and cancels the one standalone GET stream of a transport."""

    def __init__(
        self, url: str, inbox: Inbox, max_frame: int, open_get: OpenGet, redactor: Redactor
    ) -> None:
        self._url = url
        self._redactor = redactor
        self._inbox = inbox
        self._max_frame = max_frame
        self._open_get = open_get
        self._scope: anyio.CancelScope | None = None

    @property
    def is_open(self) -> bool:
        """A stream is open or being resumed."""
        return self._scope is not None

    def cancel(self) -> None:
        """Close the current stream, if any."""
        if self._scope is not None:
            self._scope.cancel()

    async def open(self, task_group: TaskGroup) -> bool:
        """Replace any current stream with a new one run in ``task_group``.

        Returns:
            True when the stream is open; False when the server offers none (405).

        Raises:
            HttpStatusError: the server refused the GET with another status.
            ExchangeFailed: the GET could not connect, or its answer was not SSE.
        """
        self.cancel()
        outcome: Outcome = await task_group.start(self._run)
        if isinstance(outcome, TransportError):
            raise outcome
        return outcome

    async def _run(self, *, task_status: TaskStatus[Outcome]) -> None:
        scope = self._scope = anyio.CancelScope()
        reader = BodyReader(self._inbox, self._max_frame, None, self._redactor)

        def forget() -> None:
            if self._scope is scope:
                self._scope = None

        opened = _Once(task_status, forget)
        try:
            with scope:
                await self._first(reader, opened)
                if opened.outcome is True:
                    with contextlib.suppress(TransportError, httpx.HTTPError):
                        await reader.follow(self._open_get)
        finally:
            forget()
            opened.report(ExchangeFailed("the GET stream was cancelled"))

    async def _first(self, reader: BodyReader, opened: _Once) -> None:
        try:
            async with self._open_get("") as response:
                if response.status_code == 405:
                    opened.report(False)
                elif response.status_code >= 400:
                    opened.report(await status_error(response, self._redactor))
                elif content_type(response) != "text/event-stream":
                    opened.report(ExchangeFailed(f"the GET gave {content_type(response)!r}"))
                else:
                    opened.report(True)
                    # Broken frames or a dropped connection: ``follow`` decides what next.
                    with contextlib.suppress(TransportError, httpx.HTTPError):
                        await reader.read_sse(response)
        except httpx.HTTPError as exc:
            opened.report(connection_failed("GET", self._url, exc, self._redactor))
