"""mcpx as an OAuth client of upstream MCP servers (the spec's authorization, SEP-1046).

A layer between ``client`` and ``transport``: ``OAuthClient(server, store=...)`` gives
the HTTP transports an ``httpx.Auth`` that adds the bearer token to requests to the
server's own origin and, on 401 / 403 ``insufficient_scope``, runs discovery, refresh,
client identity (CIMD, pre-registered, RFC 7591), authorization code + PKCE through an
``Authorizer``, or the client_credentials grant. ``LoginNeeded`` says a person must run
``mcpx auth login <server>``. Tokens and client identities live in a ``TokenStore``.

Modules: ``_challenge`` (WWW-Authenticate), ``_discovery`` (RFC 9728 / 8414 / 2025-03-26
fallbacks), ``_identity`` (who mcpx is to the AS), ``_scopes``, ``_tokens`` (token
endpoint, client auth, PKCE), ``_revoke`` (RFC 7009), ``_client`` (the flow),
``_httpauth`` (the httpx.Auth), ``_store``, ``_model``, ``_errors``.
"""

from ._challenge import Challenge, parse_challenge
from ._client import Authorizer, OAuthClient
from ._discovery import Discovery, discover
from ._errors import LoginNeeded, OAuthError
from ._model import ClientIdentity, PendingLogin, Tokens
from ._store import MemoryStore, TokenStore, store_key

__all__ = [
    "Authorizer",
    "Challenge",
    "ClientIdentity",
    "Discovery",
    "LoginNeeded",
    "MemoryStore",
    "OAuthClient",
    "OAuthError",
    "PendingLogin",
    "TokenStore",
    "Tokens",
    "discover",
    "parse_challenge",
    "store_key",
]
