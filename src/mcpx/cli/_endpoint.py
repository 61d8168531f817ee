"""``daemon.endpoint``: the daemon a command talks to when it is not this state dir's own.

Three forms, nothing else (anything else is a usage error, exit 2, naming them):

- ``unix:///path/mcpx.sock``: a daemon's /v1 socket on this machine (another state dir,
  a container's mounted socket). Its ``daemon.json`` beside the socket, when readable,
  gives its pid and version.
- ``http://host:port`` / ``https://host:port``: a daemon's TCP port, with
  ``Authorization: Bearer $MCPX_DAEMON_TOKEN`` when that is set. The token is read from
  the environment only, never a setting: settings are shown by ``mcpx settings`` and
  written to config files, and a token must be neither.
- ``ssh://[user@]host[:port]``: the remote host's own daemon, through ssh (``_ssh_link``).

Invariants:

- A configured endpoint is never replaced by a local daemon: ``Unreachable`` (exit 5)
  names the endpoint and why, and nothing is started here.
- An endpoint is shown as configured; it never holds a secret (a URL with a password
  in it is refused: the token goes in the environment).
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import click

from mcpx.config import Settings

from ._http import UnixConnection

__all__ = [
    "EX_UNREACHABLE",
    "FORMS",
    "TOKEN_ENV",
    "Endpoint",
    "Link",
    "TcpLink",
    "UnixLink",
    "Unreachable",
    "parse_endpoint",
]

EX_UNREACHABLE: Final = 5  # the README's exit status for "cannot reach it"
FORMS: Final = "unix:///path/mcpx.sock, http(s)://host:port or ssh://[user@]host[:port]"
TOKEN_ENV: Final = "MCPX_DAEMON_TOKEN"


class Unreachable(click.ClickException):
    """The configured daemon cannot be reached (exit 5); the message says which and why."""

    exit_code = EX_UNREACHABLE


@dataclass(frozen=True)
class Endpoint:
    """A parsed ``daemon.endpoint``; ``text`` is how it was written (shown in messages)."""

    scheme: str  # unix, http, https or ssh
    text: str
    path: str = ""  # unix: the socket
    host: str = ""
    port: int | None = None
    user: str | None = None

    @property
    def remote(self) -> bool:
        """On another machine: signals and files of ours cannot reach its daemon."""
        return self.scheme != "unix"


def _bad(text: str, why: str) -> click.UsageError:
    return click.UsageError(f"daemon.endpoint {text!r} {why}: use {FORMS}")


def parse_endpoint(text: str) -> Endpoint | None:
    """The endpoint ``text`` names; None for empty (this state dir's own daemon).

    Raises:
        click.UsageError: ``text`` is none of the three forms (exit 2).
    """
    if not text:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _bad(text, f"is not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme == "unix":
        if parts.netloc or not parts.path.startswith("/"):
            raise _bad(text, "needs an absolute socket path after unix://")
        return Endpoint("unix", text, path=parts.path)
    if scheme not in ("http", "https", "ssh"):
        raise _bad(text, "is not one of the three forms")
    if not parts.hostname:
        raise _bad(text, "names no host")
    if parts.password is not None:
        raise _bad(text, f"holds a password; put a token in ${TOKEN_ENV} instead")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _bad(text, "has a path; the daemon's routes are its own")
    if scheme != "ssh" and parts.username is not None:
        raise _bad(text, "names a user; an http(s) daemon takes a bearer token")
    return Endpoint(scheme, text, host=parts.hostname, port=port, user=parts.username)


class Link(Protocol):
    """A way to the configured daemon, open for the life of the command."""

    endpoint: Endpoint

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        """A new HTTP connection to the daemon (nothing sent yet)."""
        ...

    def headers(self) -> dict[str, str]:
        """Sent with every request (the bearer token)."""
        ...

    def facts(self) -> dict[str, Any]:
        """What is known of the daemon beyond its answers: pid, version, socket."""
        ...

    def close(self) -> None:
        """Let go of what the link holds (ssh's processes); idempotent."""
        ...


@dataclass
class UnixLink:
    endpoint: Endpoint

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        return UnixConnection(self.endpoint.path, timeout)

    def headers(self) -> dict[str, str]:
        return {}

    def facts(self) -> dict[str, Any]:
        # A daemon writes daemon.json beside its socket; one of another user may be unreadable.
        try:
            info = json.loads((Path(self.endpoint.path).parent / "daemon.json").read_text())
        except (OSError, ValueError):
            return {"socket": self.endpoint.path}
        if not isinstance(info, dict) or info.get("socket") != self.endpoint.path:
            return {"socket": self.endpoint.path}
        return {k: info[k] for k in ("pid", "version", "socket", "url") if k in info}

    def close(self) -> None:
        return None


@dataclass
class TcpLink:
    endpoint: Endpoint
    token: str = field(default="", repr=False)

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        host, port = self.endpoint.host, self.endpoint.port
        if self.endpoint.scheme == "https":
            context = ssl.create_default_context()
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def facts(self) -> dict[str, Any]:
        return {"url": self.endpoint.text}

    def close(self) -> None:
        return None


def tcp_link(endpoint: Endpoint) -> TcpLink:
    return TcpLink(endpoint, os.environ.get(TOKEN_ENV, ""))


def ssh_argv(settings: Settings) -> list[str]:
    """``daemon.sshCommand`` split as a shell would.

    Raises:
        click.UsageError: it does not split (an open quote) or is empty.
    """
    text = str(settings["daemon.sshCommand"])
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise click.UsageError(f"daemon.sshCommand {text!r} does not split: {exc}") from None
    if not argv:
        raise click.UsageError("daemon.sshCommand is empty: set it to ssh, or ssh -F FILE")
    return argv
