"""Token revocation (RFC 7009), where the authorization server offers it."""

from __future__ import annotations

import logging

import httpx

from ._discovery import discover
from ._errors import OAuthError
from ._model import ClientIdentity, Tokens
from ._tokens import authenticated_form

__all__ = ["revoke"]

log = logging.getLogger("mcpx.oauth")


async def revoke(
    http: httpx.AsyncClient, server_url: str, tokens: Tokens, client: ClientIdentity | None
) -> bool:
    """Revoke ``tokens`` (refresh token first: that ends the grant). False when the server
    offers no revocation or refused; the caller drops the tokens either way."""
    try:
        discovery = await discover(http, server_url)
    except OAuthError as exc:
        log.info("no revocation: discovery failed (%s)", exc)
        return False
    endpoint = discovery.metadata.get("revocation_endpoint")
    if not isinstance(endpoint, str) or client is None:
        return False
    done = True
    for token, hint in (
        (tokens.refresh_token, "refresh_token"),
        (tokens.access_token, "access_token"),
    ):
        if not token:
            continue
        form, headers = authenticated_form(
            client, {"token": token, "token_type_hint": hint}, discovery, None
        )
        try:
            response = await http.post(endpoint, data=form, headers=headers)
        except httpx.HTTPError:
            return False
        done = done and response.status_code == 200
    return done
