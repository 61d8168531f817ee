"""``mcpx ui``: open the daemon's web console (``<daemon url>/ui``) in a browser.

The daemon is started when it is not running, as for any command. The URL is printed
first, so a person on a machine with no browser (or with ``--no-browser``) can open it
elsewhere through a tunnel.

When the daemon's port needs a token (``daemon.auth``), a browser cannot send one: the
command asks the daemon (over its unix socket) for a one-time login ticket and opens
``/ui/login#<ticket>``, which logs the browser in with a session cookie. The ticket is in
the fragment, which a browser never sends; it works once, within two minutes. Printed
(with ``--no-browser``) only then, since the person has to open it elsewhere.
"""

from __future__ import annotations

import webbrowser
from typing import Any, Final

import click

from ._context import load_settings, settings_options
from ._daemon import DaemonClient

__all__ = ["ui_command"]

_PAGE: Final = "/ui"
_LOGIN: Final = "/ui/login"


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
    opened = page
    if str(client.loaded.settings["daemon.auth"]) != "none":
        opened, life = _login_link(client, url)
        if no_browser:
            click.echo(f"log in (once, within {life:.0f} s) by opening: {opened}")
    if not no_browser and not webbrowser.open(opened):
        hint = "open the URL above" if opened == page else "run `mcpx ui --no-browser`"
        click.echo(f"mcpx: no browser could be opened here; {hint}", err=True)


def _login_link(client: DaemonClient, url: str) -> tuple[str, float]:
    """The one-time login URL (the ticket in its fragment) and its seconds to live."""
    reply = client.http().request("POST", "/ui/login/ticket", json_body={})
    if reply.status_code != 200:
        raise click.ClickException(f"the daemon gave no login ticket ({reply.status_code})")
    answer = reply.json()
    return f"{url.rstrip('/')}{_LOGIN}#{answer['ticket']}", float(answer["expiresIn"])
