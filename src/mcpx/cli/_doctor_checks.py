"""What ``mcpx doctor`` looks at, each check a function returning a JSON-able section and
the problems it found (each ``{"what", "fix"}``).

The servers are started here, in the CLI's own process, once each and at the same time,
not through the daemon: a fresh start is what is being diagnosed (the daemon's warm
instance would hide a server that no longer starts), its stderr is caught whole, and
doctor works when there is no daemon or the daemon is what is broken. The daemon is only
asked its version and its OAuth sign-ins (``_doctor_oauth``), if one runs; none is started.
"""

from __future__ import annotations

import os
import stat
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import anyio

from mcpx import __version__
from mcpx.config import (
    ConfigError,
    ConfigLocation,
    ServerConfig,
    Settings,
    load_config_file,
    redact_url,
)
from mcpx.daemon import demo_server

from ._doctor_oauth import seeded_store

__all__ = ["Problem", "check_config", "check_daemon", "check_servers", "check_state"]

Problem = dict[str, str]
_STDERR_TAIL: Final = 20


def check_config(where: ConfigLocation | None) -> tuple[dict[str, Any], list[Problem], Any]:
    """The config file found, what it defines; the file read (None: none, or refused)."""
    if where is None:
        none = {"file": None, "note": "no config file: the embedded demo server is served"}
        return none, [], None
    section: dict[str, Any] = {"file": str(where.path), "foundBy": where.describe()}
    try:
        file = load_config_file(where.path)
    except ConfigError as exc:
        section["error"] = str(exc)
        fix = f"edit {where.path} where the message points (keys a config file may hold: "
        fix += "mcpServers, servers, settings, $schema, inputs)"
        return section, [{"what": str(exc), "fix": fix}], None
    section["servers"] = sorted(file.servers)
    section["disabled"] = sorted(file.disabled)
    section["settings"] = dict(file.settings)
    return section, [], file


def servers_of(file: Any) -> dict[str, ServerConfig]:
    if file is None or (not file.servers and not file.disabled):
        return {"demo": demo_server()}
    return dict(file.servers)


def check_state(state: Path) -> tuple[dict[str, Any], list[Problem]]:
    """The state dir's permissions: 0700 itself, 0600 what it holds."""
    section: dict[str, Any] = {"dir": str(state)}
    if not state.exists():
        section["note"] = "not made yet (the daemon makes it, 0700)"
        return section, []
    problems: list[Problem] = []
    mode = stat.S_IMODE(state.stat().st_mode)
    section["mode"] = f"{mode:04o}"
    if mode & 0o077:
        problems.append(
            {"what": f"the state dir {state} is mode {mode:04o}", "fix": f"chmod 700 {state}"}
        )
    loose = []
    for entry in sorted(state.iterdir()):
        if entry.is_symlink() or entry.is_dir():
            continue
        entry_mode = stat.S_IMODE(entry.lstat().st_mode)
        if entry_mode & 0o077:
            loose.append(entry.name)
            problems.append(
                {
                    "what": f"{entry} is mode {entry_mode:04o}: others may read it",
                    "fix": f"chmod 600 {entry}",
                }
            )
    section["looseFiles"] = loose
    return section, problems


def check_daemon(
    info: Mapping[str, Any] | None, version: str | None
) -> tuple[dict[str, Any], list[Problem]]:
    """The running daemon (if any): its pid, url (the port), version against the CLI's."""
    if info is None:
        return {"running": False, "cliVersion": __version__}, []
    section = {
        "running": True,
        "pid": info.get("pid"),
        "url": info.get("url"),
        "socket": info.get("socket"),
        "version": version,
        "cliVersion": __version__,
    }
    if version is None:
        fix = "mcpx restart (or mcpx stop, then any command starts a fresh one)"
        return section, [{"what": "the daemon runs but does not answer /health", "fix": fix}]
    if version != __version__:
        what = f"the daemon is version {version}, this CLI {__version__}"
        return section, [{"what": what, "fix": "mcpx restart: the daemon runs this version"}]
    return section, []


async def _one(
    server: ServerConfig, settings: Settings, signed: Mapping[str, Any] | None, state: Path
) -> dict[str, Any]:
    # Here, not at the top: the client (httpx, oauth) is a tenth of a second of every
    # CLI start, and only doctor's server checks need it.
    from mcpx.client import Hooks, login_needed, open_session

    stderr: deque[str] = deque(maxlen=_STDERR_TAIL)
    hooks = Hooks(on_stderr=lambda _, line: stderr.append(line))
    auth = str(server.auth.get("type")) if server.auth else "none"
    where = redact_url(server.url) if server.url else " ".join([server.command or "", *server.args])
    out: dict[str, Any] = {"name": server.name, "transport": server.transport, "auth": auth}
    out["where"] = where
    seed = None
    if signed is not None:  # an oauth server: its sign-in first (_doctor_oauth)
        out["authState"] = "logged in" if signed["loggedIn"] else "login needed"
        if not signed["loggedIn"]:
            return out | {
                "ok": False,
                "loginNeeded": True,
                "error": f"login needed ({signed['why']})",
            }
        seed = seeded_store(server, state)
        if seed is None:  # the daemon's tokens, none of them fit to copy: not started here
            return out | {"ok": True, "started": False}
    started = time.monotonic()
    try:
        with anyio.fail_after(float(settings["pool.startTimeout"])):
            async with open_session(server, settings, hooks=hooks, oauth_store=seed) as session:
                out["firstAnswerMs"] = round((time.monotonic() - started) * 1000, 1)
                negotiated = session.negotiated
                if negotiated is not None:
                    out["era"] = negotiated.era.value
                    out["revision"] = negotiated.revision
                out["tools"] = len(await session.list_tools())
                out["ok"] = True
    except TimeoutError:
        out |= {"ok": False, "error": "no answer within pool.startTimeout"}
    except Exception as exc:  # the report's boundary: every failure is what it reports
        out |= {"ok": False, "error": str(exc) or type(exc).__name__}
        if (needed := login_needed(exc)) is not None:
            out |= {"authState": "login needed", "loginNeeded": True}
            out["error"] = f"login needed ({needed.reason})"
    out["ms"] = round((time.monotonic() - started) * 1000, 1)
    if not out["ok"]:
        out["stderr"] = list(stderr)
    return out


async def check_servers(
    servers: Mapping[str, ServerConfig],
    settings: Settings,
    signed: Mapping[str, Mapping[str, Any]] | None = None,
    state: Path | None = None,
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Each server started once, all at once; an oauth server as its sign-in
    (``signed``, per server: ``_doctor_oauth.oauth_states``) allows."""
    found: dict[str, dict[str, Any]] = {}
    signed = signed or {}

    async def run(server: ServerConfig) -> None:
        found[server.name] = await _one(
            server, settings, signed.get(server.name), state or Path(".")
        )

    async with anyio.create_task_group() as tg:
        for server in servers.values():
            tg.start_soon(run, server)
    report = [found[name] for name in sorted(found)]
    problems = [
        {
            "what": f"server {s['name']}: {s['error']}: run mcpx auth login {s['name']}",
            "fix": f"mcpx auth login {s['name']}",
        }
        if s.get("loginNeeded")
        else {
            "what": f"server {s['name']} does not start: {s['error']}",
            "fix": _server_fix(s),
        }
        for s in report
        if not s["ok"]
    ]
    return report, problems


def _server_fix(server: Mapping[str, Any]) -> str:
    if server["transport"] == "stdio":
        return (
            f"run `{server['where']}` by hand to see why it fails (stderr above); fix its "
            f"command, args or env with `mcpx add {server['name']} …`, or "
            f"`mcpx disable {server['name']}`"
        )
    return f"check that {server['where']} is up and reachable, and its auth ({server['auth']})"


def environment_note() -> dict[str, str]:
    """The MCPX_* variables set (names only: their values may be secrets)."""
    return {k: "set" for k in sorted(os.environ) if k.startswith("MCPX_")}
