"""Who may use the daemon's TCP port (``daemon.auth``), and whether it may listen at all.

Invariants:

- Token values never leave this module's objects: settings hold token *names*
  (``daemon.tokens``: ``NAME`` reads ``MCPX_TOKEN_NAME``, ``NAME=VAR`` reads ``$VAR``), and
  messages, logs and events name a token, never show one. The daemon removes the
  variables from its environment once read (``Authenticator.variables``): the upstream
  servers it starts inherit that environment.
- A presented token is compared with every configured one, each in constant time
  (``hmac.compare_digest``), whatever the earlier ones gave: the time a check takes
  tells neither which token nor how much of one matched.
- A token is at least ``MIN_TOKEN`` characters; a daemon whose tokens are missing, empty
  or short does not start (``StartRefused``, saying what to set).
- Beyond loopback, ``daemon.auth=none`` is refused before anything is bound, unless
  ``daemon.insecureNoAuth``, which is warned about at every start (``exposure``).
- A mode is a class with ``check``; ``_MODES`` maps ``daemon.auth`` to it (``oauth``:
  ``_oauth_auth``). ``none`` has no class: no check runs.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Final

from mcpx.config import Settings

from ._auth_verdicts import Authenticator, Denied, Granted, StartRefused
from ._oauth_auth import open_oauth

__all__ = [
    "MIN_TOKEN",
    "PRINCIPAL",
    "Authenticator",
    "Denied",
    "Exposure",
    "Granted",
    "StartRefused",
    "TokenAuth",
    "admit",
    "exposure",
    "is_loopback",
    "open_auth",
]

log = logging.getLogger("mcpx.daemon")

# The ASGI scope key an accepted TCP request carries its caller in (set by the front door,
# read by the routes that scope by caller, and by the console's login, which hands it on).
PRINCIPAL: Final = "mcpx.principal"
# 32 characters of secrets.token_urlsafe are 192 bits; of hex, 128. A person's password
# is rarely this long, which is the point: these are machine-made.
MIN_TOKEN: Final = 32
_MAKE_ONE: Final = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
_REALM: Final = 'Bearer realm="mcpx"'
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
# Upper case, as environment variables are named: a token pasted after "=" by mistake
# (mixed case) fails here, so it is never echoed back as if it named a variable.
_VAR: Final = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")
_BEARER: Final = re.compile(rb"[Bb][Ee][Aa][Rr][Ee][Rr] +([^ ]+) *")


class TokenAuth:
    """``daemon.auth=token``: ``Authorization: Bearer <one of the named tokens>``."""

    def __init__(self, tokens: Mapping[str, tuple[str, bytes]]) -> None:
        """``tokens``: each name's (environment variable, token)."""
        self._tokens = tuple((name, token) for name, (_, token) in tokens.items())
        self._variables = tuple(var for var, _ in tokens.values())

    @property
    def variables(self) -> tuple[str, ...]:
        return self._variables

    def metadata(self, resource: str) -> dict[str, object] | None:
        return None

    async def check(self, authorization: bytes | None, resource: str) -> Granted | Denied:
        m = _BEARER.fullmatch(authorization) if authorization is not None else None
        if m is None:
            return Denied(
                "this port needs a bearer token: send 'Authorization: Bearer <token>' with "
                "one of daemon.tokens (the unix socket needs none)",
                _REALM,
            )
        given, found = m[1], None
        for name, token in self._tokens:
            # Every token is compared, also after a match: constant time across them.
            if hmac.compare_digest(given, token) and found is None:
                found = name
        if found is None:
            return Denied(
                "the bearer token is not one of daemon.tokens",
                _REALM + ', error="invalid_token"',
                code="invalid_token",
            )
        return Granted(f"token:{found}", f"token {found}")


def _tokens(settings: Settings, environ: Mapping[str, str]) -> dict[str, tuple[str, bytes]]:
    """Each named token's environment variable and value.

    Raises:
        StartRefused: none named, an entry malformed, or a token unset, empty or short.
    """
    entries = [str(e) for e in settings["daemon.tokens"]]
    if not entries:
        raise StartRefused(
            "daemon.auth is token but daemon.tokens names none: name one (daemon.tokens=ci) "
            f"and put a random secret of at least {MIN_TOKEN} characters in MCPX_TOKEN_CI "
            f"(e.g. {_MAKE_ONE})"
        )
    out: dict[str, tuple[str, bytes]] = {}
    for entry in entries:
        name, eq, var = entry.partition("=")
        if not eq:
            var = "MCPX_TOKEN_" + re.sub(r"[^A-Z0-9]", "_", name.upper())
        # What follows "=" may be a token pasted by mistake: it is never repeated.
        if not _NAME.fullmatch(name) or not _VAR.fullmatch(var) or name in out:
            shown = name + ("=…" if eq else "")
            raise StartRefused(
                f"daemon.tokens entry {shown!r} is not NAME or NAME=ENV_VAR (a name used "
                "once, and the environment variable holding its token, never the token)"
            )
        value = environ.get(var, "")
        if len(value) < MIN_TOKEN:
            why = "is unset or empty" if not value else f"holds only {len(value)} characters"
            raise StartRefused(
                f"daemon.tokens names {name!r}, whose token ${var} {why}: set it to a random "
                f"secret of at least {MIN_TOKEN} characters (e.g. {_MAKE_ONE})"
            )
        out[name] = (var, value.encode())
    return out


_MODES: Final[dict[str, Callable[[Settings, Mapping[str, str]], Authenticator]]] = {
    "token": lambda settings, environ: TokenAuth(_tokens(settings, environ)),
    "oauth": open_oauth,
}


def open_auth(settings: Settings, environ: Mapping[str, str]) -> Authenticator | None:
    """The check ``daemon.auth`` asks for on the TCP port; None for ``none``.

    Raises:
        StartRefused: the mode's configuration is incomplete (the message says what to set).
    """
    mode = str(settings["daemon.auth"])
    return _MODES[mode](settings, environ) if mode in _MODES else None


def is_loopback(address: str) -> bool:
    """Whether ``address`` only ever listens on this machine: a loopback literal or
    ``localhost``. Any other name may resolve to anything, so it is not."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


@dataclass(frozen=True)
class Exposure:
    """What starting on an address means: a refusal (do not bind), a warning, or neither."""

    refusal: str | None = None
    warning: str | None = None


def exposure(address: str, auth: str, insecure: bool) -> Exposure:
    """Whether the daemon may listen on ``address`` with ``daemon.auth`` = ``auth``."""
    if is_loopback(address) or auth != "none":
        return Exposure()
    if insecure:
        return Exposure(
            warning=f"mcpx: warning: listening on {address}, beyond loopback, with no "
            "authentication (daemon.insecureNoAuth): anyone who can reach this port can run "
            "tools as you"
        )
    return Exposure(
        refusal=f"mcpx: refusing to listen on {address}, beyond loopback, with no "
        "authentication: anyone who could reach the port could run tools as you. Set "
        "daemon.auth=token and name tokens in daemon.tokens (each token in "
        "MCPX_TOKEN_<NAME>), or listen on 127.0.0.1, or accept the risk with "
        "--insecure-no-auth true (MCPX_DAEMON_INSECURE_NO_AUTH=1)"
    )


def admit(
    settings: Settings, environ: MutableMapping[str, str], warn: Callable[[str], object]
) -> Authenticator | None:
    """The TCP port's auth check, once the address and the auth settings allow starting.
    A warning is logged and said (``warn``: stderr). The secrets' variables are removed
    from ``environ`` (the process's own): the upstream servers it starts inherit it, and a
    token there could be carried off to wherever an upstream talks to.

    Raises:
        StartRefused: listening as configured would expose tools, or auth is incomplete.
    """
    address = str(settings["daemon.address"])
    verdict = exposure(
        address, str(settings["daemon.auth"]), bool(settings["daemon.insecureNoAuth"])
    )
    if verdict.refusal is not None:
        raise StartRefused(verdict.refusal)
    if verdict.warning is not None:
        log.warning("%s", verdict.warning)
        warn(verdict.warning)
    auth = open_auth(settings, environ)
    for var in auth.variables if auth is not None else ():
        environ.pop(var, None)
    return auth
