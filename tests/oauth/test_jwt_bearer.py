"""The JWT-bearer grant with a workload identity token (RFC 7523 §2.1, SEP-1933): the
config keys, and the grant against a real authorization server on 127.0.0.1 that
accepts one assertion and refuses the rest, never tried twice."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpx.config import ConfigError, ServerConfig, parse_config_text
from mcpx.oauth import MemoryStore, OAuthClient, OAuthError
from support.oauth_apps import metadata, protected, serving

pytestmark = pytest.mark.anyio

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@dataclass
class WorkloadServers:
    """An AS granting for ``accepted`` (the workload JWT), else ``refusal``; a resource
    taking its tokens as Bearer."""

    accepted: str = ""
    refusal: str = "invalid_grant"
    as_url: str = ""
    rs_url: str = ""
    forms: list[dict[str, str]] = field(default_factory=list)
    valid: set[str] = field(default_factory=set)

    async def metadata(self, request: Request) -> Response:
        return metadata(
            request,
            self.as_url,
            self.rs_url,
            grant_types_supported=[GRANT],
            token_endpoint_auth_methods_supported=["none"],
        )

    async def token(self, request: Request) -> Response:
        form = dict(parse_qsl((await request.body()).decode()))
        self.forms.append(form)
        if form.get("grant_type") != GRANT or form.get("assertion") != self.accepted:
            return JSONResponse({"error": self.refusal}, 400)
        access = "at-" + secrets.token_urlsafe(8)
        self.valid.add(access)
        return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 60})

    async def mcp(self, request: Request) -> Response:
        return protected(request, self.rs_url, self.valid)


@contextmanager
def workload_servers(**knobs: Any) -> Iterator[WorkloadServers]:
    servers = WorkloadServers(**knobs)
    authz = Starlette(
        routes=[
            Route("/.well-known/{rest:path}", servers.metadata),
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


def _client(servers: WorkloadServers, env: dict[str, str], **block: object) -> OAuthClient:
    auth = {"type": "oauth", "grant": "jwt_bearer"} | block
    server = ServerConfig(name="srv", transport="http", url=f"{servers.rs_url}/mcp", auth=auth)
    return OAuthClient(server, store=MemoryStore(), env=env)


async def _call(client: OAuthClient, url: str) -> httpx.Response:
    async with httpx.AsyncClient(auth=client.auth()) as http:
        return await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})


async def test_the_workload_jwt_from_the_environment_is_the_assertion() -> None:
    workload = "eyJ.workload." + secrets.token_urlsafe(8)
    with workload_servers(accepted=workload) as servers:
        client = _client(
            servers, {"WORKLOAD_JWT": workload}, clientId="wl-1", assertionEnv="WORKLOAD_JWT"
        )
        response = await _call(client, f"{servers.rs_url}/mcp")
        assert response.status_code == 200
        (form,) = servers.forms
        assert form["grant_type"] == GRANT
        assert form["assertion"] == workload
        assert form["client_id"] == "wl-1"
        assert form["resource"] == f"{servers.rs_url}/mcp"
        assert workload not in repr(client.assertion)


async def test_the_workload_jwt_file_is_read_at_the_grant(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    with workload_servers(accepted="jwt-2") as servers:
        client = _client(servers, {}, assertionFile=str(token_file))
        token_file.write_text("jwt-2\n")  # written after the client was made: read late
        assert (await _call(client, f"{servers.rs_url}/mcp")).status_code == 200
        assert servers.forms[0]["assertion"] == "jwt-2"
        assert "client_id" not in servers.forms[0]  # no clientId: no client authentication


@pytest.mark.parametrize("refusal", ["invalid_grant", "invalid_scope", "unauthorized_client"])
async def test_a_refused_grant_is_an_error_at_once_never_retried(refusal: str) -> None:
    with workload_servers(accepted="the-right-one", refusal=refusal) as servers:
        client = _client(servers, {"WORKLOAD_JWT": "expired"}, assertionEnv="WORKLOAD_JWT")
        with pytest.raises(OAuthError, match=f"jwt-bearer.*refused: HTTP 400, {refusal}"):
            await _call(client, f"{servers.rs_url}/mcp")
        assert [f["grant_type"] for f in servers.forms] == [GRANT]  # once, no other grant


async def test_a_missing_workload_jwt_names_where_it_was_looked_for(tmp_path: Path) -> None:
    with workload_servers() as servers:
        unset = _client(servers, {}, assertionEnv="WORKLOAD_JWT")
        with pytest.raises(OAuthError, match="assertionEnv names WORKLOAD_JWT, which is not set"):
            await _call(unset, f"{servers.rs_url}/mcp")
        gone = _client(servers, {}, assertionFile=str(tmp_path / "absent"))
        with pytest.raises(OAuthError, match=r"assertionFile .*absent cannot be read"):
            await _call(gone, f"{servers.rs_url}/mcp")
        assert servers.forms == []


def _config(auth: dict[str, object]) -> str:
    return json.dumps({"mcpServers": {"a": {"url": "https://x.example/mcp", "auth": auth}}})


def test_the_config_takes_the_jwt_bearer_grant_with_one_assertion_source() -> None:
    auth: dict[str, object] = {
        "type": "oauth",
        "grant": "jwt_bearer",
        "assertionFile": "/var/run/token",
    }
    server = parse_config_text(_config(auth), Path("mcp.json")).servers["a"]
    assert server.auth is not None and server.auth["assertionFile"] == "/var/run/token"


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"grant": "jwt_bearer"}, "auth.grant the jwt_bearer grant needs assertionEnv"),
        (
            {"grant": "jwt_bearer", "assertionEnv": "A", "assertionFile": "/t"},
            "auth.assertionFile give assertionEnv or assertionFile, not both",
        ),
        ({"assertionEnv": "A"}, 'auth.assertionEnv needs "grant": "jwt_bearer"'),
        ({"grant": "jwt_bearer", "assertionFile": ""}, "auth.assertionFile must be a non-empty"),
        ({"grant": "password"}, "auth.grant must be one of authorization_code, client_cred"),
    ],
)
def test_the_config_refuses_a_jwt_bearer_block_that_cannot_work(
    auth: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_text(_config({"type": "oauth"} | auth), Path("mcp.json"))
    assert message in str(caught.value)
