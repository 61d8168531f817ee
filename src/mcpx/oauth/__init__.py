"""mcpx as an OAuth client of upstream MCP servers (the spec's authorization, SEP-1046).

A layer between ``client`` and ``transport``: ``OAuthClient(server, store=...)`` gives
the HTTP transports an ``httpx.Auth`` that adds the bearer token to requests to the
server's own origin and, on 401 / 403 ``insufficient_scope``, runs discovery, refresh,
client identity (CIMD, pre-registered, RFC 7591), authorization code + PKCE through an
``Authorizer``, or a grant that needs nobody: client_credentials, JWT-bearer with a
workload identity token (RFC 7523, SEP-1933), or an ID-JAG from the enterprise IdP
(SEP-990). Tokens are DPoP-bound (RFC 9449, SEP-1932) where the authorization server
offers it. ``LoginNeeded`` says a person must run ``mcpx auth login <server>``. Tokens
and client identities live in a ``TokenStore``.

Modules: ``_challenge`` (WWW-Authenticate), ``_discovery`` (RFC 9728 / 8414 / 2025-03-26
fallbacks), ``_identity`` (who mcpx is to the AS), ``_scopes``, ``_tokens`` (token
endpoint, client auth, PKCE), ``_grants`` (client_credentials, JWT-bearer),
``_enterprise`` (the ID-JAG token exchange), ``_assertion`` (JWTs read from the
environment or a file), ``_dpop`` (proofs, nonces), ``_revoke`` (RFC 7009), ``_client``
(the flow), ``_httpauth`` (the httpx.Auth), ``_store``, ``_sqlite_store``
(``<state>/oauth.db``), ``_logins`` (logins in progress, held by the daemon),
``_model``, ``_errors``.
"""

from ._challenge import Challenge, parse_challenge
from ._client import Authorizer, OAuthClient
from ._discovery import Discovery, discover
from ._errors import LoginNeeded, NotPending, OAuthError, Unavailable
from ._logins import LOGIN_TTL, MAX_PENDING, Logins, state_of
from ._model import ClientIdentity, PendingLogin, Tokens
from ._revoke import revoke
from ._sqlite_store import SqliteStore
from ._store import MemoryStore, TokenStore, store_key
from ._tokens import request_tokens

__all__ = [
    "LOGIN_TTL",
    "MAX_PENDING",
    "Authorizer",
    "Challenge",
    "ClientIdentity",
    "Discovery",
    "LoginNeeded",
    "Logins",
    "MemoryStore",
    "NotPending",
    "OAuthClient",
    "OAuthError",
    "PendingLogin",
    "SqliteStore",
    "TokenStore",
    "Tokens",
    "Unavailable",
    "discover",
    "parse_challenge",
    "request_tokens",
    "revoke",
    "state_of",
    "store_key",
]
