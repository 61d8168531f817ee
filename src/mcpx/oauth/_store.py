"""Where tokens and client identities are kept, and the key a server's entries go under.

Tokens are per (server key, user); client identities per (server key, issuer), so an
identity registered with one authorization server is never shown to another (SEP-2352).
"""

from __future__ import annotations

import hashlib
import json
from typing import Final, Protocol

from mcpx.config import ServerConfig

from ._model import ClientIdentity, Tokens

__all__ = ["MemoryStore", "TokenStore", "store_key"]

# The auth block's keys that name no secret: a change to one of them is another login.
_KEY_PARTS: Final = ("type", "clientId", "clientSecretEnv", "scopes", "clientMetadataUrl", "grant")
# And its identity provider's (the enterprise grant): another IdP may be another user.
_IDP_PARTS: Final = ("issuer", "tokenEndpoint", "clientId")


class TokenStore(Protocol):
    def tokens(self, key: str, user: str) -> Tokens | None: ...
    def save_tokens(self, key: str, user: str, tokens: Tokens) -> None: ...
    def drop_tokens(self, key: str, user: str) -> None: ...
    def client(self, key: str, issuer: str) -> ClientIdentity | None: ...
    def save_client(self, key: str, issuer: str, client: ClientIdentity) -> None: ...


class MemoryStore:
    """A ``TokenStore`` that forgets at exit (tests, the conformance driver)."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], Tokens] = {}
        self._clients: dict[tuple[str, str], ClientIdentity] = {}

    def tokens(self, key: str, user: str) -> Tokens | None:
        return self._tokens.get((key, user))

    def save_tokens(self, key: str, user: str, tokens: Tokens) -> None:
        self._tokens[(key, user)] = tokens

    def drop_tokens(self, key: str, user: str) -> None:
        self._tokens.pop((key, user), None)

    def client(self, key: str, issuer: str) -> ClientIdentity | None:
        return self._clients.get((key, issuer))

    def save_client(self, key: str, issuer: str, client: ClientIdentity) -> None:
        self._clients[(key, issuer)] = client


def store_key(server: ServerConfig) -> str:
    """A stable hash of the server's name, url and the non-secret keys of its auth block."""
    block = dict(server.auth or {})
    auth: dict[str, object] = {k: block[k] for k in _KEY_PARTS if k in block}
    idp = block.get("idp")
    if isinstance(idp, dict):
        auth["idp"] = {k: idp[k] for k in _IDP_PARTS if k in idp}
    parts = {"name": server.name, "url": server.url, "auth": auth}
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]
