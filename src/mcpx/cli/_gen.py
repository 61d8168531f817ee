"""``mcpx gen python``: the typed client of the live tools, written as a package.

The daemon generates it (``GET /v1/exec/client``, the same package ``mcpx exec``
gives a script); this command writes it under ``--out`` so an editor and mypy can
check a script before it runs.

Invariants:

- Only a directory this command wrote is rewritten: it holds the marker file
  (``MARKER``), which lists the files written. Anything else at the package's path is
  refused, never overwritten.
- A rewrite removes the files the previous one wrote (a server since removed leaves no
  stale module) and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any, Final

import click

from mcpx.ops import by_name

from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._views import fail_reply

__all__ = ["MARKER", "gen_group"]

MARKER: Final = ".mcpx-generated"
_PACKAGE: Final = "mcpx_tools"  # what the daemon names it (mcpx.exec.PACKAGE)


@click.group("gen")
def gen_group() -> None:
    """Generate code from the live tool schemas."""


@gen_group.command("python")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default="the working directory",
    help="The directory the package mcpx_tools is written into.",
)
@click.option(
    "--profile",
    metavar="NAME",
    default=None,
    help="Only the servers a host of profile NAME sees (default: every server).",
)
@settings_options
def python_command(out: Path, profile: str | None, **params: Any) -> None:
    """Write the typed Python client (package mcpx_tools) of every server's tools.

    One module per server, one function per tool with typed keyword arguments
    (``from mcpx_tools import demo; demo.echo(text="hi")``), for scripts run by
    ``mcpx exec``. Run it again when the servers' tools change.
    """
    target = out / _PACKAGE
    old = _previous(target)  # refused before the daemon is put to any work
    client = DaemonClient(load_settings(params), profile=profile)
    response = client.call("GET", by_name("exec.client").path)
    if response.status_code >= 400:
        fail_reply(response)
    doc: dict[str, Any] = response.json()
    files: dict[str, str] = doc["files"]
    for rel in files:
        _check_path(rel, _PACKAGE)
    for rel in old - set(files):
        (out / rel).unlink(missing_ok=True)
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (target / MARKER).write_text(_marker(files), encoding="utf-8")
    for server, why in sorted((doc.get("errors") or {}).items()):
        click.echo(f"mcpx: left out {server}: its tools could not be listed ({why})", err=True)
    modules = [r for r in files if r.endswith(".py") and not PurePosixPath(r).name.startswith("_")]
    click.echo(f"wrote {target} ({len(modules)} server modules):")
    for rel in sorted(files):
        click.echo(f"  {out / rel}")


def _previous(target: Path) -> set[str]:
    """The files the last run wrote at ``target``; refuses a directory it did not write.

    Raises:
        click.ClickException: ``target`` exists and is not this command's.
    """
    if not target.exists():
        return set()
    marker = target / MARKER
    if not target.is_dir() or not marker.is_file():
        raise click.ClickException(
            f"{target} exists and was not written by `mcpx gen python` (it has no {MARKER}); "
            "remove it, or pass --out with another directory"
        )
    try:
        listed = json.loads(marker.read_text(encoding="utf-8")).get("files") or []
    except (ValueError, AttributeError):
        listed = []
    package = target.name
    return {f for f in listed if isinstance(f, str) and _inside(f, package)}


def _inside(rel: str, package: str) -> bool:
    path = PurePosixPath(rel)
    return not path.is_absolute() and ".." not in path.parts and path.parts[:1] == (package,)


def _check_path(rel: str, package: str) -> None:
    if not _inside(rel, package):
        raise click.ClickException(f"the daemon sent a file outside {package}: {rel!r}")


def _marker(files: dict[str, str]) -> str:
    note = "written by `mcpx gen python`, which rewrites this directory; do not edit"
    return json.dumps({"note": note, "files": sorted(files)}, indent=2) + "\n"
