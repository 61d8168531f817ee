"""``mcpx serve``: mcpx as a stdio MCP server, for hosts that can only spawn a process.

Job: a thin shim. It makes sure the daemon runs, connects to the daemon's stdio channel
(``<state>/mcpx-stdio.sock``) and relays bytes both ways; the daemon does all the MCP.

Invariants:

- Nothing is parsed here: bytes from stdin go to the daemon as read, bytes from the daemon
  go to stdout as received, flushed per chunk (``os.write`` has no buffer to flush).
- stdout carries only what the daemon sent; anything mcpx says goes to stderr.
- At stdin EOF the socket's write half is shut, and answers still in flight keep flowing
  to stdout until the daemon closes the connection; then the shim exits 0.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Final

import click

from ._context import load_settings, settings_options
from ._daemon import DaemonClient

__all__ = ["serve_command"]

_CHUNK: Final = 64 * 1024


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


def relay(sock: socket.socket) -> None:
    """Relay stdin -> ``sock`` and ``sock`` -> stdout until the daemon closes ``sock``.

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
    help="stdio: relay this process's stdin/stdout to the daemon.",
)
@settings_options
def serve_command(transport: str, **params: Any) -> None:
    """Serve MCP on stdio, through the daemon (started if needed)."""
    client = DaemonClient(load_settings(params))
    client.ensure()
    if transport == "http":
        url = (client.info() or {}).get("url", "<the daemon's url>")
        raise click.ClickException(
            f"the daemon already serves MCP over HTTP at {url}/mcp: point the client there "
            "(mcpx serve relays stdio only)"
        )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(client.paths.stdio_socket))
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot reach the daemon's stdio channel at {client.paths.stdio_socket}: {exc}"
        ) from exc
    with sock:
        relay(sock)
