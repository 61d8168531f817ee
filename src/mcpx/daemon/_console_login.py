"""Logging a browser in to the web console of a daemon whose port needs a token.

A browser cannot send ``Authorization`` when it opens ``/ui``, so ``mcpx ui`` (which
reaches the daemon over its unix socket, or with a token) asks for a one-time login
ticket and opens ``/ui/login#<ticket>``. The ticket is in the fragment: a browser never
sends a fragment, so it is in no request line, log or ``Referer``. The login page posts
it (JSON body) to ``/ui/login``, which answers a session cookie, and drops the fragment
from the address bar. The console's "Sign out" posts to ``/ui/logout``, which ends the
session here (its cookie is worth nothing from then on, wherever a copy went) and has the
browser drop the cookie.

Invariants:

- Tickets and sessions are random (256 bits) and kept only as their SHA-256: a memory
  dump or a log line holds nothing that logs in. Both die with the daemon.
- A ticket is used at most once and lives ``TICKET_LIFE`` seconds; a session lives
  ``SESSION_LIFE``. Each table is bounded: the oldest entry goes first.
- A session stands for whoever asked for its ticket (``principal``: None for the unix
  socket's user, the daemon's owner), never more.
- The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` and ``Path=/``,
  ``Secure`` over https. Where it is accepted (``console_session``) is the front door's
  rule: only on /ui and /v1, only from the daemon's own pages (see ``_guard``).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Final

__all__ = [
    "SESSION_LIFE",
    "TICKET_LIFE",
    "ConsoleLogins",
    "console_logins",
    "cookie_name",
    "session_cookie",
]

TICKET_LIFE: Final = 120.0
SESSION_LIFE: Final = 12 * 3600.0
_MOST: Final = 64


@dataclass(frozen=True)
class _Entry:
    principal: str | None
    expires: float


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "replace")).digest()


@dataclass
class ConsoleLogins:
    """This daemon run's login tickets and console sessions."""

    clock: Callable[[], float] = time.monotonic
    _tickets: OrderedDict[bytes, _Entry] = field(default_factory=OrderedDict)
    _sessions: OrderedDict[bytes, _Entry] = field(default_factory=OrderedDict)

    def ticket(self, principal: str | None) -> str:
        """A new one-time ticket that logs a browser in as ``principal``."""
        return self._add(self._tickets, principal, TICKET_LIFE)

    def redeem(self, ticket: str) -> str | None:
        """A new session's cookie value for an unused, live ticket (now used); else None."""
        entry = self._tickets.pop(_digest(ticket), None)
        if entry is None or entry.expires <= self.clock():
            return None
        return self._add(self._sessions, entry.principal, SESSION_LIFE)

    def session(self, value: str) -> tuple[bool, str | None]:
        """(whether ``value`` is a live session, the principal it stands for)."""
        entry = self._sessions.get(_digest(value))
        if entry is None:
            return False, None
        if entry.expires <= self.clock():
            del self._sessions[_digest(value)]
            return False, None
        return True, entry.principal

    def end(self, value: str) -> bool:
        """Ends the session ``value`` (signed out); False when there was none live."""
        entry = self._sessions.pop(_digest(value), None)
        return entry is not None and entry.expires > self.clock()

    def _add(self, table: OrderedDict[bytes, _Entry], who: str | None, life: float) -> str:
        now = self.clock()
        for key in [k for k, e in table.items() if e.expires <= now]:
            del table[key]
        while len(table) >= _MOST:
            table.popitem(last=False)
        secret = secrets.token_urlsafe(32)
        table[_digest(secret)] = _Entry(who, now + life)
        return secret


@cache
def console_logins() -> ConsoleLogins:
    """The daemon process's one table (made on first use)."""
    return ConsoleLogins()


def cookie_name(port: int | None) -> str:
    # Cookies ignore ports: each daemon on a host names its own, so two do not clash.
    return f"mcpx_console_{port or 0}"


def session_cookie(port: int | None, value: str, https: bool, life: float = SESSION_LIFE) -> str:
    """The ``Set-Cookie`` value for a new session (``life`` 0: the browser's is dropped)."""
    secure = "; Secure" if https else ""
    return (
        f"{cookie_name(port)}={value}; Max-Age={int(life)}; Path=/; HttpOnly; "
        f"SameSite=Strict{secure}"
    )
