"""Finding a resource's authorization server and that server's endpoints.

Order (2025-11-25 / 2026-07-28 authorization, RFC 9728, RFC 8414, OpenID Discovery):

1. Protected resource metadata: the challenge's ``resource_metadata``, else
   ``/.well-known/oauth-protected-resource<path>``, else the same at the root. Its
   ``resource`` must name the server (the client refuses another one).
2. Authorization server metadata for the first of its ``authorization_servers``: for an
   issuer with a path, RFC 8414 path-inserted, OpenID path-inserted, OpenID path-appended;
   at the root, RFC 8414 then OpenID. The document's ``issuer`` must be that issuer,
   compared as strings.
3. No protected resource metadata at all (a 2025-03-26 server): the issuer is the
   server's origin, its RFC 8414 document is tried, and without one the default endpoints
   ``/authorize``, ``/token`` and ``/register`` at that origin are used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcpx import spec

from ._errors import OAuthError

__all__ = [
    "Discovery",
    "discover",
    "issuers_match",
    "origin_of_url",
    "resource_of",
    "server_metadata",
]

log = logging.getLogger("mcpx.oauth")


@dataclass(frozen=True)
class Discovery:
    """What discovery found for one resource."""

    resource: str  # the RFC 8707 resource indicator sent to the authorization server
    issuer: str
    metadata: dict[str, Any] = field(default_factory=dict)  # empty: legacy default endpoints
    scopes_supported: tuple[str, ...] | None = None  # the resource's (PRM), if it says
    has_prm: bool = False

    def endpoint(self, name: str, default_path: str) -> str:
        value = self.metadata.get(name)
        if isinstance(value, str) and value:
            return value
        return origin_of_url(self.issuer) + default_path

    @property
    def as_scopes(self) -> tuple[str, ...]:
        scopes = self.metadata.get("scopes_supported")
        return tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else ()


def origin_of_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def resource_of(server_url: str) -> str:
    """The server URL as a resource indicator: no fragment (RFC 8707 §2)."""
    return urlunsplit(urlsplit(server_url)._replace(fragment=""))


def issuers_match(a: str, b: str) -> bool:
    """Simple string comparison (RFC 8414 §3.3), except that a root issuer with and without
    its trailing slash is the same."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return long == short + "/" and short == origin_of_url(short)


def _resource_matches(prm_resource: str, server_url: str) -> bool:
    """Whether the PRM's ``resource`` covers the server URL: same origin, and its path a
    prefix of the server's path at a segment boundary."""
    want, got = urlsplit(resource_of(server_url)), urlsplit(prm_resource)
    if (want.scheme.lower(), want.netloc.lower()) != (got.scheme.lower(), got.netloc.lower()):
        return False
    base = got.path.rstrip("/")
    return want.path.rstrip("/") == base or want.path.startswith(base + "/")


def _prm_urls(challenge_url: str | None, server_url: str) -> list[str]:
    origin, path = origin_of_url(server_url), urlsplit(server_url).path
    urls = [challenge_url] if challenge_url else []
    if path and path != "/":
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return urls


def _as_urls(issuer: str) -> list[str]:
    origin, path = origin_of_url(issuer), urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server",
        f"{origin}/.well-known/openid-configuration",
    ]


async def _get_json(http: httpx.AsyncClient, url: str, what: str) -> dict[str, Any] | None:
    """The JSON object at ``url``; None when it is not there (a 3xx or 4xx, or no object).

    Raises:
        OAuthError: the server failed (5xx, 429) or could not be reached.
    """
    try:
        # MCP-Protocol-Version on discovery requests (2025-03-26 authorization).
        headers = {"Accept": "application/json", "MCP-Protocol-Version": spec.NEWEST}
        response = await http.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise OAuthError(f"{what} at {url} could not be fetched ({type(exc).__name__})") from None
    if response.status_code >= 500 or response.status_code == 429:
        raise OAuthError(f"{what} at {url} failed: HTTP {response.status_code}")
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


async def _protected_resource(
    http: httpx.AsyncClient, server_url: str, challenge_url: str | None
) -> dict[str, Any] | None:
    failure: OAuthError | None = None
    for url in _prm_urls(challenge_url, server_url):
        try:
            prm = await _get_json(http, url, "protected resource metadata")
        except OAuthError as exc:
            failure = failure or exc  # a server error says nothing of the next URL
            continue
        if prm is not None and isinstance(prm.get("authorization_servers"), list):
            return prm
    if failure is not None:
        raise failure  # not "no metadata": the legacy path must not follow a failure
    return None


async def server_metadata(
    http: httpx.AsyncClient, issuer: str, *, what: str = "authorization server metadata"
) -> dict[str, Any]:
    """The metadata of the authorization server ``issuer`` (RFC 8414, else OpenID Connect
    discovery), its issuer checked.

    Raises:
        OAuthError: none found, or it names another issuer.
    """
    return await _authorization_server(http, issuer, legacy=False, what=what)


async def _authorization_server(
    http: httpx.AsyncClient,
    issuer: str,
    legacy: bool,
    what: str = "authorization server metadata",
) -> dict[str, Any]:
    urls = _as_urls(issuer)[:1] if legacy else _as_urls(issuer)
    for url in urls:
        metadata = await _get_json(http, url, what)
        if metadata is None:
            continue
        found = metadata.get("issuer")
        if not isinstance(found, str) or not issuers_match(found, issuer):
            raise OAuthError(
                f"{what} at {url} names issuer {found!r}, not {issuer!r}; "
                "refusing it (RFC 8414 §3.3)"
            )
        return metadata
    if legacy:
        return {}  # 2025-03-26: the default endpoints at the server's origin
    raise OAuthError(f"no {what} found for {issuer}")


async def discover(
    http: httpx.AsyncClient, server_url: str, challenge_url: str | None = None
) -> Discovery:
    """Discovery for the resource at ``server_url``.

    Raises:
        OAuthError: metadata is inconsistent (resource or issuer mismatch) or missing.
    """
    prm = await _protected_resource(http, server_url, challenge_url)
    if prm is None:
        issuer = origin_of_url(server_url)
        log.info("%s publishes no protected resource metadata; 2025-03-26 discovery", server_url)
        metadata = await _authorization_server(http, issuer, legacy=True)
        found = metadata.get("issuer")
        return Discovery(
            resource=resource_of(server_url),
            issuer=found if isinstance(found, str) else issuer,
            metadata=metadata,
        )
    resource = prm.get("resource")
    if isinstance(resource, str) and resource and not _resource_matches(resource, server_url):
        raise OAuthError(
            f"protected resource metadata names resource {resource!r}, which is not "
            f"{resource_of(server_url)!r}; refusing to authorize for it"
        )
    servers = [s for s in prm["authorization_servers"] if isinstance(s, str) and s]
    if not servers:
        raise OAuthError("protected resource metadata lists no authorization server")
    issuer = servers[0]
    metadata = await _authorization_server(http, issuer, legacy=False)
    scopes = prm.get("scopes_supported")
    return Discovery(
        resource=resource if isinstance(resource, str) and resource else resource_of(server_url),
        issuer=issuer,
        metadata=metadata,
        scopes_supported=tuple(scopes) if isinstance(scopes, list) else None,
        has_prm=True,
    )
