"""Token endpoint requests: authorization code (with PKCE), refresh, client credentials.

Client authentication comes from the libraries: authlib for client_secret_basic /
client_secret_post / none, PyJWT for the private_key_jwt assertion (RFC 7523; audience
the issuer, as SEP-1046 says). PKCE's S256 challenge is authlib's too.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from typing import Any

import httpx
import jwt
from authlib.common.security import generate_token  # type: ignore[import-untyped]
from authlib.oauth2.auth import ClientAuth  # type: ignore[import-untyped]
from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]

from ._discovery import Discovery
from ._dpop import DPoPProver, dpop_post
from ._errors import OAuthError, Unavailable
from ._model import ClientIdentity, Tokens

__all__ = ["authenticated_form", "pkce_pair", "request_tokens"]

_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def pkce_pair() -> tuple[str, str]:
    """A fresh PKCE verifier and its S256 challenge (RFC 7636)."""
    verifier = generate_token(64)
    return verifier, create_s256_code_challenge(verifier)


def _signing_alg(discovery: Discovery, key_pem: str) -> str:
    offered = discovery.metadata.get("token_endpoint_auth_signing_alg_values_supported")
    if isinstance(offered, list) and offered and isinstance(offered[0], str):
        return offered[0]
    return "ES256" if "EC PRIVATE KEY" in key_pem else "RS256"


def authenticated_form(
    client: ClientIdentity, form: dict[str, str], discovery: Discovery, private_key: str | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers with the client's authentication added."""
    headers: dict[str, str] = {}  # httpx sets the form's content type
    if client.auth_method == "private_key_jwt":
        if private_key is None:
            raise OAuthError("private_key_jwt needs a private key (privateKeyEnv)")
        now = int(time.time())
        claims = {
            "iss": client.client_id,
            "sub": client.client_id,
            "aud": discovery.issuer,
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        assertion = jwt.encode(claims, private_key, algorithm=_signing_alg(discovery, private_key))
        form |= {"client_assertion_type": _ASSERTION_TYPE, "client_assertion": assertion}
        form["client_id"] = client.client_id
        return form, headers
    method = client.auth_method if client.client_secret else "none"
    auth = ClientAuth(client.client_id, client.client_secret or "", method)
    _, new_headers, new_body = auth.prepare("POST", "", headers, str(httpx.QueryParams(form)))
    out = dict(httpx.QueryParams(new_body))
    # client_id in the body with HTTP Basic too: RFC 6749 allows it, and some servers
    # (the official SDK's token endpoint) find the client by it before reading the header.
    out.setdefault("client_id", client.client_id)
    return out, dict(new_headers)


async def request_tokens(
    http: httpx.AsyncClient,
    discovery: Discovery,
    client: ClientIdentity | None,
    form: dict[str, str],
    *,
    requested_scope: str | None,
    private_key: str | None = None,
    dpop: DPoPProver | None = None,
    issued_token_type: str | None = None,
) -> Tokens:
    """POST ``form`` (grant_type and its parameters) to the token endpoint, as ``client``
    (None: no client authentication, as a JWT-bearer grant may be), with a DPoP proof
    when ``dpop`` is given and the server offers DPoP. ``issued_token_type``: a token
    exchange's answer must say it issued that (RFC 8693 §2.2.1).

    Raises:
        OAuthError: the endpoint refused or answered something that is not a token.
    """
    endpoint = discovery.endpoint("token_endpoint", "/token")
    form = {**form, "resource": discovery.resource}
    headers: dict[str, str] = {}
    if client is not None:
        form, headers = authenticated_form(client, form, discovery, private_key)
    proved = dpop is not None and dpop.offered_by(discovery.metadata)
    try:
        if dpop is not None and proved:
            response = await dpop_post(http, dpop, endpoint, form, headers)
        else:
            response = await http.post(endpoint, data=form, headers=headers)
    except httpx.HTTPError as exc:
        raise Unavailable(f"token request to {endpoint} failed ({type(exc).__name__})") from None
    body: Any = None
    with contextlib.suppress(ValueError):
        body = response.json()
    if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
        error = body.get("error") if isinstance(body, dict) else None
        failed = response.status_code >= 500 or response.status_code == 429
        raise (Unavailable if failed else OAuthError)(
            f"token request ({form['grant_type']}) to {endpoint} refused: "
            f"HTTP {response.status_code}" + (f", {error}" if isinstance(error, str) else "")
        )
    if issued_token_type is not None and body.get("issued_token_type") != issued_token_type:
        raise OAuthError(
            f"token exchange at {endpoint} issued {body.get('issued_token_type')!r}, "
            f"not {issued_token_type}"
        )
    return Tokens.from_response(
        body,
        issuer=discovery.issuer,
        requested_scope=requested_scope,
        dpop_key=dpop.pem if dpop is not None and proved else None,
    )
