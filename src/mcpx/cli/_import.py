"""``mcpx import``: add the servers other MCP hosts already have configured.

Sources (``config.HOSTS``, read by ``_host_files``): Claude Desktop, VS Code (user
settings, user and workspace ``mcp.json``), Cursor (user and workspace), or a FILE with
``mcpServers``, ``servers`` or ``mcp.servers``. With no ``--from``, every host's files
that exist.

Merging, in the order the sources are read:

- A server the same as one already configured, or already taken from an earlier source
  (the same command and args, or the same URL), is skipped and reported as merged.
- A name already used for something different gets the source's name as a suffix
  (``github-cursor``; then ``-2``, ``-3``…), and the rename is reported.
- An entry mcpx would refuse is skipped, with the reason; so is mcpx itself
  (``mcpx serve``, as ``mcpx install-host`` writes it).

What will be added is shown first (env and header values hidden); ``--dry-run`` stops
there. Everything is added in one edit of the config file (``config.plan_edit``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from mcpx.config import (
    HOSTS,
    ConfigError,
    HostPath,
    edit_target,
    host_files,
    parse_config_text,
    with_server,
)

from ._add import apply_edit, shown_entry
from ._context import load_settings, settings_options
from ._host_files import read_servers

__all__ = ["import_command"]


def _identity(entry: object) -> tuple[object, ...] | None:
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("url"), str):
        return ("url", entry["url"])
    if isinstance(entry.get("command"), str):
        return ("command", entry["command"], tuple(entry.get("args") or ()))
    return None


def _is_mcpx(entry: object) -> bool:
    """An entry ``mcpx install-host`` wrote: importing it would make mcpx its own upstream."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") or []
    return Path(entry["command"]).name == "mcpx" and args[:1] == ["serve"]


def _sources(given: str | None) -> list[HostPath]:
    home, cwd = Path.home(), Path.cwd()
    hosts = list(HOSTS) if given is None else [given] if given in HOSTS else []
    if not hosts:
        return [HostPath(Path(given or "").stem or "file", Path(given or "").expanduser(), ())]
    out = []
    for host in hosts:
        out += host_files(HOSTS[host], sys.platform, home, cwd, os.environ)
    return [f for f in out if f.path.is_file()]


def _problem(name: str, entry: object) -> str | None:
    """Why mcpx would refuse ``entry``, if it would."""
    try:
        parse_config_text(json.dumps({"mcpServers": {name: entry}}), "<entry>")
    except ConfigError as exc:
        return exc.problem
    return None


def _free(name: str, suffix: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    candidate = f"{name}-{suffix}"
    n = 2
    while candidate in taken:
        candidate, n = f"{name}-{suffix}-{n}", n + 1
    return candidate


def plan_import(
    sources: list[HostPath], existing: dict[str, object]
) -> tuple[list[tuple[str, dict[str, Any], HostPath]], list[str]]:
    """What to add (name, entry, where from) and what to say about the rest.

    Raises:
        ConfigError: a source file does not parse.
    """
    taken = set(existing)
    seen = {_identity(e): n for n, e in existing.items() if _identity(e) is not None}
    adds: list[tuple[str, dict[str, Any], HostPath]] = []
    notes: list[str] = []
    for source in sources:
        for name, entry in read_servers(source.path, source.servers or None).items():
            if _is_mcpx(entry):
                notes.append(f"skipped {name} ({source.path}): it is mcpx itself (mcpx serve)")
                continue
            problem = _problem(name, entry)
            if problem is not None or not isinstance(entry, dict):
                notes.append(f"skipped {name} ({source.path}): {problem}")
                continue
            same = seen.get(_identity(entry))
            if same is not None:
                notes.append(f"merged {name} ({source.path}): the same server as {same}")
                continue
            new = _free(name, source.host, taken)
            if new != name:
                notes.append(f"renamed {name} ({source.path}) to {new}: {name} is taken")
            taken.add(new)
            seen[_identity(entry)] = new
            adds.append((new, entry, source))
    return adds, notes


def _existing(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8-sig") if path.is_file() else ""
        doc = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}  # the edit reads it again, and refuses it with its position
    out: dict[str, object] = {}
    for block in ("mcpServers", "servers"):
        if isinstance(doc.get(block), dict):
            out.update(doc[block])
    return out


@click.command("import")
@click.option("--from", "source", default=None, metavar="claude|vscode|cursor|FILE")
@click.option("--dry-run", is_flag=True, help="Show what would be added; change nothing.")
@settings_options
def import_command(source: str | None, dry_run: bool, **params: Any) -> None:
    """Add the servers Claude Desktop, VS Code or Cursor (or FILE) have configured."""
    target = edit_target(load_settings(params).config)
    sources = _sources(source)
    try:
        adds, notes = plan_import(sources, _existing(target))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    for note in notes:
        click.echo(note)
    if not adds:
        read = ", ".join(str(s.path) for s in sources) or "no host config file found"
        click.echo(f"nothing to add (read: {read})")
        return
    verb = "would add" if dry_run else "adding"
    for name, entry, where in adds:
        click.echo(f"{verb} {name} (from {where.path}): {shown_entry(entry)}")
    if dry_run:
        return

    def change(text: str, path: Path) -> str:
        for name, entry, _ in adds:
            text = with_server(text, path, name, entry)
        return text

    edit = apply_edit(params, change, False)
    click.echo(f"added {len(adds)} server{'s' if len(adds) != 1 else ''} to {edit.path}")
