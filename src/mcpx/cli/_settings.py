"""``mcpx settings``: every setting, its value, and where the value came from."""

from __future__ import annotations

import click

from mcpx.config import SETTINGS
from mcpx.wire import dumps

from ._context import load_settings, settings_options


@click.command("settings")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@settings_options
def settings_command(as_json: bool, **params: str | None) -> None:
    """Every setting, its value and where it came from (default, file, env, flag)."""
    loaded = load_settings(params)
    config = loaded.config
    if as_json:
        doc = {
            "config": {"path": str(config.path), "foundBy": config.describe()} if config else None,
            "settings": loaded.settings.as_json(),
            "spec": loaded.settings.policy().as_json(),
        }
        click.echo(dumps(doc).decode())
        return
    click.echo(
        f"config file: {config.path} ({config.describe()})" if config else "config file: none"
    )
    rows = [(n, loaded.settings.display(n), str(loaded.settings.origin(n))) for n in SETTINGS]
    width = max(len(n) for n, _, _ in rows)
    vwidth = min(max(len(v) for _, v, _ in rows), 40)
    click.echo(f"{'SETTING':<{width}}  {'VALUE':<{vwidth}}  FROM")
    for name, value, origin in rows:
        click.echo(f"{name:<{width}}  {value:<{vwidth}}  {origin}")
    click.echo("")
    click.echo("Each setting is also an environment variable and a flag:")
    for name, s in SETTINGS.items():
        click.echo(f"  {name:<{width}}  {', '.join(s.envs)}  {', '.join(s.flags)}")
