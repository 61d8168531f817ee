"""``mcpx install-host HOST``: write mcpx itself into an MCP host's own config file.

Job: put ``{"command": <this mcpx>, "args": ["serve"]}`` under ``--name`` (``mcpx``) in the
servers of Claude Desktop, VS Code or Cursor (``mcpx.config.HOSTS`` knows where each
keeps them, and ``config.put_entry`` does the edit). Everything read from the process
(the platform, the home directory, the environment, the clock, which ``mcpx`` runs) is
read here.

Invariants:

- The command is the absolute path of the ``mcpx`` executable that runs, when one can be
  found, so the host starts the same installation whatever its own ``PATH``; else ``mcpx``.
- A second run changes nothing and says so; a run that changes the file backs it up first.
- ``--print`` writes nothing: the snippet on stdout, where it would go on stderr.
- A host file mcpx cannot read as JSONC (comments and trailing commas are fine; an entry
  to change with comments inside it is not) is refused (exit 2) with
  ``path:line:column`` and left as it was.
- ``--profile P`` names a profile of the config this mcpx uses (``mcpx serve`` checks it
  the same way when the host starts it): an unknown one is refused (exit 2) with the
  profiles the config has, before anything is printed or written.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click

from mcpx.config import (
    HOSTS,
    ConfigError,
    host_config_path,
    put_entry,
    read_host_config,
    serve_entry,
    snippet,
    write_host_config,
)

from ._context import UsageFailure, load_settings, settings_options
from ._daemon import check_profile, servers_for

__all__ = ["install_host_command", "mcpx_executable"]


def _script_name() -> str:
    return "mcpx.exe" if sys.platform == "win32" else "mcpx"


def mcpx_executable() -> str:
    """The ``mcpx`` that runs now, as an absolute path; ``mcpx`` when none is found.

    In order: this process's own script (``sys.argv[0]`` named ``mcpx``), the script next
    to this interpreter (``python -m mcpx`` in a virtualenv: its ``bin/mcpx``, found
    without resolving the interpreter's symlink, which leads out of the virtualenv), then
    ``mcpx`` on ``PATH``.
    """
    name = _script_name()
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = []
    if argv0 is not None and argv0.name == name:
        candidates.append(argv0)
    candidates.append(Path(sys.executable).parent / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())
    found = shutil.which(name)
    return str(Path(found).absolute()) if found else "mcpx"


@click.command("install-host")
@click.argument("host", type=click.Choice(sorted(HOSTS)))
@click.option(
    "--profile",
    default=None,
    metavar="P",
    help="The host sees only profile P (mcpx serve --profile P).",
)
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print the entry to paste into the host's config, and write nothing.",
)
@click.option(
    "--name",
    default="mcpx",
    show_default=True,
    help="The server's name in the host's config.",
)
@settings_options
def install_host_command(
    host: str, profile: str | None, print_only: bool, name: str, **params: Any
) -> None:
    """Write mcpx (``mcpx serve``) into HOST's MCP config, backing up the original."""
    if profile is not None and not profile.strip():
        raise UsageFailure("--profile needs a profile name")
    if profile is not None:
        check_profile(servers_for(load_settings(params)), profile, "--profile")
    if not name.strip():
        raise UsageFailure("--name needs a name")
    target = HOSTS[host]
    entry = serve_entry(target, mcpx_executable(), profile)
    path = host_config_path(target, sys.platform, Path.home(), os.environ)
    if print_only:
        click.echo(snippet(target, name, entry))
        click.echo(f"{target.label} reads its MCP servers from {path}", err=True)
        return
    try:
        edited = put_entry(read_host_config(path), path, target, name, entry)
    except ConfigError as exc:
        raise UsageFailure(f"{exc} (nothing changed)") from None
    if edited is None:
        click.echo(f"{path}: {target.label} already starts mcpx as {name!r}; nothing changed")
        return
    try:
        backup = write_host_config(path, edited, time.strftime("%Y%m%d-%H%M%S"))
    except OSError as exc:
        raise click.ClickException(f"{path}: not written: {exc}") from None
    kept = f"the original is kept as {backup}" if backup else "a new file"
    click.echo(f"{path}: {target.label} now starts mcpx as {name!r} ({kept})")
    click.echo(f"restart {target.label} (or reload its MCP servers) to connect", err=True)
