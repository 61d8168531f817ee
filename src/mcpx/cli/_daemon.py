"""The daemon from the command line: ``mcpx daemon``, ``status``, ``stop``,
``restart``, and finding (or starting) the daemon for every other command.

A command that needs the daemon and finds none starts it in the background
and says so on stderr. The daemon is found through ``<state>/daemon.json``
and reached over its unix socket.

What a daemon started so says on its stderr while it starts (a warning, or why it
refused to start) reaches the command's stderr: it is written to
``<state>/daemon.stderr`` (a file, not a pipe: the daemon outlives the command, and a
pipe nobody reads would fail its later writes) and shown once the daemon is up or gone.

With ``daemon.endpoint`` set, every command talks to that daemon instead (``_endpoint``,
``_remote``): it is never replaced by a local one, and ``stop``/``restart`` act on it only
with ``--remote``.

A daemon that goes away before it answers (killed, crashed: the connection ends with no
whole answer) ends the command with one line saying so and ``EX_DAEMON_GONE`` (6), as an
error reply ends it (``_views.fail_reply``); never a traceback.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from mcpx import __version__
from mcpx.config import (
    ServerConfig,
    UnknownProfile,
    load_config_file,
    profile_reach,
    state_dir,
)
from mcpx.daemon import EX_STATE_FULL, DaemonPaths, demo_server
from mcpx.ops import CLI_AGENT, PROFILE_HEADER

from ._context import Loaded, load_settings, settings_options, settings_options_showing
from ._endpoint import Endpoint, link_http, parse_endpoint
from ._http import DaemonHttp, Reply, UnixHttp
from ._remote import Remote, missing_route, reach, refuse_unremote, run_remote

__all__ = ["EX_DAEMON_GONE", "DaemonClient", "Waiting", "alive", "daemon_commands", "servers_for"]

EX_DAEMON_GONE = 6  # the daemon went away before answering (killed, crashed)


class _StateFull(click.ClickException):
    """The daemon could not start: no room in the state dir (the README's exit 7)."""

    exit_code = EX_STATE_FULL


def servers_for(loaded: Loaded) -> dict[str, ServerConfig]:
    """The configured servers (less the disabled ones), or the embedded default when the
    config names none at all."""
    if loaded.config is None:
        return {"demo": demo_server()}
    file = load_config_file(loaded.config.path)
    if not file.servers and not file.disabled:
        return {"demo": demo_server()}
    return dict(file.servers)


def check_profile(servers: Mapping[str, ServerConfig], profile: str, what: str) -> None:
    """Refuse (exit 2) a profile no configured server lists; empty is the default."""
    if not profile:
        return
    try:
        profile_reach(servers, profile)
    except UnknownProfile as exc:
        raise click.UsageError(f"{what}: {exc}") from None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie does not: it has exited, and only waits for its
    parent (a daemon started by a process that has not reaped it yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: signal 0 is all there is to go on
    return stat_line.rpartition(")")[2].split()[:1] != ["Z"]


@dataclass
class Waiting:
    """What a command waiting for an answer knows: the task its call is, once told."""

    task: str | None = None


class DaemonClient:
    """Talks to the daemon over its unix socket, starting it when needed; or to the
    configured ``daemon.endpoint`` (never started, never replaced). ``local``: this state
    dir's daemon whatever the endpoint (``mcpx bridge`` on the far side of one)."""

    def __init__(self, loaded: Loaded, *, profile: str | None = None, local: bool = False) -> None:
        self.loaded = loaded
        self.paths = DaemonPaths(state_dir(loaded.settings))
        # Every request asks as a host of this profile would see (None: everything).
        self.profile = profile
        configured = "" if local else str(loaded.settings["daemon.endpoint"])
        self.endpoint: Endpoint | None = parse_endpoint(configured)
        self._remote: Remote | None = None

    def remote(self) -> Remote:
        """The configured daemon, reached once for the command (exit 5 if it cannot be)."""
        assert self.endpoint is not None
        if self._remote is None:
            self._remote = reach(self.endpoint, self.loaded.settings)
        return self._remote

    def info(self) -> dict[str, Any] | None:
        if self.endpoint is not None:
            return self.remote().facts()
        try:
            info: dict[str, Any] = json.loads(self.paths.info.read_text())
        except (OSError, ValueError):
            return None
        return info if alive(int(info.get("pid", 0))) else None

    def http(self) -> DaemonHttp:
        headers = {"User-Agent": f"{CLI_AGENT}{__version__}"}  # the call log's door: cli
        if self.profile:
            headers[PROFILE_HEADER] = self.profile
        if self.endpoint is not None:
            return link_http(self.remote().link, headers=headers)
        return UnixHttp(str(self.paths.socket), headers=headers)

    def healthy(self) -> bool:
        if self.endpoint is not None:
            self.remote()  # answers, or the command ends saying why
            return True
        if self.info() is None:
            return False
        try:
            plain = UnixHttp(str(self.paths.socket))  # no profile: it is not the question
            return plain.request("GET", "/health", timeout=2).status_code == 200
        except OSError:
            return False

    def ensure(self) -> None:
        """A running daemon: the one there, or one started now (said on stderr).

        Starting is serialised by a lock in the state dir: of several commands that find
        no daemon at once, one starts it and the others wait for it and use it.
        """
        if self.healthy():
            return  # a configured endpoint is healthy here or has ended the command
        self.paths.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.paths.starting, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when another start is over
            if not self.healthy():
                self._start()
        finally:
            os.close(fd)

    def _start(self) -> None:
        argv = [sys.executable, "-m", "mcpx", "daemon", "--state-dir", str(self.paths.state)]
        if self.loaded.config:
            argv += ["--config", str(self.loaded.config.path)]
        said = self.paths.state / _STDERR
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        err = os.open(said, flags, 0o600)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        finally:
            os.close(err)
        click.echo(f"mcpx: started the daemon (pid {proc.pid}, state {self.paths.state})", err=True)
        deadline = time.monotonic() + float(self.loaded.settings["pool.startTimeout"])
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                _echo_stderr(said)
                if proc.returncode == EX_STATE_FULL:
                    # Its own words went to the full disk: said here, and exit 7 too.
                    raise _StateFull(
                        f"the daemon cannot start: the state dir's disk is full "
                        f"({self.paths.state}); free some space there and run the command again"
                    )
                raise click.ClickException(
                    f"the daemon exited with status {proc.returncode}; see {self.paths.log}"
                )
            if self.healthy():
                _echo_stderr(said)
                return
            time.sleep(0.05)
        _echo_stderr(said)
        raise click.ClickException(f"the daemon did not come up; see {self.paths.log}")

    def call(self, method: str, path: str, *, task: str | None = None, **kw: Any) -> Reply:
        """One exchange with the daemon (started if needed); ``task``: the task it is
        about, named if the daemon goes away before answering."""
        self.ensure()
        with self.answering(task), _Progress(f"{method} {path}"):
            reply = self.http().request(method, path, **kw)
        if self._remote is not None:
            missing_route(self._remote, method, path, reply)
        return reply

    @contextmanager
    def answering(self, task: str | None = None) -> Iterator[Waiting]:
        """Waiting for the daemon's answer (it ran on entry): a connection that fails or
        ends before a whole answer means the daemon went away (a remote one: the
        connection to it ended). Said in one line on stderr, naming the task the call is
        (``task``, or one the caller learns meanwhile: ``Waiting.task``), and the command
        ends with ``EX_DAEMON_GONE``."""
        info = self.info()
        pid = int(info["pid"]) if info and info.get("pid") else None
        waiting = Waiting(task)
        try:
            yield waiting
        except (OSError, http.client.HTTPException):
            click.echo(self._gone(pid, waiting.task), err=True)
            raise SystemExit(EX_DAEMON_GONE) from None

    def _gone(self, pid: int | None, task: str | None) -> str:
        who = "the daemon" if pid is None else f"the daemon (pid {pid})"
        if self.endpoint is not None:
            said = f"mcpx: the connection to {who} at {self.endpoint.text} ended before it answered"
            if task is not None:
                said += (
                    f"; the call goes on there as task {task}: `mcpx task result {task}` "
                    "collects it once the daemon is reachable again"
                )
            return said
        said = f"mcpx: {who} went away before answering"
        if task is not None:
            said += (
                f" about task {task}; once a daemon runs again, "
                f"`mcpx task show {task}` says how the task ended"
            )
        return said

    def stop(self, *, restart: bool = False) -> int | None:
        """Stop the daemon, if it runs; its pid. For a ``restart``, the ``mcpx serve``
        hosts it serves go back to their shims, which bring them to the next daemon."""
        info = self.info()
        if info is None:
            return None
        pid = int(info["pid"])
        if restart:
            self.paths.restarting.touch(mode=0o600)
        os.kill(pid, signal.SIGTERM)
        # Its calls in flight get their grace first, then the upstreams stop.
        deadline = time.monotonic() + float(self.loaded.settings["daemon.stopGrace"]) + 20
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        return pid


# What a daemon the CLI started said on stderr, in the state dir (0700).
_STDERR = "daemon.stderr"


def _echo_stderr(said: Path) -> None:
    """Show on this command's stderr what the daemon it started said on its own."""
    try:
        text = said.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return
    if text:
        click.echo(text, err=True)


class _Progress:
    """A spinner line on a terminal's stderr while a request takes over a second
    (starting upstream servers does); nothing when stderr is not a terminal."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> None:
        if sys.stderr.isatty():
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _spin(self) -> None:
        if self._done.wait(1.0):
            return
        frames = "|/-\\"
        started = time.monotonic()
        i = 0
        while not self._done.wait(0.1):
            elapsed = time.monotonic() - started + 1.0
            sys.stderr.write(f"\r{frames[i % 4]} {self.what} ({elapsed:.0f}s: starting servers?)")
            sys.stderr.flush()
            i += 1
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


@click.command("daemon")
@settings_options_showing("daemon.address", "daemon.port", "daemon.auth", "state.dir")
def daemon_command(**params: Any) -> None:
    """Run the daemon in the foreground (the CLI starts it on demand)."""
    from mcpx.daemon import serve  # the HTTP server, only when serving

    loaded = load_settings(params)
    servers = servers_for(loaded)
    unknown = [s for s in loaded.settings["mcp.passthrough"] if s not in servers]
    if unknown:
        raise click.UsageError(
            f"mcp.passthrough names {', '.join(map(repr, unknown))}, which is not a "
            f"configured server (configured: {', '.join(sorted(servers))})"
        )
    check_profile(servers, str(loaded.settings["mcp.profile"]), "mcp.profile")
    from mcpx.daemon._serve import DaemonRunning, StartRefused

    try:
        serve(
            loaded.settings,
            servers,
            state_dir(loaded.settings),
            config_file=loaded.config.path if loaded.config else None,
            warn=lambda text: click.echo(text, err=True),
        )
    except (DaemonRunning, StartRefused) as exc:
        raise click.ClickException(str(exc)) from None


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@settings_options
def status_command(as_json: bool, **params: Any) -> None:
    """Whether the daemon runs: pid, socket, url (exit status 3 when it does not)."""
    client = DaemonClient(load_settings(params))
    if client.endpoint is not None:
        _remote_status(client.remote().facts(), as_json)
        return
    info = client.info() if client.healthy() else None
    if as_json:
        click.echo(json.dumps({"running": info is not None, **(info or {})}))
    elif info:
        click.echo(f"running: pid {info['pid']}, socket {info['socket']}, url {info['url']}")
    else:
        click.echo("not running")
    if info is None:
        raise SystemExit(3)


def _remote_status(facts: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"running": True, **facts}))
        return
    said = [f"mcpx {facts.get('version') or '(version unknown)'}"]
    said += [f"{key} {facts[key]}" for key in ("pid", "socket") if facts.get(key)]
    if "auth" in facts:  # http(s): how this client proves who it is (never the secret)
        said.append(_AUTH_SAID[facts["auth"]].format(facts.get("subject") or "(unnamed)"))
    click.echo(f"running: the daemon at {facts['endpoint']} ({', '.join(said)})")


_AUTH_SAID = {
    "environment": "token from $MCPX_DAEMON_TOKEN",
    "login": "signed in as {} (mcpx auth login --daemon)",
    "none": "no credentials",
}

_REMOTE = click.option(
    "--remote", is_flag=True, help="With daemon.endpoint set: act on that daemon (required)."
)


def _configured(loaded: Loaded, remote: bool, what: str) -> DaemonClient:
    """The client for stop/restart; a configured endpoint is acted on only with --remote:
    unix:// here by its pid (the socket is on this machine), the rest there."""
    client = DaemonClient(loaded)
    endpoint = client.endpoint
    if endpoint is None:
        return client
    if not remote:
        refuse_unremote(endpoint, what)
    if endpoint.remote:
        run_remote(endpoint, loaded.settings, what)
    if what == "restart":
        raise click.UsageError(
            f"restart the daemon at {endpoint.text} where it was started, with its config: "
            f"mcpx restart --state-dir {Path(endpoint.path).parent}"
        )
    local = DaemonClient(loaded, local=True)
    local.paths = DaemonPaths(Path(endpoint.path).parent)
    return local


@click.command("stop")
@_REMOTE
@settings_options
def stop_command(remote: bool, **params: Any) -> None:
    """Stop the daemon (its upstream servers end with it)."""
    pid = _configured(load_settings(params), remote, "stop").stop()
    click.echo(f"stopped the daemon (pid {pid})" if pid else "the daemon was not running")


@click.command("restart")
@_REMOTE
@settings_options
def restart_command(remote: bool, **params: Any) -> None:
    """Stop the daemon if it runs, and start it again."""
    client = _configured(load_settings(params), remote, "restart")
    client.stop(restart=True)
    client.ensure()
    info = client.info() or {}
    click.echo(f"running: pid {info.get('pid')}, url {info.get('url')}")


def daemon_commands() -> list[click.Command]:
    return [daemon_command, status_command, stop_command, restart_command]
