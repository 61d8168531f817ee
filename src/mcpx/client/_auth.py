"""Per-server auth blocks, applied to every connection to that server.

Shapes (``auth`` in a server's config entry; each secret may be given inline
or, better, named by an environment variable with the ``…Env`` key):

    {"type": "bearer", "token" | "tokenEnv"}          Authorization: Bearer …
    {"type": "basic", "username", "password" | "passwordEnv"}
    {"type": "header", "name", "value" | "valueEnv"}  any request header
    {"type": "query", "name", "value" | "valueEnv"}   a URL query parameter
    {"type": "env", "name", "value" | "valueEnv"}     an environment variable (stdio)
    {"type": "oauth", "clientId"?, "clientSecret"? | "clientSecretEnv"?, "scopes"?,
     "clientMetadataUrl"?, "grant"?, "privateKeyEnv"?, "assertionEnv"? | "assertionFile"?,
     "idp"?}
                                                      no headers here: ``mcpx.oauth`` gives
                                                      the HTTP transports an ``httpx.Auth``

No message here holds a secret: errors name the key or the variable that is missing,
never a value, and ``AuthParts`` shows names only.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcpx.config import redact_headers
from mcpx.oauth import LoginNeeded
from mcpx.transport import AuthFailed

from ._errors import UpstreamError

__all__ = ["AuthError", "AuthParts", "apply_auth", "login_needed"]


class AuthError(UpstreamError):
    """An auth block that cannot be applied."""


@dataclass(frozen=True)
class AuthParts:
    """What one auth block adds; every value is a secret, so ``repr`` shows names only."""

    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        shown = {k: redact_headers(v) for k, v in vars(self).items()}
        return f"AuthParts(headers={shown['headers']}, env={shown['env']}, query={shown['query']})"

    def url(self, url: str) -> str:
        """``url`` with the auth query parameters added."""
        if not self.query:
            return url
        parts = urlsplit(url)
        query = urlencode([*parse_qsl(parts.query), *self.query.items()])
        return urlunsplit(parts._replace(query=query))


def _secret(server: str, block: Mapping[str, object], key: str, env: Mapping[str, str]) -> str:
    if isinstance(block.get(key), str):
        return str(block[key])
    var = block.get(f"{key}Env")
    if isinstance(var, str):
        if var not in env:
            raise AuthError(f"{server}: auth {key}Env names {var}, which is not set")
        return env[var]
    raise AuthError(f"{server}: auth type {block.get('type')} needs {key!r} or {key + 'Env'!r}")


def _name(server: str, block: Mapping[str, object]) -> str:
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise AuthError(f"{server}: auth type {block.get('type')} needs a 'name'")
    return name


def apply_auth(
    server: str, block: Mapping[str, object] | None, env: Mapping[str, str] | None = None
) -> AuthParts:
    """What ``block`` adds to a connection: headers, query parameters, env vars.

    Raises:
        AuthError: the block is incomplete or names an unset variable.
    """
    if not block:
        return AuthParts()
    env = os.environ if env is None else env
    kind = block.get("type")
    if kind == "bearer":
        return AuthParts(
            headers={"Authorization": f"Bearer {_secret(server, block, 'token', env)}"}
        )
    if kind == "basic":
        user = block.get("username")
        if not isinstance(user, str):
            raise AuthError(f"{server}: auth type basic needs a 'username'")
        pair = f"{user}:{_secret(server, block, 'password', env)}".encode()
        return AuthParts(headers={"Authorization": f"Basic {base64.b64encode(pair).decode()}"})
    if kind == "header":
        return AuthParts(headers={_name(server, block): _secret(server, block, "value", env)})
    if kind == "query":
        return AuthParts(query={_name(server, block): _secret(server, block, "value", env)})
    if kind == "env":
        return AuthParts(env={_name(server, block): _secret(server, block, "value", env)})
    if kind == "oauth":
        return AuthParts()  # the OAuthClient's httpx.Auth does it (see _open)
    raise AuthError(f"{server}: unknown auth type {kind!r}")


def login_needed(exc: BaseException | None) -> LoginNeeded | None:
    """The ``LoginNeeded`` behind ``exc``, if that is why it failed.

    ``open_session`` raises a ``LoginNeeded`` itself; a call on an open session fails with
    an ``UpstreamError`` whose cause is the transport's ``AuthFailed``, which carries it.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, LoginNeeded):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = [login_needed(e) for e in exc.exceptions]
            return next((f for f in found if f is not None), None)
        exc = exc.error if isinstance(exc, AuthFailed) else exc.__cause__ or exc.__context__
    return None
