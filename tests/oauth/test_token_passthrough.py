"""No token passthrough: a daemon with ``daemon.auth=oauth`` never hands the token a host
sent it to an upstream. The upstream is the OAuth fixture's protected ``/mcp`` behind a
recording relay, configured with its own bearer (minted for it, another subject); a host
calls it through ``/mcp`` with a token for mcpx, both as ``mcpx_call`` and as a
pass-through tool. Every request the upstream got carried the upstream's credential only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from support.asgi import loopback_socket, running_app
from support.daemon import Daemon, legacy_session, running_daemon
from support.oauth_server import oauth_server

SCOPE = "mcp:tools"
ACCEPT = {"Accept": "application/json, text/event-stream"}
_HOP = {"host", "content-length", "transfer-encoding", "connection"}


class Relay:
    """Forwards ``/mcp`` to ``target`` as it is, keeping every request's headers."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.headers: list[dict[str, str]] = []

    async def mcp(self, request: Request) -> Response:
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        forward = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        client = httpx.AsyncClient(timeout=60)
        sent = client.build_request(
            request.method, self.target, headers=forward, content=await request.body()
        )
        answer = await client.send(sent, stream=True)

        async def close() -> None:
            await answer.aclose()
            await client.aclose()

        async def body() -> AsyncIterator[bytes]:
            async for chunk in answer.aiter_raw():
                yield chunk

        back = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
        return StreamingResponse(
            body(), status_code=answer.status_code, headers=back, background=BackgroundTask(close)
        )


def _mint(issuer: str, **claims: Any) -> str:
    return str(httpx.post(issuer + "/admin/mint", json=claims, timeout=30).json()["access_token"])


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server() as base:
        yield base


@pytest.fixture(scope="module")
def relay(issuer: str) -> Iterator[tuple[Relay, str]]:
    sock = loopback_socket()
    relay = Relay(issuer + "/mcp")
    app = Starlette(routes=[Route("/mcp", relay.mcp, methods=["GET", "POST", "DELETE"])])
    with running_app(app, sock):
        yield relay, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


@pytest.fixture(scope="module")
def upstream_token(issuer: str) -> str:
    return _mint(issuer, sub="upstream-robot", aud=issuer + "/mcp", scope=SCOPE)


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory,
    issuer: str,
    relay: tuple[Relay, str],
    upstream_token: str,
) -> Iterator[Daemon]:
    servers = {"up": {"url": relay[1], "auth": {"type": "bearer", "token": upstream_token}}}
    settings = {
        "daemon.auth": "oauth",
        "daemon.oauth.issuer": issuer,
        "daemon.oauth.scopes": [SCOPE],
        "mcp.passthrough": ["up"],
    }
    with running_daemon(tmp_path_factory.mktemp("passthrough"), servers, settings) as d:
        yield d


@pytest.mark.obligation("S-AUTH-13", "C-AUTH-30")
@pytest.mark.parametrize(
    "call",
    [
        {"name": "mcpx_call", "arguments": {"server": "up", "tool": "whoami", "arguments": {}}},
        {"name": "whoami", "arguments": {}},  # the pass-through tool
    ],
    ids=["gateway", "pass-through"],
)
def test_the_hosts_token_never_reaches_the_upstream(
    daemon: Daemon,
    issuer: str,
    relay: tuple[Relay, str],
    upstream_token: str,
    call: dict[str, Any],
) -> None:
    resource = str(daemon.info["url"]).rstrip("/") + "/mcp"
    host_token = _mint(issuer, sub="host-alice", aud=resource, scope=SCOPE)
    recorder = relay[0]
    before = len(recorder.headers)
    auth = {"Authorization": "Bearer " + host_token, **ACCEPT}
    with httpx.Client(base_url=daemon.info["url"], timeout=60, headers=auth) as mcp:
        headers = legacy_session(mcp, {})
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        r = mcp.post("/mcp", json=body, headers=headers)
    assert r.status_code == 200, r.text
    # The upstream answered as itself: its own subject, not the host's.
    assert "upstream-robot" in r.text, r.text
    assert "host-alice" not in r.text
    seen = recorder.headers[before:]
    assert seen, "the call never reached the upstream"
    for headers_seen in recorder.headers:
        assert headers_seen.get("authorization") == "Bearer " + upstream_token
        assert all(host_token not in value for value in headers_seen.values())
