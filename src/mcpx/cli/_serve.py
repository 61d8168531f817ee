"""``mcpx serve``: mcpx as a stdio MCP server, for hosts that can only spawn a process.

Job: a thin shim. It makes sure the daemon runs, connects to the daemon's stdio channel
(``<state>/mcpx-stdio.sock``) and gets out of the way; the daemon does all the MCP.

- Hand-off, first: when stdin and stdout are pipes or sockets (as a host spawning a
  server makes them) and the platform passes descriptors (``socket.send_fds``), they are
  sent to the daemon (SCM_RIGHTS) with ``HANDOFF``; on ``OK`` the daemon reads and writes
  the host's pipes itself and the shim only waits for the connection to close. Nothing
  is copied through this process.
- Relay, otherwise (the daemon refused, is older, or stdin is a file or a terminal): a
  new connection, and bytes copied both ways.

Invariants:

- Nothing is parsed here, and nothing is read from stdin before the hand-off is settled:
  the daemon gets the host's bytes from the first.
- Relaying, bytes from stdin go to the daemon as read, bytes from the daemon go to
  stdout as received, flushed per chunk (``os.write`` has no buffer to flush).
- stdout carries only what the daemon sent; anything mcpx says goes to stderr.
- At stdin EOF answers still in flight keep flowing to stdout until the daemon closes
  the connection; then the shim exits 0. Handed off, the daemon closes its copies of the
  pipes before the connection.
- ``mcpx restart``: the daemon gives a handed-off host back with ``RESUME <state>``; the
  shim waits for that daemon to exit and hands the pipes to the next one with the state
  (``daemon._hand_back``). The host sees no EOF and no second handshake.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Final

import click

from ._context import load_settings, settings_options_showing
from ._daemon import DaemonClient, alive, check_profile, servers_for
from ._endpoint import parse_endpoint

__all__ = ["HANDOFF", "carry_lines", "handoff", "serve_command", "serve_stdio"]

_CHUNK: Final = 64 * 1024
# The daemon's HANDOFF (mcpx.daemon._stdio_accept, not imported: it brings in the whole
# server side, and the shim starts with every host). A test holds the two equal.
HANDOFF: Final = b"MCPX-STDIO-FDS 1\n"
# This connection's own settings, as a JSON line ahead of anything else (the same here).
OPTIONS: Final = b"MCPX-STDIO-OPTIONS "
# The daemon's RESUME (mcpx.daemon._hand_back): the host is given back at a restart.
RESUME: Final = b"MCPX-STDIO-RESUME "
# How long a shim given back waits for the old daemon to exit, past its calls' grace.
_RESTART_WAIT: Final = 30.0


def options_line(options: dict[str, Any]) -> bytes:
    """The line carrying ``options`` (empty: nothing to say, no line)."""
    return OPTIONS + json.dumps(options).encode() + b"\n" if options else b""


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _reply(sock: socket.socket) -> bytes:
    """The daemon's one-line answer to a hand-off (at most 256 bytes)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = sock.recv(256 - len(data))
        if not chunk:
            break
        data += chunk
    return data


def handoff(path: Path, options: bytes = b"") -> tuple[bool, dict[str, Any] | None]:
    """Hand stdin and stdout to the daemon on ``path``: (True, None) once it has served
    them and closed the connection; (True, state) when it gave them back to be taken to
    the next daemon (``mcpx restart``); (False, None), nothing read from stdin, when it
    would not take them. ``options`` (an ``options_line``) rides in the same message."""
    send_fds = getattr(socket, "send_fds", None)
    if send_fds is None or not (_pipe_or_socket(0) and _pipe_or_socket(1)):
        return False, None
    said = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
            send_fds(sock, [HANDOFF + options], [0, 1])
            # No time limit: the daemon answers at once, and one without hand-offs
            # answers the line as JSON (a parse error). Either way carrying the lines needs it.
            if _reply(sock) != b"OK\n":
                return False, None  # refused, or a daemon without hand-offs: carry the lines
        except OSError:
            return False, None
        # The daemon serves the host now, whatever happens here. Wait for it to close the
        # connection (the host closed stdin, or the daemon stopped or restarts).
        with suppress(OSError):
            while chunk := sock.recv(_CHUNK):
                said += chunk
    return True, _resume_state(said)


def _resume_state(said: bytes) -> dict[str, Any] | None:
    if not said.startswith(RESUME):
        return None
    try:
        state = json.loads(said[len(RESUME) :])
    except ValueError:
        return None  # cut short: the daemon died while saying it
    return state if isinstance(state, dict) else None


def _stdin_to_socket(sock: socket.socket) -> None:
    try:
        while chunk := os.read(0, _CHUNK):
            sock.sendall(chunk)
    except OSError:
        return  # the daemon went away: the other direction notices and ends the shim
    # The host closed our stdin: tell the daemon, which drains what is in flight.
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return


def _socket_to_stdout(sock: socket.socket) -> None:
    try:
        while chunk := sock.recv(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view) :]
    except OSError:
        return  # stdout closed (the host is gone) or the connection broke


def carry_lines(sock: socket.socket) -> None:
    """Copy stdin -> ``sock`` and ``sock`` -> stdout until the daemon closes ``sock``.

    The stdin side is a daemon thread: a host may keep our stdin open after the daemon
    has closed the connection, and a blocked read must not keep the shim alive.
    """
    inbound = threading.Thread(target=_stdin_to_socket, args=(sock,), daemon=True)
    inbound.start()
    _socket_to_stdout(sock)


@click.command("serve")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: serve this process's stdin/stdout through the daemon.",
)
@click.option(
    "--profile",
    metavar="NAME",
    default=None,
    help="Offer this host only the servers of profile NAME (default: mcp.profile).",
)
@settings_options_showing("mcp.passthrough")
def serve_command(transport: str, profile: str | None, **params: Any) -> None:
    """Serve MCP on stdio, through the daemon (started if needed)."""
    loaded = load_settings(params)
    if endpoint := parse_endpoint(str(loaded.settings["daemon.endpoint"])):
        from ._serve_remote import serve_remote  # only for a daemon elsewhere

        return serve_remote(loaded.settings, endpoint, transport, profile, serve_stdio)
    servers = servers_for(loaded)
    if profile is not None:
        check_profile(servers, profile, "--profile")
    unknown = [s for s in loaded.settings["mcp.passthrough"] if s not in servers]
    if unknown:
        # Refused here, not ignored by the daemon: the host would silently lack them.
        raise click.UsageError(
            f"--passthrough names {', '.join(map(repr, unknown))}, which is not a "
            f"configured server (configured: {', '.join(sorted(servers))})"
        )
    client = DaemonClient(loaded)
    client.ensure()
    if transport == "http":
        url = (client.info() or {}).get("url", "<the daemon's url>")
        raise click.ClickException(
            f"the daemon already serves MCP over HTTP at {url}/mcp: point the client there "
            "(mcpx serve is for stdio only)"
        )
    options: dict[str, Any] = {}
    if loaded.settings.origin("mcp.passthrough").kind.value != "default":
        # --passthrough (or its env var) on serve: this host's own pass-through servers.
        options["passthrough"] = list(loaded.settings["mcp.passthrough"])
    if profile is not None:
        options["profile"] = profile
    wait = float(loaded.settings["daemon.stopGrace"]) + _RESTART_WAIT

    def next_daemon(pid: int) -> None:
        # The old daemon lets go of the state dir when it exits: then the next one is
        # there (`mcpx restart` starts it), or this shim starts it.
        deadline = time.monotonic() + wait
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        client.ensure()

    serve_stdio(client.paths.stdio_socket, options, next_daemon)


def serve_stdio(
    path: Path,
    options: dict[str, Any] | None = None,
    next_daemon: Callable[[int], None] | None = None,
) -> None:
    """Serve this process's stdin/stdout through the stdio channel at ``path``: handed
    off when the daemon takes the descriptors, relayed otherwise. ``options`` are this
    host's own settings (``passthrough``). When the daemon restarts and gives the host
    back, ``next_daemon(old pid)`` waits for the next one, which takes the host over."""
    line = options_line(options or {})
    served, resume = handoff(path, line)
    while resume is not None and next_daemon is not None:
        next_daemon(int(resume.get("daemon", 0)))
        served, resume = handoff(path, options_line({**(options or {}), "resume": resume}))
        if not served:
            raise click.ClickException(f"the restarted daemon at {path} refused the host")
    if served:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot reach the daemon's stdio channel at {path}: {exc}"
        ) from exc
    with sock:
        if line:
            sock.sendall(line)  # before any of the host's bytes
        carry_lines(sock)
