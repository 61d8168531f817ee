"""The demo server as a process: ``main()``, ``python -m mcpx.demo``, ``mcpx demo-server``.

Job: bind ``serve`` to this process's stdin and stdout (file descriptors 0 and 1) and exit 0
when the client closes stdin.

Invariants:

- File descriptor 1 carries protocol frames only. ``sys.stdout`` is pointed at stderr
  before serving, so a stray ``print`` cannot corrupt the stream; logs go to stderr.
- stdin is read by a daemon thread of its own, not an anyio worker: a read blocked on a
  pipe cannot be interrupted, and a daemon thread never keeps the process from exiting
  (after stdout broke, say, while the client still holds stdin open).
- stdout is written in an anyio worker thread, so a full pipe blocks one write and never
  the event loop (pings and cancels are still read meanwhile).
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from typing import Final

import anyio
import click

from ._stdio import serve

__all__ = ["command", "main"]

_CHUNK: Final = 65536


class _Stdin:
    """A ``ByteSource`` over a file descriptor, read by a daemon thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        threading.Thread(target=self._pump, name="mcpx-demo-stdin", daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, _CHUNK)
            except OSError:
                chunk = b""
            self._chunks.put(chunk)
            if not chunk:  # end of input: the empty chunk tells the reader so
                return

    def release(self) -> None:
        """Free a worker thread still waiting in ``receive`` (it was abandoned by a cancel):
        anyio's workers are not daemons, and one blocked forever would keep the process."""
        self._chunks.put(b"")

    async def receive(self) -> bytes:
        # abandon_on_cancel: a cancelled receive leaves its worker waiting; release() frees it.
        chunk = await anyio.to_thread.run_sync(self._chunks.get, abandon_on_cancel=True)
        if not chunk:
            self._chunks.put(chunk)  # stays at end of input for any later reader
            raise anyio.EndOfStream
        return chunk


class _Stdout:
    """A ``ByteSink`` over a file descriptor; each item is written completely."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes, /) -> None:
        await anyio.to_thread.run_sync(self._write_all, item)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


def main() -> None:
    """Serve MCP on this process's stdin and stdout until stdin ends; then exit 0."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="mcpx-demo: %(levelname)s %(message)s"
    )
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    sys.stdout = sys.stderr  # fd 1 is for frames only
    source = _Stdin(stdin)
    try:
        anyio.run(serve, source, _Stdout(stdout))
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        source.release()


@click.command("demo-server")
def command() -> None:
    """Run the bundled demo MCP server on stdin/stdout (what the daemon starts when no
    server is configured)."""
    main()
