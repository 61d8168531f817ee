"""An ``"auth": {"type": "oauth"}`` block, checked: only the keys mcpx.oauth reads, each
of its type, and what each grant needs (a client for client_credentials, one assertion
source for jwt_bearer, an identity provider for enterprise). A problem is raised through
the entry's ``error`` (it knows where in the file the block is)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import urlsplit

from ._jsontext import ConfigError

__all__ = ["IDP_KEYS", "OAUTH_KEYS", "check_oauth"]

# error(problem, *path, key=False): the ConfigError to raise, pointing at auth.<path>.
Fail = Callable[..., ConfigError]

# The keys of an oauth auth block (mcpx.oauth reads them); any other is refused.
OAUTH_KEYS: Final = (
    "type",
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "scopes",
    "clientMetadataUrl",
    "grant",
    "privateKeyEnv",
    "assertionEnv",
    "assertionFile",
    "idp",
)
_GRANTS: Final = ("authorization_code", "client_credentials", "jwt_bearer", "enterprise")
_OAUTH_STRINGS: Final = (
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "privateKeyEnv",
    "clientMetadataUrl",
    "assertionEnv",
    "assertionFile",
)
_ASSERTION_KEYS: Final = ("assertionEnv", "assertionFile")
# The enterprise grant's identity provider (SEP-990), all strings.
IDP_KEYS: Final = (
    "issuer",
    "tokenEndpoint",
    "clientId",
    "clientSecret",
    "clientSecretEnv",
    "idTokenEnv",
    "idTokenFile",
)


def check_oauth(block: Mapping[str, object], error: Fail) -> None:
    """Refuses (``error(problem, *path)``) an oauth block mcpx.oauth cannot work with."""
    for key, value in block.items():
        if key not in OAUTH_KEYS:
            raise error(
                f"is not an oauth key: one of {', '.join(OAUTH_KEYS)}", "auth", key, key=True
            )
        if key in _OAUTH_STRINGS and (not isinstance(value, str) or not value):
            raise error("must be a non-empty string", "auth", key)
    scopes = block.get("scopes")
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes)
    ):
        raise error("must be a list of scope names", "auth", "scopes")
    if "clientSecret" in block and "clientSecretEnv" in block:
        raise error("give clientSecret or clientSecretEnv, not both", "auth", "clientSecretEnv")
    url = block.get("clientMetadataUrl")
    if isinstance(url, str) and (
        urlsplit(url).scheme != "https" or urlsplit(url).path in ("", "/")
    ):
        # A client ID metadata document's URL is its client_id: HTTPS with a path.
        raise error("must be an https URL with a path", "auth", "clientMetadataUrl")
    grant = block.get("grant", "authorization_code")
    if grant not in _GRANTS:
        raise error(f"must be one of {', '.join(_GRANTS)}", "auth", "grant")
    if grant == "client_credentials" and not (
        "clientId" in block
        and any(k in block for k in ("clientSecret", "clientSecretEnv", "privateKeyEnv"))
    ):
        raise error(
            "the client_credentials grant needs clientId and clientSecretEnv (or privateKeyEnv)",
            "auth",
            "grant",
        )
    _jwt_bearer(block, grant, error)
    _enterprise(block, grant, error)


def _enterprise(block: Mapping[str, object], grant: object, error: Fail) -> None:
    """Enterprise-managed authorization (SEP-990): who mcpx is at the IdP, where its
    token endpoint is, and where the user's ID token is."""
    idp = block.get("idp")
    if grant != "enterprise":
        if idp is not None:
            raise error('needs "grant": "enterprise"', "auth", "idp")
        return
    if "clientId" not in block:
        raise error(
            "the enterprise grant needs clientId (mcpx's client at the server's "
            "authorization server, which the ID-JAG names)",
            "auth",
            "grant",
        )
    if not isinstance(idp, dict):
        raise error(
            'the enterprise grant needs an "idp" object: issuer or tokenEndpoint, clientId, '
            "and idTokenEnv or idTokenFile",
            "auth",
            "idp" if idp is not None else "grant",
        )
    for key, value in idp.items():
        if key not in IDP_KEYS:
            raise error(
                f"is not an idp key: one of {', '.join(IDP_KEYS)}", "auth", "idp", key, key=True
            )
        if not isinstance(value, str) or not value:
            raise error("must be a non-empty string", "auth", "idp", key)
    for key in ("issuer", "tokenEndpoint"):
        url = idp.get(key)
        if isinstance(url, str) and urlsplit(url).scheme not in ("http", "https"):
            raise error("must be an http(s) URL", "auth", "idp", key)
    missing = [
        what
        for what, keys in (
            ("clientId", ("clientId",)),
            ("issuer or tokenEndpoint", ("issuer", "tokenEndpoint")),
            ("idTokenEnv or idTokenFile", ("idTokenEnv", "idTokenFile")),
        )
        if not any(k in idp for k in keys)
    ]
    if missing:
        raise error(f"needs {', '.join(missing)}", "auth", "idp")
    for pair in (("clientSecret", "clientSecretEnv"), ("idTokenEnv", "idTokenFile")):
        if all(k in idp for k in pair):
            raise error(f"give {pair[0]} or {pair[1]}, not both", "auth", "idp", pair[1])


def _jwt_bearer(block: Mapping[str, object], grant: object, error: Fail) -> None:
    """The JWT-bearer grant (RFC 7523, SEP-1933) takes the workload's identity JWT from
    exactly one place; the other grants take none."""
    given = [k for k in _ASSERTION_KEYS if k in block]
    if grant != "jwt_bearer":
        if given:
            raise error('needs "grant": "jwt_bearer"', "auth", given[0])
        return
    if len(given) > 1:
        raise error("give assertionEnv or assertionFile, not both", "auth", given[1])
    if not given:
        raise error(
            "the jwt_bearer grant needs assertionEnv (a variable holding the workload's "
            "identity JWT) or assertionFile (a file holding it)",
            "auth",
            "grant",
        )
