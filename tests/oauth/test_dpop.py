"""DPoP (RFC 9449, SEP-1932): the proofs mcpx signs, and the flow against a real
authorization server and resource (two 127.0.0.1 origins) that check them and ask for
nonces."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from mcpx.config import ServerConfig
from mcpx.oauth import MemoryStore, OAuthClient, OAuthError, SqliteStore, TokenStore
from mcpx.oauth._dpop import DPoPProver, access_token_hash
from support.oauth_apps import serving

pytestmark = pytest.mark.anyio


def _thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 for an EC key: SHA-256 of the required members, sorted, no spaces."""
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _verify(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proof's header and claims, its signature checked with the key it carries."""
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"])
    claims = jwt.decode(proof, key, algorithms=[header["alg"]])
    return header, claims


@dataclass
class DPoPServers:
    """An AS that grants DPoP-bound tokens and a resource that wants them, each checking
    every proof; ``as_nonces`` / ``rs_nonces``: a nonce to demand, or a fresh one each time
    ("always"), or none (None)."""

    as_url: str = ""
    rs_url: str = ""
    offer_dpop: bool = True
    token_type: str = "DPoP"
    as_nonces: str | None = None
    rs_nonces: str | None = None
    token_proofs: list[dict[str, Any]] = field(default_factory=list)
    resource_seen: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    bound: dict[str, str] = field(default_factory=dict)  # access token -> key thumbprint
    refreshes: dict[str, str] = field(default_factory=dict)  # refresh token -> thumbprint
    codes: set[str] = field(default_factory=set)

    def _nonce(self, wanted: str | None) -> str | None:
        return f"n-{secrets.token_hex(4)}" if wanted == "always" else wanted

    async def metadata(self, request: Request) -> Response:
        if "oauth-protected-resource" in request.url.path:
            return JSONResponse(
                {"resource": f"{self.rs_url}/mcp", "authorization_servers": [self.as_url]}
            )
        body: dict[str, Any] = {
            "issuer": self.as_url,
            "authorization_endpoint": f"{self.as_url}/authorize",
            "token_endpoint": f"{self.as_url}/token",
            "registration_endpoint": f"{self.as_url}/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }
        if self.offer_dpop:
            body["dpop_signing_alg_values_supported"] = ["ES256"]
        return JSONResponse(body)

    async def register(self, request: Request) -> Response:
        return JSONResponse({"client_id": "c1", "token_endpoint_auth_method": "none"}, 201)

    async def authorize(self, request: Request) -> Response:
        code = secrets.token_urlsafe(8)
        self.codes.add(code)
        query = dict(request.query_params)
        params = urlencode({"code": code, "state": query["state"]})
        return RedirectResponse(f"{query['redirect_uri']}?{params}", 302)

    async def token(self, request: Request) -> Response:
        form = dict(parse_qsl((await request.body()).decode()))
        proof = request.headers.get("dpop")
        header, claims = _verify(proof) if proof else ({}, {})
        self.token_proofs.append(header | {"claims": claims} if proof else {})
        if self.offer_dpop and proof is None:
            return JSONResponse({"error": "invalid_dpop_proof"}, 400)
        nonce = self._nonce(self.as_nonces)
        if proof and nonce is not None and claims.get("nonce") != nonce:
            return JSONResponse({"error": "use_dpop_nonce"}, 400, {"DPoP-Nonce": nonce})
        key = _thumbprint(header["jwk"]) if proof else None
        if form.get("grant_type") == "refresh_token":
            # A public client's refresh token is bound to its key (§5): only it may use it.
            if self.refreshes.get(form.get("refresh_token", "")) != key or key is None:
                return JSONResponse({"error": "invalid_grant"}, 400)
        elif form.get("code") not in self.codes:
            return JSONResponse({"error": "invalid_grant"}, 400)
        access, refresh = "at-" + secrets.token_urlsafe(8), "rt-" + secrets.token_urlsafe(8)
        if key is not None and self.token_type == "DPoP":
            self.bound[access] = self.refreshes[refresh] = key
        body = {
            "access_token": access,
            "token_type": self.token_type,
            "expires_in": 3600,
            "refresh_token": refresh,
        }
        return JSONResponse(body)

    async def mcp(self, request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        proof = request.headers.get("dpop")
        claims = _verify(proof)[1] if proof else None
        self.resource_seen.append((scheme, claims))
        metadata = f'resource_metadata="{self.rs_url}/.well-known/oauth-protected-resource/mcp"'
        if token not in self.bound and not (self.token_type == "Bearer" and token):
            return JSONResponse(
                {"error": "invalid_token"}, 401, {"WWW-Authenticate": "DPoP " + metadata}
            )
        if token in self.bound:
            assert proof is not None and claims is not None and scheme == "DPoP"
            header = jwt.get_unverified_header(proof)
            assert _thumbprint(header["jwk"]) == self.bound[token]
            assert claims["ath"] == access_token_hash(token)
            assert (claims["htm"], claims["htu"]) == ("POST", f"{self.rs_url}/mcp")
            nonce = self._nonce(self.rs_nonces)
            if nonce is not None and claims.get("nonce") != nonce:
                challenge = f'DPoP error="use_dpop_nonce", {metadata}'
                headers = {"WWW-Authenticate": challenge, "DPoP-Nonce": nonce}
                return JSONResponse({"error": "use_dpop_nonce"}, 401, headers)
        return JSONResponse({"ok": True})


@contextmanager
def dpop_servers(**knobs: Any) -> Iterator[DPoPServers]:
    servers = DPoPServers(**knobs)
    authz = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", servers.metadata),
            Route("/register", servers.register, methods=["POST"]),
            Route("/authorize", servers.authorize),
            Route("/token", servers.token, methods=["POST"]),
        ]
    )
    resource = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", servers.metadata),
            Route("/mcp", servers.mcp, methods=["POST"]),
        ]
    )
    with serving(authz, resource) as (servers.as_url, servers.rs_url):
        yield servers


class Browser:
    async def authorize(self, authorization_url: str, redirect_uri: str) -> str:
        async with httpx.AsyncClient(follow_redirects=False) as http:
            response = await http.get(authorization_url)
        assert response.status_code == 302
        return str(response.headers["location"])


def _client(
    servers: DPoPServers, store: TokenStore | None = None, person: bool = True
) -> OAuthClient:
    server = ServerConfig(
        name="srv", transport="http", url=f"{servers.rs_url}/mcp", auth={"type": "oauth"}
    )
    authorizer = Browser() if person else None
    return OAuthClient(server, store=store or MemoryStore(), authorizer=authorizer)


async def _calls(client: OAuthClient, url: str, n: int = 1) -> list[httpx.Response]:
    async with httpx.AsyncClient(auth=client.auth()) as http:
        return [
            await http.post(f"{url}?session=1", json={"jsonrpc": "2.0", "id": i, "method": "ping"})
            for i in range(n)
        ]


# -- the proof itself ---------------------------------------------------------------------


def test_a_proof_carries_the_public_key_and_the_request() -> None:
    prover = DPoPProver()
    before = int(time.time())
    header, claims = _verify(prover.proof("post", "https://rs.example/mcp?x=1#frag"))
    assert (header["typ"], header["alg"], header["jwk"]["kty"], header["jwk"]["crv"]) == (
        "dpop+jwt",
        "ES256",
        "EC",
        "P-256",
    )
    assert "d" not in header["jwk"]  # the public key only
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://rs.example/mcp"  # no query, no fragment (§4.2)
    assert before <= claims["iat"] <= int(time.time())
    assert "ath" not in claims and "nonce" not in claims
    assert "kty=EC" in repr(prover) and header["jwk"]["x"] not in repr(prover)


def test_each_proof_is_fresh_and_a_resource_proof_hashes_the_token() -> None:
    prover = DPoPProver()
    token = "at-" + secrets.token_urlsafe(16)
    proofs = [_verify(prover.proof("POST", "https://rs.example/mcp", access_token=token))[1]]
    proofs.append(_verify(prover.proof("POST", "https://rs.example/mcp", access_token=token))[1])
    assert proofs[0]["jti"] != proofs[1]["jti"]
    digest = hashlib.sha256(token.encode()).digest()
    assert proofs[0]["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_a_prover_takes_over_a_kept_p256_key_and_no_other() -> None:
    kept, prover = DPoPProver(), DPoPProver()
    prover.adopt(kept.pem)
    assert prover.public_jwk == kept.public_jwk
    assert _verify(prover.proof("POST", "https://rs.example/mcp"))[0]["jwk"] == kept.public_jwk
    other = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="P-256"):
        prover.adopt(other.decode())
    assert prover.public_jwk == kept.public_jwk


def test_a_nonce_is_used_only_at_the_origin_that_gave_it() -> None:
    prover = DPoPProver()
    given = httpx.Response(
        400, headers={"DPoP-Nonce": "n-1"}, request=httpx.Request("POST", "https://as.example/t")
    )
    assert prover.remember(given) is True
    assert prover.remember(given) is False  # not new
    assert _verify(prover.proof("POST", "https://as.example/token"))[1]["nonce"] == "n-1"
    assert "nonce" not in _verify(prover.proof("POST", "https://rs.example/mcp"))[1]


# -- the flow -------------------------------------------------------------------------------


async def test_a_dpop_server_gets_proofs_and_the_dpop_scheme_with_its_nonces() -> None:
    with dpop_servers(as_nonces="as-n", rs_nonces="rs-n") as servers:
        client = _client(servers)
        responses = await _calls(client, f"{servers.rs_url}/mcp", 2)
        assert [r.status_code for r in responses] == [200, 200]
        # The token request: a proof, refused for want of the nonce, then sent again with it.
        nonces = [p["claims"].get("nonce") for p in servers.token_proofs]
        assert nonces == [None, "as-n"]
        assert all(p["claims"]["htu"] == f"{servers.as_url}/token" for p in servers.token_proofs)
        assert all("ath" not in p["claims"] for p in servers.token_proofs)
        # The resource: no token, then DPoP with a proof (no nonce, refused; with it, served),
        # and the next request carries the nonce from the start.
        schemes = [scheme for scheme, _ in servers.resource_seen]
        assert schemes == ["", "DPoP", "DPoP", "DPoP"]
        proofs = [claims for _, claims in servers.resource_seen[1:]]
        assert [p.get("nonce") if p else None for p in proofs] == [None, "rs-n", "rs-n"]
        assert len({p["jti"] for p in proofs if p}) == 3


async def test_an_authorization_server_nonce_is_tried_once_then_the_error_stands() -> None:
    with dpop_servers(as_nonces="always") as servers:
        with pytest.raises(OAuthError, match="use_dpop_nonce"):
            await _calls(_client(servers), f"{servers.rs_url}/mcp")
        assert len(servers.token_proofs) == 2


async def test_a_resource_nonce_is_tried_once_then_the_answer_stands() -> None:
    with dpop_servers(rs_nonces="always") as servers:
        (response,) = await _calls(_client(servers), f"{servers.rs_url}/mcp")
        assert response.status_code == 401
        assert "use_dpop_nonce" in response.headers["WWW-Authenticate"]
        # No token, the first proof, the one with the nonce; then it stops (no new login).
        assert [s for s, _ in servers.resource_seen] == ["", "DPoP", "DPoP"]
        assert len(servers.token_proofs) == 1


async def test_without_dpop_in_the_metadata_no_proof_is_sent() -> None:
    with dpop_servers(offer_dpop=False, token_type="Bearer") as servers:
        (response,) = await _calls(_client(servers), f"{servers.rs_url}/mcp")
        assert response.status_code == 200
        assert servers.token_proofs == [{}]
        assert servers.resource_seen[-1] == ("Bearer", None)


async def test_a_bearer_token_from_a_dpop_server_is_sent_as_bearer() -> None:
    with dpop_servers(token_type="Bearer") as servers:
        (response,) = await _calls(_client(servers), f"{servers.rs_url}/mcp")
        assert response.status_code == 200
        assert servers.token_proofs[0]["typ"] == "dpop+jwt"
        assert servers.resource_seen[-1] == ("Bearer", None)


async def test_a_restarted_daemon_proves_with_the_key_its_tokens_are_bound_to(
    tmp_path: Path,
) -> None:
    """The key the tokens were granted with is kept with them in oauth.db: the next daemon
    (or another client of the same sign-in) uses the bound token, and refreshes it, with
    that key; nobody has to sign in again."""
    with dpop_servers() as servers:
        before = SqliteStore(tmp_path / "oauth.db")
        (first,) = await _calls(_client(servers, before), f"{servers.rs_url}/mcp")
        assert first.status_code == 200
        before.close()
        (granted,) = servers.bound.values()

        after = SqliteStore(tmp_path / "oauth.db")
        # No person this time: another login would be LoginNeeded.
        client = _client(servers, after, person=False)
        (again,) = await _calls(client, f"{servers.rs_url}/mcp")
        assert again.status_code == 200
        assert len(servers.token_proofs) == 1  # the stored token, no new grant
        scheme, claims = servers.resource_seen[-1]
        assert scheme == "DPoP" and claims is not None

        servers.bound.clear()  # the resource forgets it: the refresh token must serve
        (refreshed,) = await _calls(client, f"{servers.rs_url}/mcp")
        assert refreshed.status_code == 200
        assert len(servers.token_proofs) == 2 and len(servers.codes) == 1  # no new login
        assert list(servers.bound.values()) == [granted]  # bound to the same key still
        stored = after.tokens(client.key, "")
        assert stored is not None and stored.dpop_key is not None
        assert stored.dpop_key not in repr(stored)
        after.close()


async def test_another_client_of_the_same_sign_in_proves_with_its_key() -> None:
    """The daemon signs in with one client (its login) and connects with another: the
    second uses the bound token with the key the first was granted it with."""
    with dpop_servers() as servers:
        store = MemoryStore()
        (signed_in,) = await _calls(_client(servers, store), f"{servers.rs_url}/mcp")
        (connected,) = await _calls(_client(servers, store, person=False), f"{servers.rs_url}/mcp")
        assert (signed_in.status_code, connected.status_code) == (200, 200)
        assert len(servers.token_proofs) == 1


# -- what the call's telemetry is told ------------------------------------------------------


async def test_each_request_the_flow_sends_again_is_a_retry_of_its_method() -> None:
    """A 401 answered by a login and a 401 asking for a DPoP nonce each send the request
    again: the call's watch (its CLIENT span's ``mcpx.retry`` events) is told both, with
    the method the request carries; a request sent once tells nothing."""
    from mcpx.client import REQUEST_WATCH
    from mcpx.client._open import _resent
    from mcpx.ops._telemetry_views import Called

    class Watch:
        def __init__(self) -> None:
            self.retries: list[tuple[str, str]] = []

        def sent(self, method: str, request_id: object) -> None:
            return None

        def retried(self, method: str, reason: str) -> None:
            self.retries.append((method, reason))

    with dpop_servers(rs_nonces="rs-n") as servers:
        client = _client(servers)
        watch = Watch()
        token = REQUEST_WATCH.set(watch)
        try:
            async with httpx.AsyncClient(auth=client.auth(_resent)) as http:
                frames = [
                    {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}}
                    for i in (1, 2)
                ]
                first = await http.post(f"{servers.rs_url}/mcp", json=frames[0])
                told = list(watch.retries)
                second = await http.post(f"{servers.rs_url}/mcp", json=frames[1])
        finally:
            REQUEST_WATCH.reset(token)
    assert (first.status_code, second.status_code) == (200, 200)
    assert told == [("tools/call", "oauth_token"), ("tools/call", "dpop_nonce")]
    assert watch.retries == told  # the nonce was kept: the second went once

    called = Called({"mcp.method.name": "tools/call"})
    called.retried("", "dpop_nonce")  # a GET stream carries no method
    [(name, attrs, _at)] = called.events
    assert (name, attrs) == ("mcpx.retry", {"mcpx.retry.reason": "dpop_nonce"})
