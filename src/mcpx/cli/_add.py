"""``mcpx add``, ``remove``, ``enable`` and ``disable``: edit the config file mcpx uses.

The file is the one ``mcpx settings`` names, else the user config file (created). Every
edit keeps the rest of the file's text as it was and is written atomically
(``config.plan_edit`` / ``write_edit``); the running daemon follows the file by itself
(``daemon.configPoll``). ``mcpx add`` then waits, bounded, until the daemon lists the
server, starts it once (``/v1/tools?server=NAME&refresh=true``) and says whether it
answered, in which era and revision, with how many tools; an upstream that fails ends
the command with 5, the entry staying in the file. Exit codes: 2 a refused edit (a name
that exists without ``--force``, a file that would not load), 4 no such server.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from mcpx.config import (
    SCOPES,
    ConfigEdit,
    ConfigError,
    EditRefused,
    NoSuchServer,
    edit_target,
    plan_edit,
    redact_headers,
    redact_url,
    with_disabled,
    with_server,
    without_server,
    write_edit,
)

from ._context import UsageFailure, load_settings, settings_options
from ._daemon import DaemonClient
from ._server_json import RegistryEntry, ServerJsonError, load_server_json

__all__ = ["EX_UNKNOWN", "EX_UPSTREAM", "apply_edit", "edit_commands", "shown_entry"]

EX_UNKNOWN = 4
EX_UPSTREAM = 5


def shown_entry(entry: dict[str, Any]) -> str:
    """An entry as it may be shown: the values of env and headers, and url secrets, hidden."""
    shown = dict(entry)
    for key in ("env", "headers"):
        if isinstance(shown.get(key), dict):
            shown[key] = redact_headers(shown[key])
    if isinstance(shown.get("url"), str):
        shown["url"] = redact_url(shown["url"])
    return json.dumps(shown, ensure_ascii=False)


def _pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"{flag} takes KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def apply_edit(params: dict[str, Any], change: Any, dry_run: bool) -> ConfigEdit:
    """Plan ``change`` on the config file mcpx uses; write it unless ``dry_run``."""
    path = edit_target(load_settings(params).config)
    try:
        edit = plan_edit(path, change)
        if not dry_run:
            write_edit(edit)
    except NoSuchServer as exc:
        click.echo(f"mcpx: {exc}", err=True)
        raise SystemExit(EX_UNKNOWN) from None
    except (ConfigError, EditRefused) as exc:
        raise UsageFailure(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot be written: {exc.strerror or exc}") from None
    return edit


def _entry(
    command: tuple[str, ...],
    url: str | None,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    registry: RegistryEntry | None,
) -> dict[str, Any]:
    given = [bool(command), url is not None, registry is not None]
    if sum(given) != 1:
        raise click.UsageError(
            "give exactly one of: -- COMMAND [ARGS]..., --url URL, --from-registry"
        )
    if headers and url is None:
        raise click.UsageError("--header goes with --url")
    if env and url is not None:
        raise click.UsageError("--env goes with a command (a url server has no environment)")
    if registry is not None:
        return dict(registry.entry)
    if url is not None:
        entry: dict[str, Any] = {"url": url}
        if headers:
            entry["headers"] = _pairs(headers, "--header")
        return entry
    entry = {"command": command[0], "args": list(command[1:])}
    if env:
        entry["env"] = _pairs(env, "--env")
    return entry


def _registry(source: str | None) -> RegistryEntry | None:
    if source is None:
        return None
    try:
        found = load_server_json(source)
    except ServerJsonError as exc:
        raise UsageFailure(str(exc)) from None
    for need in found.needs:
        kind = "required" if need.required else "optional"
        secret = ", secret" if need.secret else ""
        about = f": {need.description}" if need.description else ""
        filled = f" (placeholder <{need.name}> left to fill in)" if need.required else ""
        click.echo(f"mcpx: {need.kind} {need.name} ({kind}{secret}){about}{filled}", err=True)
    return found


@click.command("add")
@click.argument("name", required=False)
@click.argument("command", nargs=-1, metavar="[-- COMMAND [ARGS]...]")
@click.option("--url", default=None, help="An http (or sse) server's URL.")
@click.option("--header", "headers", multiple=True, metavar="K=V", help="A header (with --url).")
@click.option("--env", "env", multiple=True, metavar="K=V", help="An environment variable.")
@click.option("--scope", type=click.Choice(SCOPES), default=None, help="shared or identity.")
@click.option("--profile", "profiles", multiple=True, help="A profile it belongs to (repeatable).")
@click.option(
    "--from-registry", "registry", default=None, metavar="FILE|URL", help="A server.json."
)
@click.option("--force", is_flag=True, help="Replace an entry of that name.")
@click.option("--dry-run", is_flag=True, help="Show the entry; change nothing.")
@settings_options
def add_command(
    name: str | None,
    command: tuple[str, ...],
    url: str | None,
    headers: tuple[str, ...],
    env: tuple[str, ...],
    scope: str | None,
    profiles: tuple[str, ...],
    registry: str | None,
    force: bool,
    dry_run: bool,
    **params: Any,
) -> None:
    """Add a server: NAME -- COMMAND [ARGS]..., NAME --url URL, or --from-registry."""
    found = _registry(registry)
    entry = _entry(command, url, headers, env, found)
    name = name or (found.name if found else None)
    if not name:
        raise click.UsageError("give the server a NAME")
    if scope is not None:
        entry["scope"] = scope
    if profiles:
        entry["mcpx"] = {**entry.get("mcpx", {}), "profiles": list(profiles)}
    edit = apply_edit(
        params, lambda text, path: with_server(text, path, name, entry, force=force), dry_run
    )
    verb = "would add" if dry_run else "added"
    click.echo(f"{verb} {name} to {edit.path}: {shown_entry(entry)}")
    if not dry_run:
        _start_once(params, name)


def _start_once(params: dict[str, Any], name: str) -> None:
    """Wait (bounded) for the daemon to list ``name``, start it once and say how it went."""
    loaded = load_settings(params)  # again: the file may have just been created
    client = DaemonClient(loaded)
    client.ensure()
    poll = float(loaded.settings["daemon.configPoll"])
    if poll <= 0:
        click.echo(
            "mcpx: the daemon does not follow its config file (daemon.configPoll 0): "
            "`mcpx restart` applies the change",
            err=True,
        )
        return
    deadline = time.monotonic() + 10 + 5 * poll
    while _listed(client, name) is None:
        if time.monotonic() > deadline:
            click.echo(
                f"mcpx: the daemon has not taken up {name} (was it started before the "
                "config file existed, or with another one?); `mcpx restart` applies it",
                err=True,
            )
            return
        time.sleep(min(poll, 0.2))
    reply = client.call("GET", "/v1/tools", params={"server": name, "refresh": "true"})
    doc = reply.json() if reply.status_code == 200 else {}
    error = (
        (doc.get("errors") or {}).get(name) if reply.status_code == 200 else _message(reply.text)
    )
    if error:
        click.echo(f"mcpx: {name} did not answer: {error} (the entry stays in the file)", err=True)
        raise SystemExit(EX_UPSTREAM)
    known = (_listed(client, name) or {}).get("catalogue") or {}
    tools = len(doc.get("tools") or [])
    click.echo(
        f"{name} answered: era {known.get('era')}, revision {known.get('revision')}, "
        f"{tools} tool{'s' if tools != 1 else ''}"
    )


def _listed(client: DaemonClient, name: str) -> dict[str, Any] | None:
    reply = client.call("GET", "/v1/servers")
    for server in reply.json().get("servers", []) if reply.status_code == 200 else []:
        if server.get("name") == name:
            return dict(server)
    return None


def _message(text: str) -> str:
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text


@click.command("remove")
@click.argument("name")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@settings_options
def remove_command(name: str, dry_run: bool, **params: Any) -> None:
    """Remove the server NAME from the config file (the daemon stops it)."""
    edit = apply_edit(params, lambda text, path: without_server(text, path, name), dry_run)
    click.echo(f"{'would remove' if dry_run else 'removed'} {name} from {edit.path}")


def _toggle(name: str, disabled: bool, dry_run: bool, params: dict[str, Any]) -> None:
    edit = apply_edit(params, lambda text, path: with_disabled(text, path, name, disabled), dry_run)
    state = "disabled" if disabled else "enabled"
    if not edit.changed:
        click.echo(f"{name} is already {state} in {edit.path}")
        return
    click.echo(f"{'would mark' if dry_run else 'marked'} {name} {state} in {edit.path}")


def _toggle_command(verb: str, disabled: bool, about: str) -> click.Command:
    @click.command(verb, help=about)
    @click.argument("name")
    @click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
    @settings_options
    def command(name: str, dry_run: bool, **params: Any) -> None:
        _toggle(name, disabled, dry_run, params)

    return command


enable_command = _toggle_command("enable", False, "Enable the server NAME (mcpx.disabled false).")
disable_command = _toggle_command(
    "disable",
    True,
    "Disable the server NAME (mcpx.disabled true): the daemon stops offering it.",
)


def edit_commands() -> list[click.Command]:
    return [add_command, remove_command, enable_command, disable_command]
