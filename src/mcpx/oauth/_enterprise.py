"""Enterprise-managed authorization (SEP-990): the user's ID token from the enterprise
identity provider, exchanged there for an ID-JAG (RFC 8693 token exchange,
draft-ietf-oauth-identity-assertion-authz-grant), which the MCP server's authorization
server takes as a JWT-bearer assertion (RFC 7523, ``_grants``).

The ID token comes from the ``idp`` block's ``idTokenEnv`` or ``idTokenFile``, read at
each exchange (the enterprise's sign-in tool renews it); mcpx does not run the IdP's
own sign-in. The IdP's token endpoint is ``tokenEndpoint``, else from its metadata at
``issuer`` (RFC 8414 or OpenID Connect discovery, the issuer checked). The exchange asks
for an ID-JAG for the authorization server (``audience``: its issuer) and the MCP server
(``resource``), as ``clientId`` at the IdP; an answer that is not an ID-JAG is refused.
Neither token is ever logged or kept: the ID-JAG is spent at once, the access token it
buys is stored like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import httpx

from ._assertion import Assertion
from ._discovery import Discovery, server_metadata
from ._errors import OAuthError
from ._identity import pick_auth_method
from ._model import ClientIdentity
from ._tokens import request_tokens

__all__ = ["ID_JAG", "TOKEN_EXCHANGE", "IdentityProvider", "id_jag", "identity_provider"]

TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"


@dataclass(frozen=True)
class IdentityProvider:
    """The enterprise IdP of an ``"grant": "enterprise"`` block (its ``idp``)."""

    client_id: str
    id_token: Assertion
    issuer: str | None = None
    token_endpoint: str | None = None
    client_secret: str | None = field(default=None, repr=False)


async def id_jag(
    http: httpx.AsyncClient,
    idp: IdentityProvider,
    discovery: Discovery,
    *,
    server: str,
    scope: str | None,
) -> str:
    """An ID-JAG for the authorization server and resource of ``discovery``.

    Raises:
        OAuthError: the ID token cannot be read, the IdP cannot be found, or it refused
            the exchange or answered something that is not an ID-JAG.
    """
    subject = idp.id_token.read(server)
    metadata: dict[str, object] = {}
    if idp.token_endpoint is not None:
        metadata["token_endpoint"] = idp.token_endpoint
    elif idp.issuer is not None:
        metadata = await server_metadata(http, idp.issuer, what="identity provider metadata")
        if not isinstance(metadata.get("token_endpoint"), str):
            raise OAuthError(f"{server}: identity provider {idp.issuer} names no token_endpoint")
    at_idp = Discovery(
        resource=discovery.resource,
        issuer=idp.issuer or str(metadata["token_endpoint"]),
        metadata=dict(metadata),
    )
    client = ClientIdentity(
        idp.client_id,
        idp.client_secret,
        pick_auth_method(at_idp, has_secret=idp.client_secret is not None),
    )
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "audience": discovery.issuer,
        "subject_token": subject,
        "subject_token_type": ID_TOKEN,
    } | ({"scope": scope} if scope else {})
    granted = await request_tokens(
        http, at_idp, client, form, requested_scope=scope, issued_token_type=ID_JAG
    )
    return granted.access_token


def identity_provider(
    block: Mapping[str, object], environ: Mapping[str, str], secret: str | None
) -> IdentityProvider:
    """The ``idp`` block (checked by the config) as an ``IdentityProvider``."""

    def text(key: str) -> str | None:
        value = block.get(key)
        return value if isinstance(value, str) and value else None

    return IdentityProvider(
        client_id=text("clientId") or "",
        id_token=Assertion.from_block(
            block, environ, key="idToken", what="your ID token from the identity provider"
        ),
        issuer=text("issuer"),
        token_endpoint=text("tokenEndpoint"),
        client_secret=secret,
    )
