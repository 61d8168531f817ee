"""Who mcpx is to an authorization server: CIMD, pre-registered, or registered (RFC 7591).

In that order: a client ID metadata document URL when the server supports them and the
config names one; else the config's ``clientId`` (its secret inline or from an env var);
else dynamic client registration. A registered identity is bound to the issuer that
registered it (the store keys it by issuer), so it is never presented elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

import httpx

from ._discovery import Discovery
from ._errors import OAuthError
from ._model import ClientIdentity

__all__ = ["ClientSettings", "block_secret", "pick_auth_method", "register_client"]

# Ours, best first, when the server leaves the choice to us.
_SECRET_METHODS: Final = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class ClientSettings:
    """The auth block's client keys, secrets resolved."""

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    metadata_url: str | None = None
    private_key: str | None = field(default=None, repr=False)  # PEM, for private_key_jwt
    client_name: str = "mcpx"


def block_secret(block: Mapping[str, object], key: str, env: Mapping[str, str]) -> str | None:
    """The secret ``key`` of an auth block: as written, else from the variable its
    ``<key>Env`` names (which must be set)."""
    value = block.get(key)
    if isinstance(value, str):
        return value
    var = block.get(f"{key}Env")
    if isinstance(var, str):
        if var not in env:
            raise OAuthError(f"auth {key}Env names {var}, which is not set")
        return env[var]
    return None


def pick_auth_method(discovery: Discovery, *, has_secret: bool, has_key: bool = False) -> str:
    """The token endpoint auth method for a client with or without a secret: one the
    server advertises (RFC 8414's default is client_secret_basic)."""
    offered = discovery.metadata.get("token_endpoint_auth_methods_supported")
    methods = [m for m in offered if isinstance(m, str)] if isinstance(offered, list) else []
    if has_key:
        return "private_key_jwt"
    if not has_secret:
        return "none"
    if not methods:
        return "client_secret_basic"
    for method in _SECRET_METHODS:
        if method in methods:
            return method
    return "none" if "none" in methods else "client_secret_basic"


def configured_identity(
    settings: ClientSettings, discovery: Discovery, redirect_uri: str | None
) -> ClientIdentity | None:
    """CIMD or the pre-registered client, when either applies."""
    redirects = (redirect_uri,) if redirect_uri else ()
    if settings.metadata_url and discovery.metadata.get("client_id_metadata_document_supported"):
        return ClientIdentity(settings.metadata_url, None, "none", redirects, "cimd")
    if settings.client_id:
        method = pick_auth_method(
            discovery,
            has_secret=settings.client_secret is not None,
            has_key=settings.private_key is not None,
        )
        return ClientIdentity(
            settings.client_id, settings.client_secret, method, redirects, "preregistered"
        )
    return None


def _loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1") or urlsplit(url).scheme not in (
        "http",
        "https",
    )


async def register_client(
    http: httpx.AsyncClient, discovery: Discovery, settings: ClientSettings, redirect_uri: str
) -> ClientIdentity:
    """Dynamic client registration (RFC 7591) at the server's registration endpoint.

    Raises:
        OAuthError: the server offers no registration, or refused it.
    """
    if discovery.metadata and not discovery.metadata.get("registration_endpoint"):
        raise OAuthError(
            f"{discovery.issuer} offers no dynamic client registration; "
            "give the server's auth block a clientId (and clientSecretEnv)"
        )
    endpoint = discovery.endpoint("registration_endpoint", "/register")
    method = pick_auth_method(discovery, has_secret=True)
    offered = discovery.metadata.get("token_endpoint_auth_methods_supported")
    if isinstance(offered, list) and offered == ["none"]:
        method = "none"
    body = {
        "client_name": settings.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        # SEP-837: a loopback redirect is a native app's; anything else a web app's.
        "application_type": "native" if _loopback(redirect_uri) else "web",
    }
    try:
        response = await http.post(endpoint, json=body)
    except httpx.HTTPError as exc:
        raise OAuthError(
            f"client registration at {endpoint} failed ({type(exc).__name__})"
        ) from None
    if response.status_code not in (200, 201):
        raise OAuthError(f"client registration at {endpoint} refused: HTTP {response.status_code}")
    try:
        answer = response.json()
        client_id = answer["client_id"]
    except (ValueError, KeyError, TypeError):
        raise OAuthError(f"client registration at {endpoint} answered no client_id") from None
    secret = answer.get("client_secret") if isinstance(answer, Mapping) else None
    secret = secret if isinstance(secret, str) and secret else None
    registered = answer.get("token_endpoint_auth_method")
    if not isinstance(registered, str):
        registered = method if secret else "none"
    if secret is None and registered in _SECRET_METHODS:
        registered = "none"
    return ClientIdentity(str(client_id), secret, registered, (redirect_uri,), "dcr")
