"""Logins in progress, held by the daemon: begun for a person (``mcpx auth login``) or by
a flow waiting for a person's redirect (the daemon's own ``/oauth/callback``).

Invariants:

- Keyed by the ``state`` the authorization URL carries: a redirected URL reaches only
  the login it was issued for (compared in constant time by ``OAuthClient``).
- Bounded (``MAX_PENDING``; the oldest goes first) and expiring (``LOGIN_TTL``): an
  abandoned login leaves nothing behind for long.
- Nothing here logs, returns or words a code, verifier or token.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio

from mcpx.config import ServerConfig

from ._client import OAuthClient
from ._errors import NotPending, OAuthError
from ._model import PendingLogin, Tokens
from ._store import TokenStore

__all__ = ["LOGIN_TTL", "MAX_PENDING", "Logins", "state_of"]

LOGIN_TTL: Final = 600.0  # seconds a person has to finish a login
MAX_PENDING: Final = 64


def state_of(url: str) -> str:
    """The ``state`` query parameter of ``url`` ("" without one)."""
    values = parse_qs(urlsplit(url).query).get("state") or [""]
    return values[0]


@dataclass
class _Entry:
    server: str
    user: str
    expires: float
    # A login the desk finishes itself (begun here), else one a flow waits on.
    client: OAuthClient | None = None
    pending: PendingLogin | None = None
    redirected: str | None = field(default=None, repr=False)
    done: anyio.Event = field(default_factory=anyio.Event)


class Logins:
    """The daemon's logins in progress."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def _prune(self) -> None:
        now = time.monotonic()
        for state in [s for s, e in self._entries.items() if e.expires <= now]:
            del self._entries[state]
        while len(self._entries) >= MAX_PENDING:
            self._entries.popitem(last=False)

    async def begin(self, server: ServerConfig, user: str, redirect_uri: str) -> PendingLogin:
        """Discovery, client identity and PKCE for ``server``: the login a person opens.

        Raises:
            OAuthError: discovery or registration failed (the message says which).
        """
        client = OAuthClient(server, store=self.store, user=user, redirect_uri=redirect_uri)
        pending = await client.begin_login(redirect_uri)
        self._prune()
        expires = time.monotonic() + LOGIN_TTL
        self._entries[pending.state] = _Entry(server.name, user, expires, client, pending)
        return pending

    def expect(self, authorization_url: str, server: str, user: str) -> str:
        """A flow sent a person to ``authorization_url``: hold its state until the
        redirect comes back (``wait``)."""
        state = state_of(authorization_url)
        if not state:
            raise OAuthError(f"{server}: the authorization URL carries no state")
        self._prune()
        self._entries[state] = _Entry(server, user, time.monotonic() + LOGIN_TTL)
        return state

    def forget(self, state: str) -> None:
        self._entries.pop(state, None)

    async def wait(self, state: str) -> str:
        """The redirected URL for ``state``, once it came (the caller bounds the wait)."""
        entry = self._entries.get(state)
        if entry is None:
            raise OAuthError("that login is no longer pending; start it again")
        try:
            await entry.done.wait()
        finally:
            self._entries.pop(state, None)
        assert entry.redirected is not None
        return entry.redirected

    async def complete(self, redirected_url: str) -> tuple[str, Tokens | None]:
        """Finish the login ``redirected_url`` answers: its server's name, and the tokens
        when the desk finished it itself (None: the waiting flow finishes it).

        Raises:
            OAuthError: no such login pending (unknown or expired state), or the
                response was refused (state, iss, error, the token request).
        """
        self._prune()
        state = state_of(redirected_url)
        entry = self._entries.get(state) if state else None
        if entry is None:
            raise NotPending(
                "no login is pending for that redirect (unknown or expired state); "
                "start it again with `mcpx auth login SERVER`"
            )
        if entry.client is None or entry.pending is None:
            entry.redirected = redirected_url
            entry.done.set()
            return entry.server, None
        del self._entries[state]
        tokens = await entry.client.finish_login(entry.pending, redirected_url)
        return entry.server, tokens

    def pending_for(self, server: str) -> int:
        """How many logins for ``server`` are in progress."""
        now = time.monotonic()
        return sum(1 for e in self._entries.values() if e.server == server and e.expires > now)
