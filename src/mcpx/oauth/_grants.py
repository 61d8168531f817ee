"""The grants that need nobody: client_credentials (SEP-1046), the JWT-bearer grant with
a workload identity token (RFC 7523 §2.1, SEP-1933), and enterprise-managed authorization
(SEP-990: an ID-JAG from the enterprise IdP, ``_enterprise``, as that JWT-bearer's
assertion).

The workload's JWT comes from the auth block's ``assertionEnv`` (a variable holding it)
or ``assertionFile`` (a file holding it, read at each grant: platforms rotate it), and
is sent as the ``assertion``; the user's ID token for the IdP likewise from ``idp``'s
``idTokenEnv`` or ``idTokenFile``. A refused grant is an ``OAuthError`` at once: it is
never tried again nor swapped for another grant (the token stays refused until the
config or the token read changes).
"""

from __future__ import annotations

from typing import Final

import httpx

from ._assertion import Assertion
from ._discovery import Discovery
from ._dpop import DPoPProver
from ._enterprise import IdentityProvider, id_jag
from ._errors import OAuthError
from ._identity import ClientSettings, configured_identity
from ._model import Tokens
from ._tokens import request_tokens

__all__ = ["JWT_BEARER", "MACHINE_GRANTS", "Assertion", "machine_tokens"]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# The auth block's "grant" values these serve.
MACHINE_GRANTS: Final = ("client_credentials", "jwt_bearer", "enterprise")


async def machine_tokens(
    http: httpx.AsyncClient,
    discovery: Discovery,
    *,
    server: str,
    grant: str,
    scope: str | None,
    settings: ClientSettings,
    assertion: Assertion,
    idp: IdentityProvider | None,
    dpop: DPoPProver | None,
) -> Tokens:
    """Tokens from the token endpoint by ``grant`` (one of ``MACHINE_GRANTS``).

    Raises:
        OAuthError: the config lacks what the grant needs, or the endpoint refused it.
    """
    client = configured_identity(settings, discovery, None)
    scoped = {"scope": scope} if scope else {}
    if grant == "jwt_bearer":
        form = {"grant_type": JWT_BEARER, "assertion": assertion.read(server)} | scoped
    elif grant == "enterprise":
        if idp is None:
            raise OAuthError(f'{server}: "grant": "enterprise" needs an "idp" block')
        granted = await id_jag(http, idp, discovery, server=server, scope=scope)
        form = {"grant_type": JWT_BEARER, "assertion": granted} | scoped
    elif client is None or client.auth_method == "none":
        raise OAuthError(
            f"{server}: the client_credentials grant needs clientId with "
            "clientSecretEnv or privateKeyEnv"
        )
    else:
        form = {"grant_type": "client_credentials"} | scoped
    return await request_tokens(
        http,
        discovery,
        client,
        form,
        requested_scope=scope,
        private_key=settings.private_key,
        dpop=dpop,
    )
