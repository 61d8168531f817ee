"""A configured ``daemon.endpoint`` as ``DaemonClient`` uses it: reached once per command,
checked, its version compared with ours; and ``stop``/``restart`` of it.

Invariants:

- ``reach`` opens the link (ssh logs in here), asks ``/health``, and fails with
  ``Unreachable`` (exit 5) naming the endpoint and why. It starts no local daemon.
- A remote mcpx of another version is said once on stderr, both versions named; an
  operation it lacks (404 ``unknown_operation``) fails naming both (``missing_route``).
- The link is closed when the command ends (``atexit``: also on ``SystemExit``).
- ``stop``/``restart`` act on a configured daemon only with ``--remote``. A signal
  cannot cross machines and /v1 has no operation that stops the daemon, so: ``unix://``
  is signalled here (the socket is on this machine), ``ssh://`` runs ``mcpx stop`` there,
  and ``http(s)://`` is refused saying so.
"""

from __future__ import annotations

import atexit
import http.client
import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from mcpx import __version__
from mcpx.config import Settings, state_dir

from ._endpoint import Endpoint, Link, UnixLink, Unreachable, link_http, ssh_argv, tcp_link
from ._http import DaemonHttp, Reply
from ._ssh_link import SshLink

__all__ = ["Remote", "missing_route", "reach", "refuse_unremote", "run_remote"]

# ssh:// hosts' state dirs, remembered so the next command skips starting mcpx there.
REMEMBERED_HOSTS = "ssh-hosts.json"


@dataclass
class Remote:
    """The configured daemon, reached: the link to it and what is known of it."""

    endpoint: Endpoint
    link: Link
    version: str | None

    def facts(self) -> dict[str, Any]:
        return {**self.link.facts(), "endpoint": self.endpoint.text, "version": self.version}


def _why(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, FileNotFoundError):
        return "no socket there"
    if isinstance(exc, PermissionError):
        return "permission denied on the socket"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or exc})"
    return str(exc) or type(exc).__name__


def open_link(endpoint: Endpoint, settings: Settings, *, login_only: bool = False) -> Link:
    """The link to ``endpoint``, closed when the command ends.

    Raises:
        Unreachable: ssh could not log in or the host has no mcpx.
        click.UsageError: daemon.sshCommand does not split.
    """
    if endpoint.scheme == "unix":
        return UnixLink(endpoint)
    if endpoint.scheme != "ssh":
        return tcp_link(endpoint, settings)
    link = SshLink(endpoint, ssh_argv(settings), state_dir(settings) / REMEMBERED_HOSTS)
    atexit.register(link.close)
    if login_only:
        link.open_master()
    else:
        link.open()
    return link


def reach(endpoint: Endpoint, settings: Settings) -> Remote:
    """The daemon at ``endpoint``, answering.

    Raises:
        Unreachable: it cannot be reached, or refuses this client (exit 5).
    """
    link = open_link(endpoint, settings)
    plain = link_http(link, timeout=10)  # a kept sign-in is renewed here when it must be
    fail = f"cannot reach the daemon at {endpoint.text}"
    try:
        health = plain.request("GET", "/health")
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(f"{fail}: {_why(exc)}") from None
    if health.status_code != 200:
        raise Unreachable(f"{fail}: /health answered HTTP {health.status_code}")
    version = link.facts().get("version")
    if not version:
        version = _openapi_version(endpoint, plain)
    if version and version != __version__:
        click.echo(
            f"mcpx: the daemon at {endpoint.text} runs mcpx {version}; this is mcpx {__version__}",
            err=True,
        )
    return Remote(endpoint, link, str(version) if version else None)


def _openapi_version(endpoint: Endpoint, plain: DaemonHttp) -> str | None:
    """The daemon's version from /openapi.json (behind its auth: a refused token shows)."""
    try:
        reply = plain.request("GET", "/openapi.json")
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(f"cannot reach the daemon at {endpoint.text}: {_why(exc)}") from None
    if reply.status_code in (401, 403):
        raise Unreachable(
            f"the daemon at {endpoint.text} refused this client (HTTP {reply.status_code}): "
            f"set $MCPX_DAEMON_TOKEN to one of its daemon.tokens"
        )
    try:
        version = reply.json()["info"]["version"]
    except (ValueError, KeyError, TypeError):
        return None
    return str(version)


def missing_route(remote: Remote, method: str, path: str, reply: Reply) -> None:
    """End the command when ``reply`` says the daemon has no such route and it is another
    version: the operation is newer than it."""
    if reply.status_code != 404 or remote.version in (None, __version__):
        return
    try:
        code = reply.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return
    if code == "unknown_operation":
        raise Unreachable(
            f"the daemon at {remote.endpoint.text} runs mcpx {remote.version}, which has no "
            f"{method} {path}; this mcpx ({__version__}) needs it: upgrade mcpx there"
        )


def refuse_unremote(endpoint: Endpoint, what: str) -> NoReturn:
    raise click.UsageError(
        f"daemon.endpoint is {endpoint.text}: `mcpx {what}` would {what} the daemon there; "
        f"add --remote to mean it"
    )


def run_remote(endpoint: Endpoint, settings: Settings, what: str) -> NoReturn:
    """``mcpx stop``/``restart`` of the daemon at an ssh:// or http(s):// endpoint.

    Raises:
        click.UsageError: over http(s), where it cannot be done.
        Unreachable: ssh could not log in.
    """
    if endpoint.scheme != "ssh":
        raise click.UsageError(
            f"cannot {what} the daemon at {endpoint.text} over {endpoint.scheme}: /v1 has no "
            f"operation that stops a daemon (it is stopped by a signal on its own machine); "
            f"run `mcpx {what}` on that host, or use an ssh:// endpoint"
        )
    link = open_link(endpoint, settings, login_only=True)
    assert isinstance(link, SshLink)
    done: subprocess.CompletedProcess[bytes] = link.run("mcpx", what)
    sys.stdout.write(done.stdout.decode(errors="replace"))
    sys.stderr.write(done.stderr.decode(errors="replace"))
    raise SystemExit(done.returncode)
