"""The ``httpx.Auth`` the HTTP transports are given for an OAuth-protected server.

Only requests to the server's own origin are touched: they get the access token (as
``Bearer``, or as ``DPoP`` with a fresh proof when the token is DPoP-bound), and their
401 (and 403 ``insufficient_scope``) answers run the client's flow, then the request is
sent again, once per cause; a 401 asking for a DPoP nonce is answered by sending again
once with it. Requests to any other origin pass untouched, so a token never leaves the
resource's origin. Each request sent again is told to ``resent`` (the call's telemetry,
with why: ``dpop_nonce``, ``oauth_token`` after a 401, ``oauth_scope`` after a 403).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol

import httpx

from mcpx.transport import origin_of

from ._challenge import Challenge, parse_challenge
from ._dpop import DPoPProver, nonce_challenge

__all__ = ["OAuthAuth", "Resent"]


class Flow(Protocol):
    """What the httpx.Auth asks of the ``OAuthClient``."""

    url: str
    dpop: DPoPProver

    async def bearer(self) -> str | None: ...
    def reacts_to(self, challenge: Challenge) -> bool: ...
    async def answer_challenge(
        self, status: int, challenge: Challenge, sent: str | None
    ) -> bool: ...
    def dpop_for(self, token: str) -> DPoPProver | None: ...


# Told of a request about to be sent again, and why.
Resent = Callable[[httpx.Request, str], None]


def _untold(request: httpx.Request, reason: str) -> None:
    return None


class OAuthAuth(httpx.Auth):
    def __init__(self, client: Flow, resent: Resent | None = None) -> None:
        self._client = client
        self._origin = origin_of(httpx.URL(client.url))
        self._resent = resent or _untold

    def sync_auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
        raise RuntimeError("mcpx's OAuth needs an async httpx client")

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if origin_of(request.url) != self._origin:
            yield request  # another origin never sees the token
            return
        sent = await self._client.bearer()
        response = yield self._present(request, sent)
        nonce_sent = False
        causes: set[int] = set()
        while response.status_code in (401, 403):
            new_nonce = self._client.dpop.remember(response)
            if nonce_challenge(response):
                if nonce_sent or not new_nonce:
                    return  # RFC 9449 §9: sent again once, with a nonce it just handed over
                nonce_sent = True
                self._resent(request, "dpop_nonce")
                response = yield self._present(request, sent)
                continue
            if response.status_code in causes:
                return
            challenge = parse_challenge(response.headers.get("WWW-Authenticate"))
            if response.status_code == 403 and challenge.error != "insufficient_scope":
                return
            if not self._client.reacts_to(challenge):
                return
            causes.add(response.status_code)
            if not await self._client.answer_challenge(response.status_code, challenge, sent):
                return
            sent = await self._client.bearer()
            self._resent(request, "oauth_token" if response.status_code == 401 else "oauth_scope")
            response = yield self._present(request, sent)
        self._client.dpop.remember(response)

    def _present(self, request: httpx.Request, token: str | None) -> httpx.Request:
        if not token:
            return request
        prover = self._client.dpop_for(token)
        if prover is not None:
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = prover.proof(request.method, request.url, access_token=token)
        else:
            request.headers["Authorization"] = f"Bearer {token}"
            request.headers.pop("DPoP", None)
        return request
