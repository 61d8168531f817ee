"""Enterprise-managed authorization (SEP-990): the user's ID token exchanged at the
enterprise IdP for an ID-JAG (RFC 8693), the ID-JAG spent at the MCP server's
authorization server as a JWT-bearer assertion (RFC 7523). Against an IdP, an
authorization server and a resource on 127.0.0.1 that sign and check real JWTs (ES256,
PyJWT): the IdP takes only its own ID token, the authorization server only an ID-JAG the
IdP signed for it, this resource and this client."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpx.config import ConfigError, ServerConfig, parse_config_text
from mcpx.oauth import MemoryStore, OAuthClient, OAuthError, store_key
from support.oauth_apps import metadata, protected, serving

pytestmark = pytest.mark.anyio

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
CLIENT_ID, CLIENT_SECRET = "mcpx-at-as", "as-secret-" + secrets.token_urlsafe(8)
IDP_CLIENT = "mcpx-at-idp"


@dataclass
class Enterprise:
    """The IdP, the MCP server's authorization server and the resource."""

    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    idp_url: str = ""
    as_url: str = ""
    rs_url: str = ""
    # What the IdP answers a good exchange with, as its issued_token_type.
    issues: str = ID_JAG
    exchanges: list[dict[str, str]] = field(default_factory=list)
    grants: list[dict[str, str]] = field(default_factory=list)
    basic: list[tuple[str, str]] = field(default_factory=list)
    valid: set[str] = field(default_factory=set)

    def id_token(self, subject: str = "alice@example.com") -> str:
        """An ID token the IdP issued to mcpx's client there."""
        now = int(time.time())
        claims = {
            "iss": self.idp_url,
            "sub": subject,
            "aud": IDP_CLIENT,
            "iat": now,
            "exp": now + 600,
        }
        return jwt.encode(claims, self.key, algorithm="ES256")

    def _signed(self, token: str, audience: str, typ: str | None = None) -> dict[str, Any]:
        public = self.key.public_key()
        if typ is not None and jwt.get_unverified_header(token).get("typ") != typ:
            raise jwt.InvalidTokenError(f"typ is not {typ}")
        return dict(
            jwt.decode(token, public, algorithms=["ES256"], audience=audience, issuer=self.idp_url)
        )

    async def idp_metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.idp_url,
                "token_endpoint": f"{self.idp_url}/token",
                "grant_types_supported": [EXCHANGE],
                "token_endpoint_auth_methods_supported": ["none"],
            }
        )

    async def idp_token(self, request: Request) -> Response:
        form = dict(parse_qsl((await request.body()).decode()))
        self.exchanges.append(form)
        wanted = {
            "grant_type": EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token_type": ID_TOKEN,
            "client_id": IDP_CLIENT,
        }
        if any(form.get(k) != v for k, v in wanted.items()) or not form.get("resource"):
            return JSONResponse({"error": "invalid_request"}, 400)
        try:
            user = self._signed(form.get("subject_token", ""), IDP_CLIENT)
        except jwt.InvalidTokenError:
            return JSONResponse({"error": "invalid_grant"}, 400)
        now = int(time.time())
        claims = {
            "iss": self.idp_url,
            "sub": user["sub"],
            "aud": form["audience"],
            "resource": form["resource"],
            "client_id": CLIENT_ID,
            "jti": secrets.token_hex(8),
            "iat": now,
            "exp": now + 300,
        }
        grant = jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        return JSONResponse(
            {
                "access_token": grant,
                "issued_token_type": self.issues,
                "token_type": "N_A",
                "expires_in": 300,
            }
        )

    async def as_metadata(self, request: Request) -> Response:
        return metadata(
            request,
            self.as_url,
            self.rs_url,
            grant_types_supported=[JWT_BEARER],
            token_endpoint_auth_methods_supported=["client_secret_basic"],
        )

    async def as_token(self, request: Request) -> Response:
        form = dict(parse_qsl((await request.body()).decode()))
        self.grants.append(form)
        scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
        user, _, password = (
            base64.b64decode(encoded).decode().partition(":") if scheme == "Basic" else ("", "", "")
        )
        self.basic.append((unquote(user), unquote(password)))
        if (unquote(user), unquote(password)) != (CLIENT_ID, CLIENT_SECRET):
            return JSONResponse({"error": "invalid_client"}, 401)
        try:
            grant = self._signed(form.get("assertion", ""), self.as_url, typ="oauth-id-jag+jwt")
        except jwt.InvalidTokenError:
            return JSONResponse({"error": "invalid_grant"}, 400)
        if (
            form.get("grant_type") != JWT_BEARER
            or grant.get("resource") != f"{self.rs_url}/mcp"
            or grant.get("client_id") != CLIENT_ID
        ):
            return JSONResponse({"error": "invalid_grant"}, 400)
        access = "at-" + secrets.token_urlsafe(8)
        self.valid.add(access)
        return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 600})

    async def mcp(self, request: Request) -> Response:
        return protected(request, self.rs_url, self.valid)


@contextmanager
def enterprise(**knobs: Any) -> Iterator[Enterprise]:
    world = Enterprise(**knobs)
    idp = Starlette(
        routes=[
            Route("/.well-known/openid-configuration", world.idp_metadata),
            Route("/.well-known/openid-configuration/{tenant}", world.idp_metadata),
            Route("/token", world.idp_token, methods=["POST"]),
        ]
    )
    authz = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", world.as_metadata),
            Route("/token", world.as_token, methods=["POST"]),
        ]
    )
    resource = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", world.as_metadata),
            Route("/mcp", world.mcp, methods=["POST"]),
        ]
    )
    with serving(idp, authz, resource) as (world.idp_url, world.as_url, world.rs_url):
        yield world


def _client(world: Enterprise, env: dict[str, str], **idp: object) -> OAuthClient:
    auth = {
        "type": "oauth",
        "grant": "enterprise",
        "clientId": CLIENT_ID,
        "clientSecretEnv": "AS_SECRET",
        "idp": {"clientId": IDP_CLIENT} | idp,
    }
    server = ServerConfig(name="srv", transport="http", url=f"{world.rs_url}/mcp", auth=auth)
    return OAuthClient(server, store=MemoryStore(), env={"AS_SECRET": CLIENT_SECRET} | env)


async def _call(client: OAuthClient, world: Enterprise) -> httpx.Response:
    async with httpx.AsyncClient(auth=client.auth()) as http:
        return await http.post(
            f"{world.rs_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )


@pytest.mark.parametrize("where", ["issuer", "tokenEndpoint"])
async def test_the_id_token_buys_an_id_jag_and_the_id_jag_the_access_token(where: str) -> None:
    with enterprise() as world:
        id_token = world.id_token()
        found = (
            {"issuer": world.idp_url}
            if where == "issuer"
            else {"tokenEndpoint": f"{world.idp_url}/token"}
        )
        client = _client(world, {"ID_TOKEN": id_token}, idTokenEnv="ID_TOKEN", **found)
        response = await _call(client, world)
        assert response.status_code == 200
        (exchange,) = world.exchanges
        assert exchange["subject_token"] == id_token
        assert exchange["audience"] == world.as_url  # the authorization server's issuer
        assert exchange["resource"] == f"{world.rs_url}/mcp"
        (grant,) = world.grants
        assert grant["grant_type"] == JWT_BEARER
        assert jwt.get_unverified_header(grant["assertion"])["typ"] == "oauth-id-jag+jwt"
        assert world.basic == [(CLIENT_ID, CLIENT_SECRET)]  # client_secret_basic, as offered
        shown = repr(client.idp) + repr(client.settings)
        assert id_token not in shown and CLIENT_SECRET not in shown


async def test_the_id_token_file_is_read_at_each_exchange(tmp_path: Path) -> None:
    token_file = tmp_path / "id_token"
    with enterprise() as world:
        client = _client(world, {}, issuer=world.idp_url, idTokenFile=str(token_file))
        first, second = world.id_token("alice@example.com"), world.id_token("alice@example.com")
        token_file.write_text(first + "\n")  # written after the client was made: read late
        assert (await _call(client, world)).status_code == 200
        world.valid.clear()  # the access token is revoked: the next request starts over
        token_file.write_text(second)  # the sign-in tool renewed it
        assert (await _call(client, world)).status_code == 200
        assert [e["subject_token"] for e in world.exchanges] == [first, second]
        assert len(world.grants) == 2


async def test_an_id_token_the_idp_refuses_is_an_error_at_once_and_the_server_never_asked() -> None:
    with enterprise() as world:
        client = _client(
            world, {"ID_TOKEN": "not-a-jwt"}, issuer=world.idp_url, idTokenEnv="ID_TOKEN"
        )
        with pytest.raises(
            OAuthError, match=r"token-exchange\) to .*/token refused: HTTP 400, invalid_grant"
        ):
            await _call(client, world)
        assert len(world.exchanges) == 1  # never retried
        assert world.grants == []


async def test_an_answer_that_is_not_an_id_jag_is_refused() -> None:
    with enterprise(issues="urn:ietf:params:oauth:token-type:access_token") as world:
        client = _client(
            world, {"ID_TOKEN": world.id_token()}, issuer=world.idp_url, idTokenEnv="ID_TOKEN"
        )
        with pytest.raises(
            OAuthError,
            match="issued 'urn:ietf:params:oauth:token-type:access_token', not " + ID_JAG,
        ):
            await _call(client, world)
        assert world.grants == []


async def test_a_missing_id_token_says_where_it_was_looked_for(tmp_path: Path) -> None:
    with enterprise() as world:
        unset = _client(world, {}, issuer=world.idp_url, idTokenEnv="ID_TOKEN")
        with pytest.raises(
            OAuthError,
            match=r"idTokenEnv names ID_TOKEN, which is not set .*ID token from the identity",
        ):
            await _call(unset, world)
        gone = _client(world, {}, issuer=world.idp_url, idTokenFile=str(tmp_path / "absent"))
        with pytest.raises(OAuthError, match=r"idTokenFile .*absent cannot be read"):
            await _call(gone, world)
        assert world.exchanges == []


async def test_an_idp_whose_metadata_names_another_issuer_is_refused() -> None:
    with enterprise() as world:
        client = _client(
            world,
            {"ID_TOKEN": world.id_token()},
            issuer=f"{world.idp_url}/other",
            idTokenEnv="ID_TOKEN",
        )
        with pytest.raises(OAuthError, match=r"identity provider metadata .* names issuer"):
            await _call(client, world)
        assert world.exchanges == []


def test_another_identity_provider_is_another_sign_in() -> None:
    """Tokens are kept under a key of the server and its auth block's non-secret keys,
    the IdP's among them: tokens bought through one IdP are not used for another."""

    def key(**idp: str) -> str:
        auth = {"type": "oauth", "grant": "enterprise", "clientId": "m", "idp": idp}
        return store_key(ServerConfig(name="a", transport="http", url="https://x/mcp", auth=auth))

    base = {"issuer": "https://sso.example", "clientId": "c", "idTokenEnv": "T"}
    assert key(**base) == key(**base | {"idTokenEnv": "OTHER", "clientSecret": "s3cret"})
    assert key(**base) != key(**base | {"issuer": "https://other-sso.example"})
    assert key(**base) != key(**base | {"clientId": "c2"})


def _config(auth: dict[str, object]) -> str:
    return json.dumps({"mcpServers": {"a": {"url": "https://x.example/mcp", "auth": auth}}})


def test_the_config_takes_the_enterprise_grant() -> None:
    idp = {"issuer": "https://idp.example", "clientId": "c", "idTokenFile": "~/.idp/id_token"}
    auth: dict[str, object] = {"type": "oauth", "grant": "enterprise", "clientId": "m", "idp": idp}
    server = parse_config_text(_config(auth), Path("mcp.json")).servers["a"]
    assert server.auth is not None and server.auth["idp"] == idp


_IDP = {"issuer": "https://idp.example", "clientId": "c", "idTokenEnv": "T"}


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"grant": "enterprise", "idp": _IDP}, "auth.grant the enterprise grant needs clientId"),
        (
            {"grant": "enterprise", "clientId": "m"},
            'auth.grant the enterprise grant needs an "idp" object',
        ),
        ({"clientId": "m", "idp": _IDP}, 'auth.idp needs "grant": "enterprise"'),
        (
            {"grant": "enterprise", "clientId": "m", "idp": {"clientId": "c"}},
            "auth.idp needs issuer or tokenEndpoint, idTokenEnv or idTokenFile",
        ),
        (
            {"grant": "enterprise", "clientId": "m", "idp": _IDP | {"idTokenFile": "/t"}},
            "auth.idp.idTokenFile give idTokenEnv or idTokenFile, not both",
        ),
        (
            {"grant": "enterprise", "clientId": "m", "idp": _IDP | {"tenant": "x"}},
            "auth.idp.tenant is not an idp key",
        ),
        (
            {"grant": "enterprise", "clientId": "m", "idp": _IDP | {"issuer": "idp.example"}},
            "auth.idp.issuer must be an http(s) URL",
        ),
    ],
)
def test_the_config_refuses_an_enterprise_block_that_cannot_work(
    auth: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_text(_config({"type": "oauth"} | auth), Path("mcp.json"))
    assert message in str(caught.value)
