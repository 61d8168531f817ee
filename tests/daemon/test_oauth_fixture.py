"""The OAuth fixture (``tests/fixtures/oauth_server.py``) does what tests of mcpx as an
OAuth client rely on: DCR, PKCE checked, refresh tokens rotated, revocation, and an MCP
endpoint that challenges with its metadata and accepts only tokens for itself."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from support.oauth_server import oauth_server

REDIRECT = "http://127.0.0.1:9/callback"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server("--token-ttl", "600") as base:
        yield base


def _code(as_: httpx.Client, client: dict[str, Any], verifier: str) -> str:
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    answer = as_.get(
        "/authorize",
        params={
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": str(as_.base_url).rstrip("/") + "/mcp",
        },
    )
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert query["state"] == ["s1"]
    return query["code"][0]


def _exchange(as_: httpx.Client, client: dict[str, Any], **form: str) -> httpx.Response:
    creds = {"client_id": client["client_id"], "client_secret": client.get("client_secret", "")}
    return as_.post("/token", data={**form, **creds})


def test_metadata_names_every_endpoint(issuer: str) -> None:
    meta = httpx.get(issuer + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert meta["issuer"] == issuer
    for name, path in [
        ("authorization_endpoint", "/authorize"),
        ("token_endpoint", "/token"),
        ("registration_endpoint", "/register"),
        ("revocation_endpoint", "/revoke"),
        ("jwks_uri", "/jwks"),
        ("introspection_endpoint", "/introspect"),
    ]:
        assert meta[name] == issuer + path
    assert meta["code_challenge_methods_supported"] == ["S256"]
    keys = httpx.get(meta["jwks_uri"], timeout=30).json()["keys"]
    assert [k["kid"] for k in keys] == ["fixture-key-1"]


def test_dcr_pkce_refresh_revoke_and_the_mcp_endpoint(issuer: str) -> None:
    with httpx.Client(base_url=issuer, timeout=30) as as_:
        client = as_.post("/register", json={"redirect_uris": [REDIRECT]}).json()
        verifier = secrets.token_urlsafe(48)
        code = _code(as_, client, verifier)
        wrong = _exchange(
            as_,
            client,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=secrets.token_urlsafe(48),
        )
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        code = _code(as_, client, verifier)
        first = _exchange(
            as_,
            client,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=verifier,
        ).json()
        refreshed = _exchange(
            as_, client, grant_type="refresh_token", refresh_token=first["refresh_token"]
        )
        assert refreshed.status_code == 200
        second = refreshed.json()
        assert second["access_token"] != first["access_token"]
        again = _exchange(
            as_, client, grant_type="refresh_token", refresh_token=first["refresh_token"]
        )
        assert again.status_code == 400  # rotated: the old refresh token is spent

        bare = as_.post("/mcp", json=INIT, headers=ACCEPT)
        assert bare.status_code == 401
        metadata = issuer + "/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{metadata}"' in bare.headers["www-authenticate"]
        prm = as_.get(metadata).json()
        assert prm["resource"] == issuer + "/mcp" and prm["authorization_servers"] == [issuer]

        bearer = {**ACCEPT, "Authorization": "Bearer " + second["access_token"]}
        assert as_.post("/mcp", json=INIT, headers=bearer).status_code == 200
        other = as_.post(
            "/admin/mint", json={"sub": "x", "aud": "https://elsewhere.example/mcp"}
        ).json()["access_token"]
        refused = as_.post(
            "/mcp", json=INIT, headers={**ACCEPT, "Authorization": "Bearer " + other}
        )
        assert refused.status_code == 401

        creds = {"client_id": client["client_id"], "client_secret": client.get("client_secret", "")}
        revoked = as_.post("/revoke", data={"token": second["access_token"], **creds})
        assert revoked.status_code == 200
        assert as_.post("/mcp", json=INIT, headers=bearer).status_code == 401
