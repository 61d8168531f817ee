"""``mcpx doctor``: what is configured, whether each server starts, whether the daemon and
the state dir are sound, and for each thing broken what fixes it.

Exit status: 0 when nothing is broken, ``EX_BROKEN`` (8) when something is (the report
lists each problem with its fix), 2 for a usage error. ``--json`` prints the report as
one object for scripts. How the checks are made: ``_doctor_checks``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import anyio
import click

from mcpx.config import ConfigError, locate_config_file, resolve, state_dir

from ._context import UsageFailure, load_settings, settings_options
from ._daemon import DaemonClient
from ._doctor_checks import (
    Problem,
    check_config,
    check_daemon,
    check_servers,
    check_state,
    environment_note,
    servers_of,
)
from ._doctor_oauth import oauth_states

__all__ = ["EX_BROKEN", "doctor_command"]

EX_BROKEN: Final = 8
_CONFIG_PARAM: Final = "config_file"


def _daemon_version(client: DaemonClient) -> tuple[dict[str, Any] | None, str | None]:
    """The running daemon's daemon.json, and its version if it answers /health."""
    info = client.info()
    if info is None:
        return None, None
    try:
        answers = client.http().request("GET", "/health", timeout=5).status_code == 200
    except OSError:
        answers = False
    version = info.get("version")
    return info, str(version) if answers and version else None


def _daemon_auth(client: DaemonClient) -> list[dict[str, Any]] | None:
    """The running daemon's OAuth sign-ins (``GET /v1/auth``), or None if it cannot say."""
    try:
        reply = client.http().request("GET", "/v1/auth", timeout=10)
        rows = reply.json().get("servers") if reply.status_code == 200 else None
    except (OSError, ValueError, AttributeError):
        return None
    return rows if isinstance(rows, list) else None


def _report(params: dict[str, Any]) -> dict[str, Any]:
    problems: list[Problem] = []
    try:
        where = locate_config_file(params.get(_CONFIG_PARAM), os.environ, Path.cwd())
    except ConfigError as exc:
        raise UsageFailure(str(exc)) from exc
    config, found, file = check_config(where)
    problems += found
    try:
        loaded = load_settings(params)
        settings = loaded.settings
    except UsageFailure as exc:
        if file is not None:
            raise  # the file is sound: a flag or the environment is not
        settings = resolve(file=None, env=os.environ, flags={})  # the file was refused
        loaded = None
        if where is None:
            problems.append({"what": str(exc), "fix": "correct the setting it names"})
    state = Path(state_dir(settings))
    state_section, found = check_state(state)
    problems += found
    daemon: dict[str, Any] = {"running": False}
    signed_in: list[dict[str, Any]] | None = None
    if loaded is not None:
        info, version = _daemon_version(DaemonClient(loaded))
        daemon, found = check_daemon(info, version)
        problems += found
        if version is not None:
            signed_in = _daemon_auth(DaemonClient(loaded))
    configured = servers_of(file)
    signed = oauth_states(configured, signed_in, state)
    servers, found = anyio.run(check_servers, configured, settings, signed, state)
    problems += found
    return {
        "ok": not problems,
        "config": config,
        "environment": environment_note(),
        "state": state_section,
        "daemon": daemon,
        "servers": servers,
        "problems": problems,
    }


def _show(report: dict[str, Any]) -> None:
    config = report["config"]
    click.echo(f"config: {config['file'] or 'none'} ({config.get('foundBy') or config['note']})")
    if config.get("servers") is not None:
        click.echo(f"  servers: {', '.join(config['servers']) or 'none'}")
        if config["disabled"]:
            click.echo(f"  disabled: {', '.join(config['disabled'])}")
        if config["settings"]:
            click.echo(f"  settings: {', '.join(config['settings'])}")
    state = report["state"]
    click.echo(f"state dir: {state['dir']} {state.get('mode') or state.get('note')}")
    daemon = report["daemon"]
    if daemon["running"]:
        click.echo(
            f"daemon: pid {daemon['pid']} at {daemon['url']}, version {daemon['version']} "
            f"(cli {daemon['cliVersion']})"
        )
    else:
        click.echo("daemon: not running (any command starts it)")
    for s in report["servers"]:
        if s["ok"] and s.get("started") is False:
            click.echo(f"server {s['name']}: {s['authState']} (the daemon's tokens; not started)")
            continue
        if s["ok"]:
            click.echo(
                f"server {s['name']}: ok, {s.get('era')} {s.get('revision')}, first answer "
                f"{s['firstAnswerMs']} ms, {s['tools']} tools, auth {s['auth']}"
            )
            continue
        click.echo(f"server {s['name']}: FAILED ({s['transport']}, auth {s['auth']}): {s['error']}")
        for line in s.get("stderr") or []:
            click.echo(f"  stderr: {line}")
    for problem in report["problems"]:
        click.echo(f"problem: {problem['what']}\n  fix: {problem['fix']}")
    click.echo("all good" if report["ok"] else f"{len(report['problems'])} problem(s)")


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@settings_options
def doctor_command(as_json: bool, **params: Any) -> None:
    """Check the config, start each server once, check the daemon and the state dir;
    say what is broken and how to fix it (exit 8 when something is)."""
    report = _report(params)
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        _show(report)
    if not report["ok"]:
        raise SystemExit(EX_BROKEN)
