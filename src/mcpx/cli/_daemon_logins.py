"""The CLI's kept sign-ins to daemons that run ``daemon.auth=oauth``:
``<state>/daemon-logins.json``, one entry per http(s) endpoint.

``mcpx auth login --daemon`` writes an entry; every command over that endpoint reads it
(``_endpoint.TcpLink``) and renewals rewrite it (``_daemon_login``).

Invariants:

- The file is mode 0600 from its first byte: each write goes to a new file created 0600
  beside it (``O_EXCL``), then renamed over it; the state dir is created 0700. A token is
  never world-readable, even for a moment.
- Entries are keyed by the endpoint's normalised URL (``login_key``): scheme and host in
  lower case, the port always written, no path. ``https://Box`` and ``https://box:443``
  are one daemon.
- Renewals hold ``daemon-logins.lock`` (``flock``) across read, refresh and write, so two
  commands renewing at once do not both spend one refresh token (servers rotate them).
- Nothing here prints or logs a value; ``KeptLogin``'s repr leaves the secrets out.
- Standard library only: every command over an http(s) endpoint reads this file, and the
  OAuth machinery is imported only when a sign-in is made or renewed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Final

__all__ = ["LOGINS_FILE", "DaemonLogins", "KeptLogin", "login_key"]

LOGINS_FILE: Final = "daemon-logins.json"
_LOCK_FILE: Final = "daemon-logins.lock"
_RENEW_EARLY: Final = 60.0  # seconds before expiry a token is renewed
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def login_key(scheme: str, host: str, port: int | None) -> str:
    """The normalised URL an endpoint's sign-in is kept under."""
    scheme = scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown.lower()}:{port or _DEFAULT_PORTS[scheme]}"


@dataclass(frozen=True)
class KeptLogin:
    """One daemon's sign-in: who signed in where, the tokens and the registered client."""

    endpoint: str  # as it was configured when signing in (shown)
    resource: str  # the daemon's resource URI (RFC 8707), from its metadata
    issuer: str
    client_id: str
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    client_secret: str | None = field(default=None, repr=False)
    client_auth_method: str = "none"
    subject: str | None = None
    scope: str | None = None
    expires_at: float | None = None  # epoch seconds
    issued_at: float = field(default_factory=time.time)

    @classmethod
    def from_json(cls, doc: object) -> KeptLogin | None:
        """The entry ``doc`` holds; None when it is not one (a damaged file)."""
        if not isinstance(doc, dict):
            return None
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in doc.items() if k in known})
        except TypeError:
            return None

    def expiring(self) -> bool:
        """Whether to renew before sending: within ``_RENEW_EARLY`` seconds of expiry, or
        past half its lifetime when that is shorter (a short-lived token is not renewed
        the moment it arrives). The rule mcpx.oauth keeps for upstream tokens."""
        if self.expires_at is None:
            return False
        window = min(_RENEW_EARLY, (self.expires_at - self.issued_at) / 2)
        return self.expires_at - time.time() < window

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= time.time()


class DaemonLogins:
    """``<state>/daemon-logins.json``: the kept sign-ins, by ``login_key``."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.path = state / LOGINS_FILE

    def _read(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        logins = doc.get("logins") if isinstance(doc, dict) else None
        return logins if isinstance(logins, dict) else {}

    def get(self, key: str) -> KeptLogin | None:
        return KeptLogin.from_json(self._read().get(key))

    def put(self, key: str, login: KeptLogin) -> None:
        logins = self._read()
        logins[key] = asdict(login)
        self._write(logins)

    def drop(self, key: str) -> bool:
        """Forget ``key``'s sign-in; False when none was kept."""
        logins = self._read()
        if logins.pop(key, None) is None:
            return False
        self._write(logins)
        return True

    def _write(self, logins: dict[str, Any]) -> None:
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps({"version": 1, "logins": logins}, indent=2)
        fresh = self.path.with_name(f".{LOGINS_FILE}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            fresh.unlink()  # one a killed command left: O_EXCL needs it gone
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                fd = -1  # the file object closes it now
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(fresh, self.path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                fresh.unlink()
            raise

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held across a renewal's read, refresh and write (see the module docstring)."""
        self.state.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.state / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
