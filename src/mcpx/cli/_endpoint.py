"""``daemon.endpoint``: the daemon a command talks to when it is not this state dir's own.

Three forms, nothing else (anything else is a usage error, exit 2, naming them):

- ``unix:///path/mcpx.sock``: a daemon's /v1 socket on this machine (another state dir,
  a container's mounted socket). Its ``daemon.json`` beside the socket, when readable,
  gives its pid and version.
- ``http://host:port`` / ``https://host:port``: a daemon's TCP port, with
  ``Authorization: Bearer $MCPX_DAEMON_TOKEN`` when that is set. The token is read from
  the environment only, never a setting: settings are shown by ``mcpx settings`` and
  written to config files, and a token must be neither. Unset, the sign-in that
  ``mcpx auth login --daemon`` kept for the endpoint (``_daemon_logins``) is sent instead:
  renewed shortly before it expires and, on a 401 from a ``daemon.auth=oauth`` daemon, once
  (the request then sent again, once). A 401 a renewal cannot answer, a refused renewal
  (the sign-in is then dropped) and a 403 ``insufficient_scope`` end the command with
  ``SignInNeeded`` (exit 9) naming what to run.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import click

from mcpx.config import Settings, state_dir

from ._daemon_logins import DaemonLogins, KeptLogin, login_key
from ._http import DaemonHttp, Reply, UnixConnection

__all__ = [
    "EX_SIGN_IN",
    "EX_UNREACHABLE",
    "FORMS",
    "TOKEN_ENV",
    "Endpoint",
    "Link",
    "SignInNeeded",
    "SignedInHttp",
    "TcpLink",
    "UnixLink",
    "Unreachable",
    "link_http",
    "parse_endpoint",
    "sign_in_command",
]

EX_UNREACHABLE: Final = 5  # the README's exit status for "cannot reach it"
EX_SIGN_IN: Final = 9  # the README's exit status for "needs an OAuth sign-in"
FORMS: Final = "unix:///path/mcpx.sock, http(s)://host:port or ssh://[user@]host[:port]"
TOKEN_ENV: Final = "MCPX_DAEMON_TOKEN"


class Unreachable(click.ClickException):
    """The configured daemon cannot be reached (exit 5); the message says which and why."""

    exit_code = EX_UNREACHABLE


class SignInNeeded(click.ClickException):
    """The daemon needs an OAuth sign-in this command cannot make (exit 9)."""

    exit_code = EX_SIGN_IN


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


def sign_in_command(endpoint: Endpoint) -> str:
    return f"mcpx auth login --daemon {endpoint.text}"


@dataclass
class TcpLink:
    endpoint: Endpoint
    token: str = field(default="", repr=False)  # $MCPX_DAEMON_TOKEN: wins over a sign-in
    logins: DaemonLogins | None = None  # the CLI's kept sign-ins (None: not consulted)
    _kept: KeptLogin | None = field(default=None, repr=False)
    _read: bool = False
    _gave_up_early: bool = False  # an early renewal failed: not tried again this command

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        host, port = self.endpoint.host, self.endpoint.port
        if self.endpoint.scheme == "https":
            context = ssl.create_default_context()
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    @property
    def key(self) -> str:
        return login_key(self.endpoint.scheme, self.endpoint.host, self.endpoint.port)

    def kept(self) -> KeptLogin | None:
        """The sign-in kept for this endpoint (read once), unless the environment's token
        wins."""
        if self.token or self.logins is None:
            return None
        if not self._read:
            self._kept, self._read = self.logins.get(self.key), True
        return self._kept

    def headers(self) -> dict[str, str]:
        kept = self.kept()
        if kept is not None and kept.expiring() and not self._gave_up_early:
            renewed = self._renew(kept, None)
            # The same token back: the servers failed, and it serves until it expires.
            self._gave_up_early = renewed.access_token == kept.access_token
            kept = renewed
        token = kept.access_token if kept is not None else self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _renew(self, kept: KeptLogin, challenge_url: str | None) -> KeptLogin:
        """Raises:
        SignInNeeded: the sign-in ended (refused, revoked): it was dropped.
        Unreachable: the servers failed, and the token has expired or was refused.
        """
        from mcpx.oauth import OAuthError, Unavailable  # the OAuth machinery: only now

        from ._daemon_login import renew

        assert self.logins is not None
        where = f"the sign-in to the daemon at {self.endpoint.text}"
        try:
            self._kept = renew(self.logins, self.key, kept, challenge_url)
        except Unavailable as exc:
            raise Unreachable(f"cannot renew {where}: {exc}") from None
        except OAuthError as exc:
            raise SignInNeeded(
                f"{where} has ended ({exc}), so it was dropped: "
                f"run `{sign_in_command(self.endpoint)}`"
            ) from None
        return self._kept

    def refused(self, status: int, header: str, said: Callable[[], str], *, again: bool) -> bool:
        """A 401 or 403: True to send the request again, the kept sign-in renewed (never
        ``again``); False when it is not an OAuth daemon's refusal (the caller says it).

        Raises:
            SignInNeeded: only a sign-in can answer it (``said`` gives the daemon's words).
            Unreachable: the authorization server failed to renew an expired sign-in.
        """
        from mcpx.oauth import parse_challenge  # only on a refusal: heavy to import

        challenge = parse_challenge(header)
        if not challenge.bearer or not challenge.resource_metadata:
            return False  # not daemon.auth=oauth: a daemon.tokens token is what it wants
        where, run = f"the daemon at {self.endpoint.text}", sign_in_command(self.endpoint)
        whose = f"the token in ${TOKEN_ENV}" if self.token else "the signed-in token"
        if status == 403:
            if challenge.error != "insufficient_scope":
                return False
            raise SignInNeeded(
                f"{where} refused {whose} ({said()}): it needs the scopes "
                f"{challenge.scope or '(unnamed)'}; run `{run}` to sign in asking for them "
                "(the authorization server must grant them to you)"
            )
        kept = self.kept()
        if kept is not None and not again:
            self._renew(kept, challenge.resource_metadata)
            return True
        if self.token:
            raise SignInNeeded(
                f"{where} refused {whose} ({said()}): set a valid one, or unset "
                f"${TOKEN_ENV} and run `{run}`"
            )
        if kept is not None:
            assert self.logins is not None
            self.logins.drop(self.key)
            raise SignInNeeded(
                f"{where} refused the renewed sign-in ({said()}), so it was dropped: "
                f"run `{run}` again"
            )
        raise SignInNeeded(f"{where} needs an OAuth sign-in: run `{run}`")

    def facts(self) -> dict[str, Any]:
        if self.token:
            return {"url": self.endpoint.text, "auth": "environment"}
        kept = self.kept()
        if kept is None:
            return {"url": self.endpoint.text, "auth": "none"}
        return {"url": self.endpoint.text, "auth": "login", "subject": kept.subject}

    def close(self) -> None:
        return None


def _said(text: str) -> str:
    """The daemon's message in an error reply's body."""
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text.strip()[:200] or "no reason given"


def _read_said(response: http.client.HTTPResponse) -> str:
    return _said(response.read().decode("utf-8", "replace"))


class SignedInHttp(DaemonHttp):
    """``DaemonHttp`` over a ``TcpLink``: each request carries the link's credential as it
    is now, and a refusal a renewed sign-in answers is sent again, once."""

    def __init__(
        self, link: TcpLink, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(link.connect, timeout, headers)
        self.link = link

    def _sent(self, method: str, path: str, kw: dict[str, Any]) -> Reply:
        self.headers.update(self.link.headers())
        return super().request(method, path, **kw)

    def request(self, method: str, path: str, **kw: Any) -> Reply:
        reply = self._sent(method, path, kw)
        if self._again(reply.status_code, reply.challenge, reply.text, again=False):
            reply = self._sent(method, path, kw)
            self._again(reply.status_code, reply.challenge, reply.text, again=True)
        return reply

    def _again(self, status: int, header: str, text: str, *, again: bool) -> bool:
        if status not in (401, 403):
            return False
        return self.link.refused(status, header, lambda: _said(text), again=again)

    @contextmanager
    def stream(self, method: str, path: str, **kw: Any) -> Iterator[http.client.HTTPResponse]:
        for again in (False, True):
            self.headers.update(self.link.headers())
            with super().stream(method, path, **kw) as response:
                header = response.getheader("WWW-Authenticate") or ""
                said = partial(_read_said, response)
                if response.status not in (401, 403) or not self.link.refused(
                    response.status, header, said, again=again
                ):
                    yield response
                    return
        raise AssertionError("a second refusal is never sent again")  # refused() raised


def link_http(
    link: Link, timeout: float | None = None, headers: dict[str, str] | None = None
) -> DaemonHttp:
    """Requests over ``link``, with its credential on each."""
    if isinstance(link, TcpLink):
        return SignedInHttp(link, timeout, headers)
    return DaemonHttp(link.connect, timeout, {**(headers or {}), **link.headers()})


def tcp_link(endpoint: Endpoint, settings: Settings | None = None) -> TcpLink:
    """The link to an http(s) endpoint; with ``settings``, the sign-ins its state dir keeps
    are used."""
    logins = DaemonLogins(state_dir(settings)) if settings is not None else None
    return TcpLink(endpoint, os.environ.get(TOKEN_ENV, ""), logins)


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
