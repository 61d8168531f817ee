"""``mcpx settings``: every setting, its value, and where the value came from; then the
config's profiles, and what each server's filters say (``mcpx servers`` adds what they
hid of its listed tools)."""

from __future__ import annotations

import click

from mcpx.config import (
    SETTINGS,
    ConfigFile,
    filter_notes,
    known_profiles,
    load_config_file,
    profile_reach,
)
from mcpx.wire import dumps

from ._context import load_settings, settings_options


@click.command("settings")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@settings_options
def settings_command(as_json: bool, **params: str | None) -> None:
    """Every setting, its value and where it came from (default, file, env, flag)."""
    loaded = load_settings(params)
    config = loaded.config
    file = load_config_file(config.path) if config else None
    if as_json:
        doc = {
            "config": {"path": str(config.path), "foundBy": config.describe()} if config else None,
            "settings": loaded.settings.as_json(),
            "spec": loaded.settings.policy().as_json(),
            "profiles": _profiles(file) if file else None,
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
    if file is None:
        return
    click.echo("")
    for name, about in _profiles(file).items():
        click.echo(f"profile {name}: {', '.join(about['servers']) or '(no server)'}")
    for server in file.servers.values():
        for note in filter_notes(server):
            click.echo(f"{server.name}: {note}")
    for server in file.disabled.values():
        click.echo(f"{server.name}: disabled (mcpx enable {server.key})")


def _profiles(file: ConfigFile) -> dict[str, dict[str, list[str]]]:
    """Each profile the config names, with its servers (disabled ones are in none)."""
    return {
        name: {"servers": sorted(profile_reach(file.servers, name))}
        for name in known_profiles(file.servers)
    }
