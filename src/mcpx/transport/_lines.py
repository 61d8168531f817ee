"""Sans-IO splitting of a byte stream into newline-terminated lines, with a length cap.

Used for the stdio transport's stdout (JSON-RPC frames) and stderr (log lines).

Invariants:

- A line ends at LF; one CR right before the LF is dropped too (a CRLF peer is tolerated).
- Lines are found by scanning only the new bytes, so cost is linear in the input however
  it is chunked.
- No more than ``limit`` bytes of one line are ever buffered. Past the limit either the
  splitter stops (``truncate=False``: ``overflowed`` turns true and all later input is
  ignored) or the rest of the line is dropped and the kept part gets ``TRUNCATED``
  appended (``truncate=True``).
"""

from __future__ import annotations

from typing import Final

__all__ = ["TRUNCATED", "LineSplitter"]

# Appended to a line cut at the limit, so a reader sees that something is missing.
TRUNCATED: Final = b" [...]"


class LineSplitter:
    """Feed chunks, get complete lines (without their line ending)."""

    def __init__(self, limit: int, *, truncate: bool = False) -> None:
        if limit < 1:
            raise ValueError("limit must be positive")
        self._limit = limit
        self._truncate = truncate
        self._partial = bytearray()
        self._dropping = False  # truncate mode: inside a line already cut
        self._overflowed = False

    @property
    def overflowed(self) -> bool:
        """A line went past the limit (only in ``truncate=False`` mode)."""
        return self._overflowed

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes, in order; the unterminated rest is kept."""
        lines: list[bytes] = []
        start = 0
        while not self._overflowed:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self._append(chunk[start:end])
            if newline < 0 or self._overflowed:
                break
            lines.append(self._take())
            start = newline + 1
        return lines

    def finish(self) -> bytes | None:
        """At end of input: the last line if it had no line ending, else None."""
        if self._overflowed or (not self._partial and not self._dropping):
            return None
        return self._take()

    def _append(self, piece: bytes) -> None:
        if self._dropping or not piece:
            return
        room = self._limit - len(self._partial)
        if len(piece) <= room:
            self._partial += piece
        elif self._truncate:
            self._partial += piece[:room]
            self._dropping = True
        else:
            self._overflowed = True
            self._partial.clear()

    def _take(self) -> bytes:
        line = bytes(self._partial)
        self._partial.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if self._dropping:
            self._dropping = False
            line += TRUNCATED
        return line
