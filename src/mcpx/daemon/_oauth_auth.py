"""``daemon.auth=oauth``: the TCP port as an OAuth protected resource.

mcpx is a resource server for an external authorization server (``daemon.oauth.issuer``).
An access token is checked as a JWT against the issuer's keys (``_oauth_keys``), or, with
``daemon.oauth.introspectionUrl``, by asking the issuer (RFC 7662).

Invariants:

- Accepted only when: signed with an algorithm of ``daemon.oauth.algorithms`` (never
  ``none``, never a shared-secret HMAC: the keys are public) by a key of the issuer,
  ``iss`` the issuer, ``aud`` the resource URI (RFC 8707: a token meant for another
  resource is never taken, so none is passed on either), ``exp`` and ``nbf`` within
  ``LEEWAY`` seconds, a ``sub``, and every scope of ``daemon.oauth.scopes`` (``scope``
  string or ``scp`` list; a broader scope holds its narrower ones: ``files`` holds
  ``files:read``). Otherwise 401 ``invalid_token``, or 403 ``insufficient_scope`` naming
  every scope needed at once (RFC 6750 3.1).
- Audiences compare as resource URIs: scheme and host in any case, a trailing ``/`` or not.
- ``offline_access`` is never advertised (metadata, challenges): it is no resource's scope.
- The resource URI is ``daemon.oauth.resource``, else ``http://ADDRESS:PORT/mcp`` of the
  address the request reached: one resource for ``/mcp`` and ``/v1`` alike.
- Every challenge carries ``resource_metadata`` (RFC 9728 5.1) and the scopes needed.
- Messages say what is wrong with a token, never show it; the caller's identity is
  ``oauth:<sub>`` (introspection: ``sub``, else ``username``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import httpx
import jwt

from mcpx.config import Settings

from ._auth_verdicts import Denied, Granted, StartRefused
from ._oauth_keys import Keys, KeysUnavailable

__all__ = ["LEEWAY", "OAuthAuth", "OAuthSettings", "metadata_url", "open_oauth"]

log = logging.getLogger("mcpx.daemon")

LEEWAY: Final = 30
# Public-key algorithms pyjwt verifies; an HMAC key would be the JWKS itself, i.e. public.
_ASYMMETRIC: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_BEARER_PREFIX: Final = b"bearer "
_WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class OAuthSettings:
    issuer: str
    resource: str | None
    jwks_uri: str | None
    introspection_url: str | None
    client_id: str | None
    secret_var: str | None
    scopes: tuple[str, ...]
    algorithms: tuple[str, ...]


def _url(name: str, value: str, *, required: bool = False) -> str | None:
    if not value:
        if required:
            raise StartRefused(
                f"daemon.auth is oauth but {name} is not set: set it to the authorization "
                "server's issuer URL (e.g. https://auth.example.com)"
            )
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise StartRefused(f"{name} {value[:200]!r} is not an http(s) URL without a fragment")
    return value


def oauth_settings(settings: Settings) -> OAuthSettings:
    """The ``daemon.oauth.*`` settings, checked.

    Raises:
        StartRefused: the issuer is missing, a URL is malformed, an algorithm unsafe, or
            introspection lacks its client.
    """
    algorithms = tuple(str(a) for a in settings["daemon.oauth.algorithms"])
    unsafe = [a for a in algorithms if a not in _ASYMMETRIC]
    if unsafe or not algorithms:
        raise StartRefused(
            f"daemon.oauth.algorithms {list(algorithms)} must name public-key algorithms only "
            f"({', '.join(sorted(_ASYMMETRIC))}); {unsafe or 'none'} cannot be accepted"
        )
    introspection = _url(
        "daemon.oauth.introspectionUrl", str(settings["daemon.oauth.introspectionUrl"])
    )
    client_id = str(settings["daemon.oauth.clientId"]) or None
    secret_var = str(settings["daemon.oauth.clientSecretEnv"]) or None
    if introspection is not None and (client_id is None or secret_var is None):
        raise StartRefused(
            "daemon.oauth.introspectionUrl needs daemon.oauth.clientId and "
            "daemon.oauth.clientSecretEnv (the variable holding the client's secret)"
        )
    return OAuthSettings(
        issuer=str(
            _url("daemon.oauth.issuer", str(settings["daemon.oauth.issuer"]), required=True)
        ),
        resource=_url("daemon.oauth.resource", str(settings["daemon.oauth.resource"])),
        jwks_uri=_url("daemon.oauth.jwksUri", str(settings["daemon.oauth.jwksUri"])),
        introspection_url=introspection,
        client_id=client_id,
        secret_var=secret_var,
        scopes=tuple(str(s) for s in settings["daemon.oauth.scopes"]),
        algorithms=algorithms,
    )


def open_oauth(settings: Settings, environ: Mapping[str, str]) -> OAuthAuth:
    """``daemon.auth=oauth``'s check.

    Raises:
        StartRefused: incomplete settings, or the introspection secret's variable unset.
    """
    config = oauth_settings(settings)
    secret = None
    if config.secret_var is not None:
        secret = environ.get(config.secret_var, "")
        if not secret:
            raise StartRefused(
                f"daemon.oauth.clientSecretEnv names ${config.secret_var}, which is unset or "
                "empty: put the introspection client's secret there"
            )
    return OAuthAuth(config, secret)


def metadata_url(resource: str) -> str:
    """Where a resource's RFC 9728 metadata is: the well-known path before its path."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, _WELL_KNOWN + path, "", ""))


def _canonical(uri: str) -> str:
    parts = urlsplit(uri)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def _for(audience: object, resource: str) -> bool:
    """Whether a token's ``aud`` (a string or a list of them) names the resource."""
    named = (
        [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    )
    return _canonical(resource) in {_canonical(a) for a in named if isinstance(a, str)}


def _holds(have: set[str], needed: str) -> bool:
    return needed in have or any(needed.startswith(h + ":") for h in have)


def _scopes(claims: Mapping[str, Any]) -> set[str]:
    scope, scp = claims.get("scope"), claims.get("scp")
    found = set(scope.split()) if isinstance(scope, str) else set()
    if isinstance(scp, list):
        found |= {s for s in scp if isinstance(s, str)}
    elif isinstance(scp, str):
        found |= set(scp.split())
    return found


class OAuthAuth:
    """Checks access tokens for the resource; see the module docstring."""

    def __init__(self, config: OAuthSettings, secret: str | None) -> None:
        self._config = config
        self._secret = secret
        self._keys = Keys(config.issuer, config.jwks_uri)

    @property
    def variables(self) -> tuple[str, ...]:
        return () if self._config.secret_var is None else (self._config.secret_var,)

    def resource(self, reached: str) -> str:
        """The resource URI: configured, else ``reached`` (the request's own)."""
        return self._config.resource or reached

    def metadata(self, resource: str) -> dict[str, object] | None:
        document: dict[str, object] = {
            "resource": self.resource(resource),
            "authorization_servers": [self._config.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcpx",
        }
        if self._advertised:
            document["scopes_supported"] = list(self._advertised)
        return document

    @property
    def _advertised(self) -> tuple[str, ...]:
        return tuple(s for s in self._config.scopes if s != "offline_access")

    def _challenge(self, resource: str, error: str | None = None) -> str:
        parts = [f'resource_metadata="{metadata_url(resource)}"']
        if self._advertised:
            parts.append(f'scope="{" ".join(self._advertised)}"')
        if error is not None:
            parts.append(f'error="{error}"')
        return "Bearer " + ", ".join(parts)

    def _invalid(self, resource: str, why: str) -> Denied:
        return Denied(
            f"the access token is not accepted: {why}",
            self._challenge(resource, "invalid_token"),
            code="invalid_token",
        )

    async def check(self, authorization: bytes | None, resource: str) -> Granted | Denied:
        resource = self.resource(resource)
        given = authorization or b""
        token = given[len(_BEARER_PREFIX) :].strip() if given[:7].lower() == _BEARER_PREFIX else b""
        if not token or b" " in token:
            return Denied(
                "this port needs an OAuth access token: send 'Authorization: Bearer <token>' "
                f"from {self._config.issuer} (see {metadata_url(resource)})",
                self._challenge(resource),
            )
        text = token.decode("ascii", "replace")
        try:
            claims = await (
                self._introspect(text, resource)
                if self._config.introspection_url is not None
                else self._verify(text, resource)
            )
        except KeysUnavailable as exc:
            log.warning("cannot check access tokens: %s", exc)
            return Denied(
                f"the authorization server could not be asked about the token: {exc}",
                self._challenge(resource),
                code="temporarily_unavailable",
                status=503,
            )
        if isinstance(claims, Denied):
            return claims
        have = _scopes(claims)
        missing = [s for s in self._config.scopes if not _holds(have, s)]
        if missing:
            return Denied(
                f"the access token lacks the scope {' '.join(missing)} this port needs",
                self._challenge(resource, "insufficient_scope"),
                code="insufficient_scope",
                status=403,
            )
        subject = claims.get("sub") or claims.get("username")
        if not isinstance(subject, str) or not subject:
            return self._invalid(resource, "it names no subject (sub)")
        return Granted(f"oauth:{subject}", f"oauth subject {subject[:200]!r}")

    async def _verify(self, token: str, resource: str) -> dict[str, Any] | Denied:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return self._invalid(resource, "it is not a JWT")
        alg = header.get("alg")
        if alg not in self._config.algorithms:
            return self._invalid(
                resource, f"it is signed with {str(alg)[:20]!r}, not one of daemon.oauth.algorithms"
            )
        kid = header.get("kid")
        key = await self._keys.key(kid if isinstance(kid, str) else None, str(alg))
        if key is None:
            return self._invalid(resource, "no key of the issuer signed it")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[str(alg)],
                issuer=self._config.issuer,
                leeway=LEEWAY,
                # The audience is compared below, as resource URIs compare.
                options={"require": ["exp", "iss", "aud", "sub"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError:
            return self._invalid(resource, "it has expired")
        except jwt.ImmatureSignatureError:
            return self._invalid(resource, "it is not valid yet (nbf)")
        except jwt.InvalidIssuerError:
            return self._invalid(resource, f"it was not issued by {self._config.issuer}")
        except jwt.InvalidSignatureError:
            return self._invalid(resource, "its signature does not verify")
        except jwt.MissingRequiredClaimError as exc:
            return self._invalid(resource, f"it has no {exc.claim} claim")
        except jwt.PyJWTError as exc:
            return self._invalid(resource, f"it is malformed ({type(exc).__name__})")
        if not _for(claims.get("aud"), resource):
            return self._invalid(resource, f"it is meant for another audience, not {resource}")
        return claims

    async def _introspect(self, token: str, resource: str) -> dict[str, Any] | Denied:
        url = str(self._config.introspection_url)
        auth = (str(self._config.client_id), str(self._secret))
        try:
            async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
                response = await client.post(url, data={"token": token}, auth=auth)
        except httpx.HTTPError as exc:
            raise KeysUnavailable(f"{url} could not be reached: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise KeysUnavailable(f"{url} answered {response.status_code}")
        try:
            claims = response.json()
        except ValueError:
            raise KeysUnavailable(f"{url} did not answer JSON") from None
        if not isinstance(claims, dict) or claims.get("active") is not True:
            return self._invalid(resource, "the authorization server says it is not active")
        return self._introspected(claims, resource)

    def _introspected(self, claims: dict[str, Any], resource: str) -> dict[str, Any] | Denied:
        """RFC 7662 leaves iss, aud and exp optional: each is checked when present."""
        if "iss" in claims and claims["iss"] != self._config.issuer:
            return self._invalid(resource, f"it was not issued by {self._config.issuer}")
        if "aud" in claims and not _for(claims["aud"], resource):
            return self._invalid(resource, f"it is meant for another audience, not {resource}")
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and exp + LEEWAY < time.time():
            return self._invalid(resource, "it has expired")
        return claims
