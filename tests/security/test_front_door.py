"""Defect 1 of issue 18: cross-site requests and DNS rebinding on the TCP port.

A real daemon over real sockets. Every route on TCP (/v1, /mcp, /openapi.json,
/v1/events) passes the front door: Host must name the daemon (421), a present Origin
must be loopback or allowed (403), Sec-Fetch-Site: cross-site is 403, a body must be
application/json (415). /health stays open and says nothing; the unix socket is not
checked. The refused requests never reach a handler: the tool does not run.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon

SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
# The issue's own request: a page's "simple" POST, sent without asking.
CSRF_BODY = b'{"server":"demo","tool":"echo","arguments":{"text":"csrf"}}'
EVIL = "http://evil.example"
ROUTES = ["/v1/servers", "/openapi.json", "/v1/events", "/mcp"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("door"), SERVERS) as d:
        yield d


@pytest.fixture
def tcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client


def _port(daemon: Daemon) -> int:
    return int(daemon.info["url"].rsplit(":", 1)[1])


def _demo_calls(daemon: Daemon) -> int:
    """Requests the demo upstream has been sent (its instances' counters), over the socket."""
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    [demo] = [s for s in servers if s["name"] == "demo"]
    return sum(int(i["calls"]) for i in demo["instances"])


def _get(client: httpx.Client, path: str, headers: dict[str, str]) -> httpx.Response:
    """GET ``path``; an event stream is closed once its head is read."""
    with client.stream("GET", path, headers=headers) as r:
        if r.status_code == 200 and path == "/v1/events":
            return r
        r.read()
        return r


def _error_code(r: httpx.Response, path: str) -> str | int:
    body = r.json()
    if path == "/mcp":  # a JSON-RPC error, without an id
        assert "id" not in body
        return int(body["error"]["code"])
    assert set(body["error"]) == {"code", "message", "details"}
    return str(body["error"]["code"])


def test_the_issues_csrf_post_is_refused_and_the_tool_does_not_run(
    daemon: Daemon, tcp: httpx.Client
) -> None:
    before = _demo_calls(daemon)
    headers = {"Origin": EVIL, "Content-Type": "text/plain"}
    r = tcp.post("/v1/call", content=CSRF_BODY, headers=headers)
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "origin_not_allowed"
    # Without the Origin (a browser that leaves it out, a proxy that drops it) the
    # text/plain body is still refused: it never reaches /v1/call.
    r = tcp.post("/v1/call", content=CSRF_BODY, headers={"Content-Type": "text/plain"})
    assert r.status_code == 415, r.text
    assert r.json()["error"]["code"] == "unsupported_media_type"
    assert _demo_calls(daemon) == before  # the tool did not run
    # The allowed counterpart runs, and is counted: the counter does count calls.
    ok = tcp.post("/v1/call", content=CSRF_BODY, headers={"Content-Type": "application/json"})
    assert ok.status_code == 200, ok.text
    assert "csrf" in ok.text
    assert _demo_calls(daemon) > before


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1"])
def test_a_foreign_host_is_misdirected(tcp: httpx.Client, daemon: Daemon, host: str) -> None:
    r = tcp.get("/v1/servers", headers={"Host": host.format(port=_port(daemon))})
    assert r.status_code == 421, r.text
    error = r.json()["error"]
    assert error["code"] == "misdirected_request"
    assert "transport.allowedHosts" in error["message"]
    assert "servers" not in r.json()


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_loopback_hosts_with_the_port_pass(tcp: httpx.Client, daemon: Daemon, host: str) -> None:
    r = tcp.get("/v1/servers", headers={"Host": host.format(port=_port(daemon))})
    assert r.status_code == 200, r.text
    assert [s["name"] for s in r.json()["servers"]] == ["demo"]


def _raw(daemon: Daemon, request: bytes) -> bytes:
    """One raw HTTP/1.1 exchange over TCP: the status line (the client sends no Host)."""
    with socket.create_connection(("127.0.0.1", _port(daemon)), timeout=30) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return head.split(b"\r\n", 1)[0]


def test_a_missing_host_is_refused(daemon: Daemon) -> None:
    status = _raw(daemon, b"GET /v1/servers HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert status.split()[1] == b"421", status


@pytest.mark.parametrize("origin", [None, "http://localhost:3000", "http://127.0.0.1"])
def test_no_origin_or_a_loopback_origin_passes(tcp: httpx.Client, origin: str | None) -> None:
    headers = {"Origin": origin} if origin else {}
    assert tcp.get("/v1/servers", headers=headers).status_code == 200


@pytest.mark.parametrize("origin", [EVIL, "null", "http://localhost.evil.example"])
def test_a_foreign_origin_is_forbidden(tcp: httpx.Client, origin: str) -> None:
    r = tcp.get("/v1/servers", headers={"Origin": origin})
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "origin_not_allowed"


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain", None],
)
def test_a_body_that_is_not_json_is_unsupported(
    daemon: Daemon, tcp: httpx.Client, content_type: str | None
) -> None:
    before = _demo_calls(daemon)
    headers = {"Content-Type": content_type} if content_type else {}
    r = tcp.post("/v1/call", content=CSRF_BODY, headers=headers)
    assert r.status_code == 415, r.text
    assert "application/json" in r.json()["error"]["message"]
    assert _demo_calls(daemon) == before


def test_a_bodiless_post_must_still_say_json(tcp: httpx.Client) -> None:
    # fetch(url, {method: "POST", mode: "no-cors"}) sends no body and no Content-Type.
    r = tcp.post("/v1/questions/q1/decline")
    assert r.status_code == 415, r.text


def test_json_with_a_charset_passes(tcp: httpx.Client) -> None:
    headers = {"Content-Type": "Application/JSON; charset=utf-8"}
    r = tcp.post("/v1/call", content=CSRF_BODY, headers=headers)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("site", "status"),
    [("cross-site", 403), ("same-origin", 200), ("same-site", 200), ("none", 200)],
)
def test_sec_fetch_site(tcp: httpx.Client, site: str, status: int) -> None:
    r = tcp.get("/v1/servers", headers={"Sec-Fetch-Site": site})
    assert r.status_code == status, r.text
    if status == 403:
        assert r.json()["error"]["code"] == "cross_site"


@pytest.mark.obligation("S-SEC-1", "S-SEC-2")
@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Host": "evil.example"}, 421, "misdirected_request"),
        ({"Origin": EVIL}, 403, "origin_not_allowed"),
        ({"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"),
    ],
)
def test_every_route_has_the_same_door(
    tcp: httpx.Client, path: str, headers: dict[str, str], status: int, code: str
) -> None:
    r = _get(tcp, path, headers)
    assert r.status_code == status, r.text
    # /mcp answers in JSON-RPC (-32600), the rest in the /v1 shape.
    assert _error_code(r, path) == (-32600 if path == "/mcp" else code)


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_opens_to_its_own_address(tcp: httpx.Client, daemon: Daemon, path: str) -> None:
    headers = {"Host": f"localhost:{_port(daemon)}", "Origin": "http://localhost:5173"}
    r = _get(tcp, path, headers)
    # /mcp without a session: its own 405 (GET needs one), not the door's refusal.
    assert r.status_code == (405 if path == "/mcp" else 200), r.text


def test_mcp_post_refuses_text_plain_and_takes_json(tcp: httpx.Client) -> None:
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    r = tcp.post("/mcp", content=ping, headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert r.json()["error"]["code"] == -32600 and "id" not in r.json()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    assert tcp.post("/mcp", json=init).status_code == 200


def test_health_is_open_and_says_nothing(tcp: httpx.Client, daemon: Daemon) -> None:
    for headers in ({}, {"Host": "evil.example", "Origin": EVIL}):
        r = tcp.get("/health", headers=headers)
        assert r.status_code == 200
        assert r.json() == {"ok": True}
    with daemon.http() as api:
        assert api.get("/health").json() == {"ok": True}


def test_the_unix_socket_is_not_checked(daemon: Daemon) -> None:
    hostile = {"Host": "evil.example", "Origin": EVIL, "Sec-Fetch-Site": "cross-site"}
    with daemon.http() as api:
        r = api.get("/v1/servers", headers=hostile)
        assert r.status_code == 200, r.text
        call = api.post(
            "/v1/call", content=CSRF_BODY, headers={**hostile, "Content-Type": "text/plain"}
        )
        assert call.status_code == 200, call.text


def test_allowed_hosts_extend_the_names(tmp_path: Path) -> None:
    settings: dict[str, Any] = {"transport.allowedHosts": ["gateway.internal", "proxy.test:8080"]}
    with (
        running_daemon(tmp_path, SERVERS, settings) as d,
        httpx.Client(base_url=d.info["url"], timeout=60) as client,
    ):
        port = _port(d)
        for host, status in [
            (f"gateway.internal:{port}", 200),
            ("gateway.internal:1234", 200),  # a name alone: any port (a proxy's)
            ("proxy.test:8080", 200),
            (f"proxy.test:{port}", 421),  # host:port: that port only
            ("sub.gateway.internal", 421),
            (f"localhost:{port}", 200),
            ("evil.example", 421),
        ]:
            r = client.get("/v1/servers", headers={"Host": host})
            assert r.status_code == status, (host, r.text)
