"""Discovery's GETs carry ``MCP-Protocol-Version`` (2025-03-26 authorization: "MCP
clients SHOULD include the header MCP-Protocol-Version during Server Metadata
Discovery"), on a 2025-03-26 server without resource metadata and on a current one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpx import spec
from mcpx.oauth import discover
from oauth.fake import fake_oauth
from support.asgi import loopback_socket, running_app

pytestmark = pytest.mark.anyio


@dataclass
class Legacy:
    """A 2025-03-26 server: no protected resource metadata, RFC 8414 metadata at the
    origin's root; every GET's path and headers recorded."""

    url: str = ""
    gets: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    async def any_get(self, request: Request) -> Response:
        self.gets.append((request.url.path, {k.lower(): v for k, v in request.headers.items()}))
        if request.url.path == "/.well-known/oauth-authorization-server":
            return JSONResponse(
                {
                    "issuer": self.url,
                    "authorization_endpoint": self.url + "/oauth/authorize",
                    "token_endpoint": self.url + "/oauth/token",
                    "response_types_supported": ["code"],
                }
            )
        return JSONResponse({"error": "not_found"}, status_code=404)


@contextmanager
def legacy_server() -> Iterator[Legacy]:
    sock = loopback_socket()
    legacy = Legacy(url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    app = Starlette(routes=[Route("/{rest:path}", legacy.any_get, methods=["GET"])])
    with running_app(app, sock):
        yield legacy


@pytest.mark.obligation("C-AUTH-5")
async def test_legacy_metadata_discovery_sends_the_protocol_version() -> None:
    with legacy_server() as legacy:
        async with httpx.AsyncClient(timeout=30) as http:
            found = await discover(http, legacy.url + "/v1/mcp")
    # The server's path discarded: its authorization server is the origin.
    assert found.issuer == legacy.url
    assert found.endpoint("token_endpoint", "/token") == legacy.url + "/oauth/token"
    paths = [path for path, _ in legacy.gets]
    assert paths[-1] == "/.well-known/oauth-authorization-server"
    assert len(paths) >= 2  # the resource metadata tried first, then the server metadata
    for path, headers in legacy.gets:
        assert headers.get("mcp-protocol-version") in spec.REVISIONS, (path, headers)


async def test_current_discovery_sends_the_protocol_version_too() -> None:
    with fake_oauth() as fake:
        async with httpx.AsyncClient(timeout=30) as http:
            await discover(http, fake.rs_url + "/mcp")
        gets = [s for s in fake.seen if s.method == "GET" and "well-known" in s.path]
    assert [s.path for s in gets] == [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ]
    for seen in gets:
        assert seen.headers.get("mcp-protocol-version") in spec.REVISIONS, seen
