"""What an auth check answers (``Granted`` or ``Denied``), and the check's shape.

Shared by every ``daemon.auth`` mode (``_daemon_auth``: token; ``_oauth_auth``: oauth)
and the front door (``_guard``) that asks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Authenticator", "Denied", "Granted", "StartRefused"]


class StartRefused(Exception):
    """The daemon must not start as configured; the message says what to change."""


@dataclass(frozen=True)
class Denied:
    """A request the auth check refuses: 401 (or 403 for a missing scope, 503 when the
    authorization server cannot be asked), with the challenge to send."""

    message: str
    challenge: str
    code: str = "unauthorized"
    status: int = 401


@dataclass(frozen=True)
class Granted:
    """An accepted request: who made it.

    ``identity`` scopes what the caller owns (tasks, questions, ``scope: identity``
    instances): ``token:<name>`` or ``oauth:<sub>``. ``shown`` names it in the log.
    """

    identity: str
    shown: str


class Authenticator(Protocol):
    @property
    def variables(self) -> tuple[str, ...]:
        """The environment variables the secrets were read from: the daemon removes them
        from its environment, so that no upstream server it starts inherits them."""
        ...

    async def check(self, authorization: bytes | None, resource: str) -> Granted | Denied:
        """Who an ``Authorization`` header proves the caller is, or why it is refused.
        ``resource`` is the daemon's resource URI as this request reached it."""
        ...

    def metadata(self, resource: str) -> dict[str, object] | None:
        """The RFC 9728 protected resource metadata to serve, or None (no such mode)."""
        ...
