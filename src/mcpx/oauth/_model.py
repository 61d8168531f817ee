"""The values an OAuth flow keeps: tokens, the client's identity, a login in progress.

Each ``repr`` leaves the secrets out (access and refresh tokens, their DPoP key, client
secret, PKCE verifier), so a value may be logged or shown as it is.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ClientIdentity", "PendingLogin", "Tokens"]

IdentitySource = Literal["cimd", "preregistered", "dcr"]


@dataclass(frozen=True)
class Tokens:
    """What a token endpoint granted; ``issuer`` is the authorization server that did."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None  # epoch seconds
    scope: str | None = None
    issuer: str | None = None
    issued_at: float = field(default_factory=time.time)  # epoch seconds
    # The DPoP key (PKCS#8 PEM) the token request was proved with, so the tokens may be
    # bound to it (RFC 9449): kept with them, it signs their proofs after a restart too.
    dpop_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_response(
        cls,
        body: Mapping[str, Any],
        *,
        issuer: str | None,
        requested_scope: str | None,
        dpop_key: str | None = None,
    ) -> Tokens:
        """From a token endpoint's JSON answer (RFC 6749 §5.1); an omitted scope is the
        requested one."""
        expires_in = body.get("expires_in")
        expires_at = (
            time.time() + float(expires_in) if isinstance(expires_in, int | float) else None
        )
        scope = body.get("scope")
        refresh = body.get("refresh_token")
        return cls(
            access_token=str(body["access_token"]),
            token_type=str(body.get("token_type") or "Bearer"),
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            expires_at=expires_at,
            scope=scope if isinstance(scope, str) else requested_scope,
            issuer=issuer,
            dpop_key=dpop_key,
        )

    def expires_within(self, seconds: float) -> bool:
        """Whether the token expires within ``seconds``, or within half its lifetime when
        that is shorter (a short-lived token is not refreshed the moment it arrives)."""
        if self.expires_at is None:
            return False
        window = min(seconds, (self.expires_at - self.issued_at) / 2)
        return self.expires_at - time.time() < window


@dataclass(frozen=True)
class ClientIdentity:
    """Who mcpx is to one authorization server, and how it proves it at the token endpoint
    (``auth_method``: client_secret_basic, client_secret_post, private_key_jwt or none)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: str = "none"
    redirect_uris: tuple[str, ...] = ()
    source: IdentitySource = "dcr"


@dataclass(frozen=True)
class PendingLogin:
    """An authorization request sent to a person; ``finish_login`` completes it."""

    authorization_url: str = field(repr=False)  # holds the state and PKCE challenge
    state: str = field(repr=False)
    redirect_uri: str
    issuer: str
    scope: str | None
    code_verifier: str = field(repr=False)
    client: ClientIdentity
    # Whether the authorization server said it sends ``iss`` (RFC 9207).
    iss_required: bool = False
