"""A sans-IO parser for Server-Sent Events, as the WHATWG HTML standard defines them.

Feed bytes (or text) in chunks of any size; get each dispatched event with its type,
data, last event id and any ``retry`` seen in its block. Reference: "Interpreting an event
stream" in https://html.spec.whatwg.org/multipage/server-sent-events.html.

Invariants:

- Lines end at CRLF, LF or CR, also when the CR and LF arrive in different chunks.
  Splitting is done on bytes (CR and LF never occur inside a UTF-8 sequence) and each line
  is decoded on its own, invalid sequences replaced, so chunk boundaries never matter:
  any split of a stream yields the same events.
- A leading UTF-8 BOM is dropped once. Lines starting with ``:`` are comments (keep-alives)
  and ignored; unknown fields are ignored; ``id`` holding NUL is ignored; ``retry`` is
  honoured only when all ASCII digits.
- An event is dispatched at a blank line, and only when some ``data`` line was seen; its
  data is the ``data`` values joined with LF. ``last_event_id`` moves at every blank line
  (data or not) to the last ``id`` seen, as the standard's "last event ID string" does.
  An event cut by the end of the stream is never dispatched (the caller stops feeding).
- ``max_event`` bounds the bytes held for one event (its data plus the unfinished line);
  going past it raises ``EventTooLarge`` (carrying the events completed before it) and
  the parser must not be fed again. A finished comment line is forgotten, so keep-alives
  on a long stream never accumulate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["EventTooLarge", "SseEvent", "SseParser"]

_BOM: Final = b"\xef\xbb\xbf"
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")
_DIGITS: Final = re.compile(rb"[0-9]+")


class EventTooLarge(ValueError):
    """One event grew past the parser's ``max_event`` bytes.

    ``events`` holds the events the same chunk completed before the oversized one, so a
    caller can still deliver them.
    """

    def __init__(self, message: str, events: list[SseEvent]) -> None:
        super().__init__(message)
        self.events = events


class _Overflow(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event.

    ``id`` is the stream's last event id as of this event (ids persist across events, as in
    a browser's ``lastEventId``); ``retry`` is the reconnection time in milliseconds set in
    this event's block, if any.
    """

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


class SseParser:
    """Incremental SSE parsing: ``feed`` chunks, get the events they complete."""

    def __init__(self, max_event: int, *, last_event_id: str = "") -> None:
        """``last_event_id`` carries the id over when a stream is resumed on a new connection."""
        if max_event < 1:
            raise ValueError("max_event must be positive")
        self._max_event = max_event
        self._partial = bytearray()  # the unfinished line
        self._bom_checked = False
        self._skip_lf = False  # the last chunk ended in CR: an LF next completes that CRLF
        self._data: list[str] = []
        self._data_bytes = 0
        self._event_type = ""
        self._block_retry: int | None = None
        self._id_buffer = last_event_id
        self._last_event_id = last_event_id
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The id to send as ``Last-Event-ID`` when reconnecting ("" for none)."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The latest reconnection time the server asked for, in milliseconds."""
        return self._retry

    def feed(self, chunk: bytes | str) -> list[SseEvent]:
        """The events ``chunk`` completes, in order.

        Raises:
            EventTooLarge: an event (or a single line) went past ``max_event`` bytes.
        """
        data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        if not self._bom_checked:
            data = self._strip_bom(data)
        if not data:
            return []  # nothing to do, and a pending CR must stay pending
        pos = 0
        if self._skip_lf and data[:1] == b"\n":
            pos = 1
        self._skip_lf = False
        events: list[SseEvent] = []
        try:
            for match in _LINE_END.finditer(data, pos):
                self._extend(data[pos : match.start()])
                line = bytes(self._partial)
                self._partial.clear()
                self._line(line, events)
                pos = match.end()
            self._extend(data[pos:])
        except _Overflow:
            raise EventTooLarge(
                f"a server-sent event went past {self._max_event} bytes", events
            ) from None
        # A CR at the very end may be the first half of a CRLF split across chunks.
        self._skip_lf = data.endswith(b"\r")
        return events

    def _strip_bom(self, data: bytes) -> bytes:
        # The BOM may itself arrive split; hold the first bytes until they can be judged.
        held = bytes(self._partial) + data
        if len(held) < len(_BOM) and _BOM.startswith(held):
            self._partial[:] = held
            return b""
        self._partial.clear()
        self._bom_checked = True
        return held[len(_BOM) :] if held.startswith(_BOM) else held

    def _extend(self, piece: bytes) -> None:
        self._partial += piece
        if self._data_bytes + len(self._partial) > self._max_event:
            raise _Overflow

    def _line(self, raw: bytes, events: list[SseEvent]) -> None:
        if not raw:
            self._dispatch(events)
            return
        if raw.startswith(b":"):
            return  # a comment
        name, colon, value = raw.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
            self._data_bytes += len(value) + 1
        elif name == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry" and _DIGITS.fullmatch(value):
            self._retry = self._block_retry = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        # The id takes effect at the blank line, with or without data: an id-only block
        # (the 2025-11-25 priming event) still moves the resumption point.
        self._last_event_id = self._id_buffer
        if self._data:
            events.append(
                SseEvent(
                    data="\n".join(self._data),
                    event=self._event_type or "message",
                    id=self._last_event_id,
                    retry=self._block_retry,
                )
            )
        self._data.clear()
        self._data_bytes = 0
        self._event_type = ""
        self._block_retry = None
