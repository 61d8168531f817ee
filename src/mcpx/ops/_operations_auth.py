"""OAuth upstreams' logins (``mcpx auth``: its commands are in ``cli._auth``), part of
the one table (``_operations.OPERATIONS``). Not MCP tools: a login needs a person and a
browser (``_handle_auth`` says more).

Invariant: as ``_operations``, this module imports nothing heavy (the CLI reads it at
every start).
"""

from __future__ import annotations

from typing import Final

from ._table import Operation, Param

__all__ = ["AUTH_OPERATIONS", "REDIRECT_PATTERN"]

# An http(s) URL with a host name or address and no fragment (RFC 6749 §3.1.2), in
# printable ASCII: classes both Python's and ECMA's regular expressions read alike.
REDIRECT_PATTERN: Final = (
    r'^https?://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[!"$-~]*)?$'
)
_AUTH_SERVER = Param(
    "server", {"type": "string"}, "Configured server name", where="path", required=True
)
AUTH_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "auth.status",
        "GET",
        "/v1/auth",
        "OAuth upstreams: logged in, expiry, scopes, issuer, whether a login is needed and "
        "why (no token is ever shown)",
        "auth_status",
    ),
    Operation(
        "auth.login",
        "POST",
        "/v1/auth/{server}/login",
        "Begin a login: the authorization URL a person opens; its redirect comes back "
        "to redirectUri, then to POST /v1/auth/callback",
        "auth_login",
        params=(
            _AUTH_SERVER,
            Param(
                "redirectUri",
                {"type": "string", "pattern": REDIRECT_PATTERN},
                "Where the browser is sent back (a loopback listener)",
                required=True,
            ),
        ),
    ),
    Operation(
        "auth.callback",
        "POST",
        "/v1/auth/callback",
        "Finish a login with the URL the browser was redirected to (state and iss checked)",
        "auth_callback",
        params=(Param("url", {"type": "string"}, "The redirected URL", required=True),),
    ),
    Operation(
        "auth.logout",
        "DELETE",
        "/v1/auth/{server}",
        "Log out of a server: its tokens revoked where it offers revocation, then dropped",
        "auth_logout",
        params=(_AUTH_SERVER,),
    ),
)
