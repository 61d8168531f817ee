"""The ``log.frames`` trace: every frame mcpx sends a host, one JSON line each.

Invariants:

- A line is ``{"rev", "answering", "frame"}``, written with one ``write`` to a file
  opened ``O_APPEND``: lines from concurrent requests never interleave.
- Writing never raises: the trace is called on the way to the host, and a frame it
  cannot encode (nested past what the encoder writes) or a failed write must not stop
  that. Such a frame is not traced (the transport that cannot send it either traces
  what it sends instead); the failure is logged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from mcpx import wire

__all__ = ["FrameTrace", "frames_log"]

log = logging.getLogger("mcpx.daemon.frames")

# (the revision the frame is spelled for, or None; the frame; the method it answers)
FrameTrace: TypeAlias = Callable[[str | None, Mapping[str, Any], str | None], None]


def frames_log(path: str) -> FrameTrace | None:
    """The trace writing to ``path`` (created 0600), or None when ``path`` is empty."""
    if not path:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def trace(rev: str | None, frame: Mapping[str, Any], answering: str | None) -> None:
        try:
            # The frame encoded on its own: a frame the host can be sent is never one
            # level too deep to trace.
            line = b"".join(
                (
                    b'{"rev":',
                    wire.dumps(rev),
                    b',"answering":',
                    wire.dumps(answering),
                    b',"frame":',
                    wire.dumps(frame),
                    b"}\n",
                )
            )
        except wire.McpError as exc:
            log.warning("log.frames: a frame not traced: %s", exc.message)
            return
        try:
            os.write(fd, line)
        except OSError as exc:
            log.warning("log.frames: cannot write: %s", exc)

    return trace
