"""Secrets never leak (issue 18, defect 2): a known secret of every auth kind, and
credentials written into a server's ``url``, grepped for on every surface the daemon has.

One real daemon process serves a server of every auth kind (bearer, basic, header,
query, env; inline and named by an environment variable), a url with userinfo, a url
with ``?token=``, and config ``headers`` and ``env``. Each carries its own secret. The
remote ones point at a loopback port where nothing listens (127.0.0.1:9), at a real
loopback upstream that rejects every request with 401 and echoes what it was sent (the
request target and its credentials), or at the official SDK's server (Streamable HTTP
and HTTP+SSE), which answers, so that live instances and httpx's own request log are
seen too. Then every surface is read and searched (bytes, case-insensitive), in the raw,
percent-encoded and base64 (basic auth) forms of each secret: the /v1 routes, the
/v1/events replay, ``mcpx_servers`` and ``mcpx_call`` over a real /mcp session, the
CLI's output, and every file under the state dir (catalogue.json, daemon.log, tasks.db
and the rest) plus the frame trace.

Below it, in-process: what the client and transport layers show when httpx's own text
quotes a header value, and when httpx logs a request.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import httpx
import pytest

from mcpx.client import apply_auth
from mcpx.transport import (
    RequestFailed,
    TransportClosed,
    http_client,
    open_legacy_sse,
    open_streamable_http,
)
from support.daemon import Daemon, bad_entry, legacy_session, running_daemon
from support.peers import free_port, running_server, sdk_server_command

DEAD = "http://127.0.0.1:9"  # nothing listens there: every request is refused
DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}

# Each secret is distinct, so a leak names the kind it came from. Some hold characters
# that a URL percent-encodes, so the encoded form is searched for too.
SECRETS: dict[str, str] = {
    "bearer-inline": "S3cr3t-bearer-inline-a1",
    "bearer-env": "S3cr3t-bearer-env-b2",
    "basic-inline": "S3cr3t-basic-pass-c3",
    "basic-env": "S3cr3t-basic-env-d4",
    "header-inline": "S3cr3t-header-e5",
    "header-env": "S3cr3t-header-env-f6",
    "query-inline": "S3cr3t/query+g7=",
    "query-env": "S3cr3t-query-env-h8",
    "query-sse": "S3cr3t-query-sse-i9",
    "env-inline": "S3cr3t-env-j10",
    "env-env": "S3cr3t-env-env-k11",
    "url-userinfo": "S3cr3t@userinfo-l12",
    "url-user": "urluser-m13",
    "url-token": "S3cr3t-urltoken-n14",
    "url-sse": "S3cr3t-url-sse-o15",
    "cfg-header": "S3cr3t-cfgheader-p16",
    "cfg-env": "S3cr3t-cfgenv-q17",
    "env-crash": "S3cr3t-env-crash-r18",
    "live-urltoken": "S3cr3t-live-urltoken-s19",
    "live-query": "S3cr3t-live-query-t20",
    "live-header": "S3cr3t-live-header-u21",
    "live-user": "liveuser-v22",
    "live-userinfo": "S3cr3t-live-userinfo-w23",
    "live-sse-token": "S3cr3t-live-sse-x24",
    "live-sse-bearer": "S3cr3t-live-bearer-y25",
}
# Environment variables that hold secrets named by ``…Env`` keys.
ENV_SECRETS = {
    "H2_BEARER": SECRETS["bearer-env"],
    "H2_BASIC": SECRETS["basic-env"],
    "H2_HEADER": SECRETS["header-env"],
    "H2_QUERY": SECRETS["query-env"],
    "H2_ENV": SECRETS["env-env"],
}
BASIC_USER = "h2-user"
PROMPT_REF = {"type": "ref/prompt", "name": "p"}


@dataclass(frozen=True)
class Upstreams:
    """Base URLs: the rejecting echo, and the SDK's server over Streamable HTTP and SSE."""

    echo: str = "http://echo"
    live: str = "http://live"
    live_sse: str = "http://live-sse"


def _with_userinfo(base: str, user: str, password: str) -> str:
    return base.replace("://", f"://{user}:{quote(password, safe='')}@")


def _servers(up: Upstreams) -> dict[str, Any]:
    """A server of every auth kind, each with its own secret."""
    return {**_failing(up.echo), **_live(up)}


def _live(up: Upstreams) -> dict[str, Any]:
    """Servers that answer: their instances, and httpx's log of each request, are seen."""
    s = SECRETS
    return {
        "live-query": {
            "url": f"{up.live}/mcp?token={s['live-urltoken']}",
            "headers": {"X-Live-Key": s["live-header"]},
            "auth": {"type": "query", "name": "api_key", "value": s["live-query"]},
        },
        "live-userinfo": {
            "url": f"{_with_userinfo(up.live, s['live-user'], s['live-userinfo'])}/mcp"
        },
        "live-sse": {
            "type": "sse",
            "url": f"{up.live_sse}/sse?token={s['live-sse-token']}",
            "auth": {"type": "bearer", "token": s["live-sse-bearer"]},
        },
    }


def _failing(echo: str) -> dict[str, Any]:
    """Servers whose calls fail: refused (127.0.0.1:9), rejected (``echo``) or exited."""
    s = SECRETS
    return {
        "bearer-inline": {
            "url": f"{DEAD}/mcp",
            "auth": {"type": "bearer", "token": s["bearer-inline"]},
        },
        "bearer-env": {"url": f"{echo}/mcp", "auth": {"type": "bearer", "tokenEnv": "H2_BEARER"}},
        "basic-inline": {
            "url": f"{echo}/mcp",
            "auth": {"type": "basic", "username": BASIC_USER, "password": s["basic-inline"]},
        },
        "basic-env": {
            "url": f"{DEAD}/mcp",
            "auth": {"type": "basic", "username": BASIC_USER, "passwordEnv": "H2_BASIC"},
        },
        "header-inline": {
            "url": f"{echo}/mcp",
            "auth": {"type": "header", "name": "X-Api-Key", "value": s["header-inline"]},
        },
        "header-env": {
            "url": f"{DEAD}/mcp",
            "auth": {"type": "header", "name": "X-Api-Key", "valueEnv": "H2_HEADER"},
        },
        # The issue's own example: the upstream error was "POST http://127.0.0.1:9/mcp?api_key=S".
        "query-inline": {
            "url": f"{DEAD}/mcp",
            "auth": {"type": "query", "name": "api_key", "value": s["query-inline"]},
        },
        "query-env": {
            "url": f"{echo}/mcp?team=a",
            "auth": {"type": "query", "name": "api_key", "valueEnv": "H2_QUERY"},
        },
        "query-sse": {
            "type": "sse",
            "url": f"{echo}/sse",
            "auth": {"type": "query", "name": "api_key", "value": s["query-sse"]},
        },
        "url-userinfo": {"url": f"{_with_userinfo(echo, s['url-user'], s['url-userinfo'])}/mcp"},
        "url-token": {"url": f"{DEAD}/mcp?token={s['url-token']}"},
        "url-sse": {"type": "sse", "url": f"{DEAD}/sse?token={s['url-sse']}"},
        "cfg-header": {
            "url": f"{echo}/mcp",
            "headers": {"Authorization": f"Bearer {s['cfg-header']}", "X-Team": "a"},
        },
        "env-inline": {
            **DEMO,
            "env": {"H2_CONFIG_ENV": s["cfg-env"]},
            "auth": {"type": "env", "name": "H2_TOKEN", "value": s["env-inline"]},
        },
        "env-env": {**DEMO, "auth": {"type": "env", "name": "H2_TOKEN", "valueEnv": "H2_ENV"}},
        "env-crash": {
            **bad_entry("exit"),
            "auth": {"type": "env", "name": "H2_TOKEN", "value": s["env-crash"]},
        },
    }


def _forms(secret: str) -> set[bytes]:
    """Every spelling of ``secret`` a leak could take, lowercased."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]}
    return {f.lower().encode() for f in forms}


def _needles() -> dict[bytes, str]:
    """Each form of each secret, with the kind it belongs to."""
    out = {form: kind for kind, secret in SECRETS.items() for form in _forms(secret)}
    # Basic auth and url userinfo travel as base64("user:password").
    pairs = {
        "basic-inline": f"{BASIC_USER}:{SECRETS['basic-inline']}",
        "basic-env": f"{BASIC_USER}:{SECRETS['basic-env']}",
        "url-userinfo": f"{SECRETS['url-user']}:{SECRETS['url-userinfo']}",
        "live-userinfo": f"{SECRETS['live-user']}:{SECRETS['live-userinfo']}",
    }
    for kind, pair in pairs.items():
        out[base64.b64encode(pair.encode()).lower()] = f"{kind} (base64)"
    return out


NEEDLES = _needles()


def leaks(surface: str, data: bytes | str) -> list[str]:
    """Which secrets ``data`` holds, as ``surface: kind``."""
    raw = data.encode() if isinstance(data, str) else data
    hay = raw.lower()
    return sorted({f"{surface}: {kind}" for form, kind in NEEDLES.items() if form in hay})


class _Rejecting(BaseHTTPRequestHandler):
    """Refuses every request with 401 and echoes what it was sent, as a careless
    upstream's error page does: the request target and the credentials it carried."""

    def _reject(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        echoed = [f"{self.command} {self.path}"]
        for name in ("Authorization", "X-Api-Key"):
            if self.headers.get(name):
                echoed.append(f"{name}: {self.headers[name]}")
        body = ("invalid credentials: " + "; ".join(echoed)).encode()
        self.send_response(401)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _reject

    def log_message(self, format: str, *args: Any) -> None:
        return None  # the test reads what the daemon says, not this server's access log


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rejecting)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def upstreams(echo: str) -> Iterator[Upstreams]:
    live, live_sse = free_port(), free_port()
    with (
        running_server(sdk_server_command("2.3.0", "streamable-http", live), port=live),
        running_server(sdk_server_command("1.23.3", "sse", live_sse), port=live_sse),
    ):
        yield Upstreams(echo, f"http://127.0.0.1:{live}", f"http://127.0.0.1:{live_sse}")


@pytest.fixture(scope="module")
def secret_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in ENV_SECRETS.items():
            patch.setenv(name, value)
        yield


def _read_events(api: httpx.Client) -> bytes:
    """The /v1/events replay of everything retained, up to the first keep-alive."""
    body = b""
    with api.stream("GET", "/v1/events", params={"since": 0}) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line == ": keepalive":
                return body
            body += line.encode() + b"\n"
    raise AssertionError("the event stream ended before its replay did")


def _http_surfaces(d: Daemon) -> dict[str, bytes]:
    """What every /v1 route and /mcp show, after a call to each server failed."""
    seen: dict[str, bytes] = {}
    with d.http() as api:
        for route in ("tools", "prompts", "resources", "resources/templates"):
            r = api.get(f"/v1/{route}", params={"refresh": "true"})
            assert r.status_code == 200, r.text
            seen[f"GET /v1/{route}"] = r.content
        for name in sorted(_servers(Upstreams())):
            call = {"server": name, "tool": "echo", "arguments": {"text": "hi"}}
            seen[f"POST /v1/call {name}"] = api.post("/v1/call", json=call).content
            returning = {"Mcpx-Questions": "return"}
            seen[f"POST /v1/call {name} (task)"] = api.post(
                "/v1/call", json=call, headers=returning
            ).content
            seen[f"GET /v1/tools/{name}/echo"] = api.get(f"/v1/tools/{name}/echo").content
            for route, body in (
                ("prompts/get", {"name": "p"}),
                ("resources/read", {"uri": "file:///x"}),
                ("complete", {"ref": PROMPT_REF, "argument": {"name": "a", "value": "b"}}),
            ):
                answer = api.post(f"/v1/{route}", json={"server": name, **body})
                seen[f"POST /v1/{route} {name}"] = answer.content
        r = api.get("/v1/servers")
        assert r.status_code == 200, r.text
        seen["GET /v1/servers"] = r.content
        seen["GET /v1/events"] = _read_events(api)
        seen.update(_mcp_surfaces(api))
    return seen


def _mcp_surfaces(api: httpx.Client) -> dict[str, bytes]:
    """``mcpx_servers`` and ``mcpx_call`` as an AI agent sees them, over /mcp."""
    headers = legacy_session(api, {})
    seen: dict[str, bytes] = {}

    def tool(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        frame = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
        frame["params"] = {"name": name, "arguments": arguments}
        r = api.post("/mcp", json=frame, headers=headers)
        assert r.status_code == 200, r.text
        return r.content

    seen["/mcp mcpx_servers"] = tool(1, "mcpx_servers", {})
    for rid, name in enumerate(sorted(_servers(Upstreams())), start=2):
        arguments = {"server": name, "tool": "echo", "arguments": {"text": "hi"}}
        seen[f"/mcp mcpx_call {name}"] = tool(rid, "mcpx_call", arguments)
    api.delete("/mcp", headers=headers)
    return seen


def _cli_surfaces(d: Daemon) -> dict[str, bytes]:
    seen: dict[str, bytes] = {}
    commands = [
        ("servers",),
        ("servers", "--json"),
        ("tools",),
        ("settings", "--json"),
        ("settings",),
        ("call", "query-inline", "echo", "text=hi"),
        ("call", "url-userinfo", "echo", "text=hi"),
        ("call", "header-inline", "echo", "text=hi"),
        ("call", "url-sse", "echo", "text=hi"),
        ("call", "live-query", "echo", "text=hi"),
        ("call", "live-sse", "echo", "text=hi"),
    ]
    for argv in commands:
        done = d.cli(*argv)
        seen[f"mcpx {' '.join(argv)}"] = (done.stdout + done.stderr).encode()
    return seen


def _files(state: Path, *more: Path) -> dict[str, bytes]:
    """Every file under the state dir, and ``more`` (those that exist)."""
    paths = [*sorted(state.rglob("*")), *more]
    return {str(p): p.read_bytes() for p in paths if p.is_file() and not p.is_socket()}


def _called(seen: dict[str, bytes], name: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(seen[f"POST /v1/call {name}"])
    return answer


def test_no_secret_of_any_auth_kind_reaches_any_surface(
    tmp_path: Path, upstreams: Upstreams, secret_env: None
) -> None:
    echo = upstreams.echo
    with running_daemon(tmp_path, _servers(upstreams)) as d:
        seen = _http_surfaces(d)
        # The errors happened and the live calls worked: a surface that showed nothing
        # would prove nothing.
        servers = json.loads(seen["GET /v1/servers"])["servers"]
        assert {s["name"] for s in servers} == set(_servers(upstreams))
        failed = _called(seen, "query-inline")
        assert failed["error"]["code"] == "upstream_error", failed
        assert "POST http://127.0.0.1:9/mcp?api_key=" in failed["error"]["message"], failed
        assert "401" in _called(seen, "header-inline")["error"]["message"]
        for name in _live(upstreams):
            assert "hi" in json.dumps(_called(seen, name)["content"]), name
        seen.update(_cli_surfaces(d))
    # After the daemon stopped: everything it wrote, its shutdown included.
    seen.update(_files(d.state, d.frames_path))
    assert any(name.endswith("daemon.log") for name in seen)
    assert any(name.endswith("catalogue.json") for name in seen)
    assert any(name.endswith("tasks.db") for name in seen)
    found = [leak for surface, data in seen.items() for leak in leaks(surface, data)]
    assert not found, "secrets shown:\n" + "\n".join(found)
    # Redacted, not dropped: the names of the parameters and where the server is remain.
    assert "POST http://127.0.0.1:9/mcp?api_key=*** failed: ConnectError" in json.dumps(failed)
    shown = {s["name"]: s["url"] for s in servers}
    assert shown["query-env"] == f"{echo}/mcp?team=***"
    assert shown["url-userinfo"] == f"{echo.replace('://', '://***@')}/mcp"
    assert shown["url-token"] == f"{DEAD}/mcp?token=***"
    live = {s["name"]: s["instances"] for s in servers if s["name"] in _live(upstreams)}
    [query] = live["live-query"]
    assert query["url"] == f"{upstreams.live}/mcp?token=***&api_key=***"
    [userinfo] = live["live-userinfo"]
    assert userinfo["url"] == f"{upstreams.live.replace('://', '://***@')}/mcp"
    [sse] = live["live-sse"]
    assert sse["url"] == f"{upstreams.live_sse}/sse?token=***"


# -- in process: the client and transport layers --------------------------------------------

SECRET = "S3cr3t-unit-z26"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mute() -> Iterator[int]:
    """A loopback port that takes connections and never reads them (its backlog)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def test_auth_parts_show_names_only() -> None:
    parts = apply_auth("s", {"type": "bearer", "token": SECRET})
    assert SECRET in parts.headers["Authorization"]  # what is sent
    assert repr(parts) == "AuthParts(headers={'Authorization': '***'}, env={}, query={})"
    env = apply_auth("s", {"type": "env", "name": "TOKEN", "value": SECRET})
    query = apply_auth("s", {"type": "query", "name": "key", "value": SECRET})
    assert SECRET not in repr(env) + repr(query)


@pytest.mark.anyio
async def test_an_httpx_error_quoting_a_header_value_does_not_show_it(mute: int) -> None:
    # h11 refuses a header value holding a newline and quotes it (as repr writes it):
    # "Illegal header value b'x\\nS3cr3t…'". The transport's message must not.
    url = f"http://127.0.0.1:{mute}/mcp?key={SECRET}"
    headers = {"X-Api-Key": f"x\n{SECRET}"}
    frame = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with http_client() as client:
        async with open_streamable_http(url, headers=headers, client=client) as t:
            await t.send(frame)
            with anyio.fail_after(10):
                failed = await t.receive()
            shown = {t.url, t.describe()["url"]}
        assert isinstance(failed, RequestFailed)
        message = str(failed.error)
        assert "LocalProtocolError" in message and "Illegal header value" in message, message
        assert SECRET not in message, message
        assert shown == {f"http://127.0.0.1:{mute}/mcp?key=***"}
        # HTTP+SSE: the GET fails the same way, and so does opening the transport.
        with pytest.raises(TransportClosed) as caught:
            async with open_legacy_sse(url, headers=headers, client=client):
                pass
        assert "Illegal header value" in str(caught.value) and SECRET not in str(caught.value)


@pytest.mark.anyio
async def test_httpx_request_log_shows_urls_redacted(
    echo: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    async with http_client() as client:
        response = await client.get(f"{echo}/mcp?api_key={SECRET}")
    assert response.status_code == 401
    logged = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert logged == [f'HTTP Request: GET {echo}/mcp?api_key=*** "HTTP/1.0 401 Unauthorized"']
