"""The issuer's signing keys (JWKS), fetched with httpx and cached.

Invariants:

- The JWKS address is ``daemon.oauth.jwksUri``, else the ``jwks_uri`` of the issuer's
  metadata: RFC 8414 (``/.well-known/oauth-authorization-server``, inserted before the
  issuer's path), then OpenID discovery (``/.well-known/openid-configuration`` after it).
  The metadata's ``issuer`` must be the configured one (RFC 8414 3.3), else it is not used.
- Keys are fetched when first needed (the authorization server may start after mcpx),
  and again once for a ``kid`` not among them (the issuer rotated its keys), but at most
  once per ``REFETCH_AFTER`` seconds: a stream of made-up kids costs one fetch, not one each.
- A fetch is bounded in time and size; a failure is a ``KeysUnavailable`` (the request is
  answered 503, nothing is cached), never a crash.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
import jwt

__all__ = ["REFETCH_AFTER", "Keys", "KeysUnavailable", "metadata_urls"]

log = logging.getLogger("mcpx.daemon")

REFETCH_AFTER: Final = 30.0
_TIMEOUT: Final = 10.0
_MOST_BYTES: Final = 512 * 1024


class KeysUnavailable(Exception):
    """The keys (or the metadata naming them) could not be fetched; the message says why."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be, in the order RFC 8414 and OpenID give."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    oauth = urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/oauth-authorization-server" + path, "", "")
    )
    oidc_inserted = urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/openid-configuration" + path, "", "")
    )
    oidc = issuer.rstrip("/") + "/.well-known/openid-configuration"
    return list(dict.fromkeys([oauth, oidc_inserted, oidc]))


async def get_json(client: httpx.AsyncClient, url: str) -> Any:
    """``url``'s JSON document.

    Raises:
        KeysUnavailable: unreachable, not 200, too large or not JSON.
    """
    try:
        async with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
            if response.status_code != 200:
                raise KeysUnavailable(f"{url} answered {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > _MOST_BYTES:
                    raise KeysUnavailable(f"{url} answered more than {_MOST_BYTES} bytes")
    except httpx.HTTPError as exc:
        raise KeysUnavailable(f"{url} could not be fetched: {type(exc).__name__}") from None
    try:
        return httpx.Response(200, content=body).json()
    except ValueError:
        raise KeysUnavailable(f"{url} did not answer JSON") from None


class Keys:
    """The issuer's JWKS, by ``kid``."""

    def __init__(self, issuer: str, jwks_uri: str | None) -> None:
        self._issuer = issuer
        self._jwks_uri = jwks_uri
        self._keys: dict[str, jwt.PyJWK] = {}
        self._unnamed: list[jwt.PyJWK] = []
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def key(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        """The key a token names (``kid``; the only key when it names none), or None.

        Raises:
            KeysUnavailable: they could not be fetched.
        """
        found = self._find(kid, alg)
        if found is not None:
            return found
        async with self._lock:
            found = self._find(kid, alg)
            fresh = (
                self._fetched_at is not None and time.monotonic() - self._fetched_at < REFETCH_AFTER
            )
            if found is not None or fresh:
                return found
            await self._fetch()
            return self._find(kid, alg)

    def _find(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        if kid is not None:
            return self._keys.get(kid)
        usable = [
            k for k in self._unnamed + list(self._keys.values()) if k.algorithm_name in (alg, None)
        ]
        return usable[0] if len(usable) == 1 else None

    async def _fetch(self) -> None:
        async with httpx.AsyncClient(timeout=_TIMEOUT, follow_redirects=False) as client:
            uri = self._jwks_uri or await self._discover(client)
            document = await get_json(client, uri)
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise KeysUnavailable(f"{uri} is not a JWK set (no keys list)")
        keys: dict[str, jwt.PyJWK] = {}
        unnamed: list[jwt.PyJWK] = []
        for entry in document["keys"]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type or curve pyjwt cannot use: never picked
            if isinstance(entry.get("kid"), str):
                keys[entry["kid"]] = key
            else:
                unnamed.append(key)
        self._keys, self._unnamed = keys, unnamed
        self._fetched_at = time.monotonic()
        log.info("fetched %d signing keys of %s", len(keys) + len(unnamed), self._issuer)

    async def _discover(self, client: httpx.AsyncClient) -> str:
        problems = []
        for url in metadata_urls(self._issuer):
            try:
                document = await get_json(client, url)
            except KeysUnavailable as exc:
                problems.append(str(exc))
                continue
            if not isinstance(document, dict) or document.get("issuer") != self._issuer:
                problems.append(f"{url} names another issuer")
                continue
            uri = document.get("jwks_uri")
            if isinstance(uri, str) and uri:
                self._jwks_uri = uri
                return uri
            problems.append(f"{url} names no jwks_uri")
        raise KeysUnavailable(
            "the issuer's signing keys could not be found (set daemon.oauth.jwksUri): "
            + "; ".join(problems)
        )
