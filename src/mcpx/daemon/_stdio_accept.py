"""The daemon's stdio socket: ``mcpx serve`` hosts, one per connection.

Job: accept each connection on ``<state>/mcpx-stdio.sock`` (mode 0600) and hand it to a
``StdioChannel``. A connection is one of:

- a hand-off: its first message is ``HANDOFF`` carrying two file descriptors
  (SCM_RIGHTS), the host's pipes that are ``mcpx serve``'s stdin and stdout. The daemon
  answers ``OK`` and reads and writes those pipes itself; the connection then only says
  the shim is alive (its close ends the host's session, as an EOF would). Refused with
  ``NO <reason>`` (then closed, the descriptors with it) when they are not pipes or
  sockets, or this anyio cannot wait on a descriptor; the shim then carries the lines instead.
- carried lines: anything else. The JSON lines arrive on the connection itself (``mcpx serve``
  copying its stdin and stdout, or any client of the socket).

Invariants:

- A host's identity is ``stdio:<peer pid>`` (SO_PEERCRED; a counter where unavailable).
- A host's descriptors are the daemon's own copies, not inheritable: made non-blocking
  for the session, their flags put back and both closed when it ends, before the
  connection is. When the daemon restarts, a hand-off's pipes go back to its shim with
  the session's state (``_hand_back``).
- A failure in one connection ends that connection, never the daemon.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import stat
import struct
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import SocketAttribute, SocketStream, UNIXSocketStream

from mcpx.ops import OpContext
from mcpx.transport import PipeReceiveStream, PipeSendStream, can_write_descriptors

from ._hand_back import HandBacks, conn_state, resume_line
from ._stdio_channel import Prefixed, StdioChannel

__all__ = ["HANDOFF", "OPTIONS", "serve_stdio_channel"]

log = logging.getLogger("mcpx.daemon.stdio")

_counter = itertools.count(1)
# The first message of a hand-off, with the host's stdin and stdout attached (SCM_RIGHTS).
HANDOFF: Final = b"MCPX-STDIO-FDS 1\n"
# mcpx serve's settings for its host, as a JSON line before anything else.
OPTIONS: Final = b"MCPX-STDIO-OPTIONS "
_CHUNK: Final = 64 * 1024


async def serve_stdio_channel(
    path: Path,
    ctx: Callable[[], OpContext],
    hand_backs: HandBacks | None = None,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``path`` and serve every connection until cancelled. Hand-offs join
    ``hand_backs``, which gives their pipes back when the daemon restarts.

    The socket is created 0600 inside the 0700 state dir, so only this user can connect.
    """
    backs = hand_backs or HandBacks()
    listener = await anyio.create_unix_listener(path, mode=0o600)
    task_status.started()
    async with listener:
        await listener.serve(lambda stream: _accept(stream, ctx(), backs))


async def _accept(stream: SocketStream, ctx: OpContext, hand_backs: HandBacks) -> None:
    # A failure in one host's connection ends that connection, never the daemon.
    try:
        await _connection(stream, ctx, hand_backs)
    except Exception:
        log.exception("a stdio connection failed; it is closed")


async def _connection(stream: SocketStream, ctx: OpContext, hand_backs: HandBacks) -> None:
    """One connection: a hand-off of the host's pipes, or its lines carried."""
    identity = _peer(stream)
    async with stream:
        try:
            if isinstance(stream, UNIXSocketStream):
                first, fds = await stream.receive_fds(_CHUNK, 2)
            else:
                first, fds = await stream.receive(_CHUNK), []
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        except RuntimeError as exc:  # ancillary data other than descriptors
            log.warning("stdio connection refused (%s): %s", exc, identity)
            return
        for fd in fds:
            # Received descriptors are inheritable: an upstream spawned later would hold
            # the host's pipes open, and the host would never see its stdout end.
            os.set_inheritable(fd, False)
        if first.startswith(HANDOFF) and fds:
            options, _ = _options(first[len(HANDOFF) :])
            await _handed_off(stream, fds, identity, ctx, hand_backs, options)
            return
        for fd in fds:  # descriptors nobody asked for
            os.close(fd)
        options, first = _options(first)
        channel = StdioChannel(identity, ctx, Prefixed(first, stream), stream)
        channel.configure(options)
        await channel.run()


def _options(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The connection's options line, if ``data`` starts with one; and the rest."""
    if not data.startswith(OPTIONS):
        return {}, data
    line, _, rest = data.partition(b"\n")
    try:
        options = json.loads(line[len(OPTIONS) :])
    except ValueError:
        log.warning("stdio options line unreadable; ignored")
        return {}, rest
    return (options if isinstance(options, dict) else {}), rest


async def _handed_off(
    stream: SocketStream,
    fds: list[int],
    identity: str,
    ctx: OpContext,
    hand_backs: HandBacks,
    options: dict[str, Any] | None = None,
) -> None:
    """Serve the host on its own pipes while ``mcpx serve`` waits on ``stream``; when
    the daemon restarts, give them back to it with what the next daemon needs."""
    refusal = _refusal(fds)
    if refusal is not None:
        for fd in fds:
            os.close(fd)
        log.info("stdio hand-off refused (%s): %s", refusal, identity)
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.send(b"NO " + refusal.encode() + b"\n")
        return
    receive, send = PipeReceiveStream(fds[0]), PipeSendStream(fds[1])
    try:
        try:
            await receive.start()
            send.start()
        except (OSError, ValueError) as exc:
            log.warning("stdio hand-off refused (%s): %s", exc, identity)
            receive.close()  # flags put back before the shim relays on them
            send.close()
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(b"NO " + str(exc).encode() + b"\n")
            return
        channel = StdioChannel(identity, ctx, receive, send, mode="hand-off")
        channel.configure(options or {})
        hand_backs.join(channel)
        try:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(b"OK\n")
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_watch_shim, stream, channel.stop_reading)
                    await channel.run()
                    tg.cancel_scope.cancel()
                if channel.handing_back:
                    unread = channel.unread() + receive.take_unread()
                    state = {**conn_state(channel.conn, unread), "daemon": os.getpid()}
                    await stream.send(resume_line(state))
                    log.info("stdio host given back for the restart: %s", identity)
        finally:
            hand_backs.leave(channel)
    finally:
        # Before the connection closes: the shim's exit then means the host's pipes are
        # no longer written by anyone. No checkpoint: this runs when cancelled, too.
        receive.close()
        send.close()


def _refusal(fds: list[int]) -> str | None:
    """Why the descriptors of a hand-off cannot be served here, or None."""
    if not can_write_descriptors():
        return "this anyio cannot wait on a descriptor"
    if len(fds) != 2:
        return f"{len(fds)} descriptors, not 2"
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            return f"descriptor: {exc}"
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return "not a pipe or a socket"
    return None


async def _watch_shim(stream: SocketStream, gone: Callable[[], None]) -> None:
    """``mcpx serve`` keeps the connection open while its host runs; it closing (the
    shim was killed, or ended) ends the session as an EOF on stdin would."""
    with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while await stream.receive():
            pass  # the shim says nothing after the hand-off
    gone()


def _peer(stream: SocketStream) -> str:
    """``stdio:<pid>`` of the process on the other end (``mcpx serve``), if the OS says."""
    sock = stream.extra(SocketAttribute.raw_socket)
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is not None:
        with suppress(OSError):
            pid, _uid, _gid = struct.unpack(
                "3i", sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
            )
            if pid > 0:
                return f"stdio:{pid}"
    return f"stdio:conn-{next(_counter)}"
