"""``mcpx bridge`` (hidden): run on a remote host by an ``ssh://`` endpoint's mcpx.

- ``--print-socket``: this host's daemon running (started here if needed, said on
  stderr) and one JSON line on stdout: its socket, pid, version and state dir. Starts
  nothing else and keeps nothing open.
- Without it: a byte bridge between stdio and one connection to the daemon's /v1 socket,
  until the daemon closes the connection. The far side speaks HTTP through it; nothing
  is parsed here.

It always means this state dir's own daemon: a ``daemon.endpoint`` configured on the
host is not followed (a bridge to somewhere else would hide where the daemon is).
"""

from __future__ import annotations

import json
import socket
from typing import Any

import click

from mcpx import __version__

from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._serve import carry_lines

__all__ = ["bridge_command"]


@click.command("bridge", hidden=True)
@click.option("--print-socket", is_flag=True, help="Print the daemon's socket as JSON and exit.")
@settings_options
def bridge_command(print_socket: bool, **params: Any) -> None:
    """Bridge stdio to this host's daemon (for ssh:// endpoints)."""
    client = DaemonClient(load_settings(params), local=True)
    client.ensure()
    if print_socket:
        info = client.info() or {}
        facts = {
            "socket": str(client.paths.socket),
            "pid": info.get("pid"),
            "version": info.get("version", __version__),
            "state": str(client.paths.state),
        }
        click.echo(json.dumps(facts))
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(client.paths.socket))
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot reach the daemon at {client.paths.socket}: {exc}"
        ) from None
    with sock:
        carry_lines(sock)
