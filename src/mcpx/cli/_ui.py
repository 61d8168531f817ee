"""``mcpx ui``: open the daemon's web console (``<daemon url>/ui``) in a browser.

The daemon is started when it is not running, as for any command. The URL is printed
first, so a person on a machine with no browser (or with ``--no-browser``) can open it
elsewhere through a tunnel.
"""

from __future__ import annotations

import webbrowser
from typing import Any, Final

import click

from ._context import load_settings, settings_options
from ._daemon import DaemonClient

__all__ = ["ui_command"]

_PAGE: Final = "/ui"


@click.command("ui")
@click.option("--no-browser", is_flag=True, help="Print the console's URL; open nothing.")
@settings_options
def ui_command(no_browser: bool, **params: Any) -> None:
    """Open the web console: servers, tools, questions, events, calls (prints its URL)."""
    client = DaemonClient(load_settings(params))
    if client.endpoint is not None:
        raise click.UsageError(
            "daemon.endpoint names a daemon elsewhere: its console is served there, at "
            "its own URL's /ui (reach its port through a tunnel of yours to open it)"
        )
    client.ensure()
    info = client.info() or {}
    url = info.get("url")
    if not isinstance(url, str) or not url:
        raise click.ClickException("the daemon runs but says no URL: is its TCP port off?")
    page = url.rstrip("/") + _PAGE
    click.echo(page)
    if not no_browser and not webbrowser.open(page):
        click.echo("mcpx: no browser could be opened here; open the URL above", err=True)
