"""``mcpx protocol``: the revision matrix and the effective spec policy."""

from __future__ import annotations

import click

from mcpx import spec
from mcpx.wire import dumps

from ._context import load_settings, settings_options

_MARK = {"defined": "✔", "removed": "✗", "absent": "·"}


def _cell(row: spec.Row, rev: str) -> str:
    if row.defined_in(rev):
        return _MARK["defined"]
    if row.removed_in is not None and spec.at_or_after(rev, row.removed_in):
        return _MARK["removed"]
    return _MARK["absent"]


def render_table(rows: list[spec.Row]) -> str:
    width = max(len(r.name) for r in rows) if rows else 4
    head = f"{'KIND':<13}{'NAME':<{width + 2}}{'DIR':<8}" + "".join(
        f"{r[2:7]:>7}" for r in spec.REVISIONS
    )
    lines = [head]
    for row in rows:
        marks = "".join(f"{_cell(row, r):>7}" for r in spec.REVISIONS)
        ext = f"  ({row.extension})" if row.extension else ""
        lines.append(f"{row.kind:<13}{row.name:<{width + 2}}{row.direction or '':<8}{marks}{ext}")
    return "\n".join(lines)


@click.command("protocol")
@click.option("--json", "as_json", is_flag=True, help="Print the matrix as JSON.")
@click.option(
    "--kind",
    type=click.Choice(["request", "notification", "input", "capability", "field"]),
    help="Only rows of this kind.",
)
@settings_options
def protocol(as_json: bool, kind: str | None, **flags: str | None) -> None:
    """The revision matrix: what each MCP revision defines, and the spec policy."""
    settings = load_settings(flags).settings
    policy = settings.policy()
    if as_json:
        doc = spec.protocol_json(policy)
        click.echo(dumps(doc).decode())
        return
    p = policy.as_json()
    click.echo(f"spec.precedence: {', '.join(p['precedence'])}")
    click.echo(f"spec.lenient:    {', '.join(p['lenient']) or '(none: every revision strict)'}")
    click.echo(f"legend: {_MARK['defined']} defined  {_MARK['removed']} removed  · not yet")
    click.echo("")
    click.echo(render_table(list(spec.rows(kind))))
