"""Defect 3 of issue 18: beyond loopback there was no authentication, and the warning
could be lost.

- ``daemon.auth=token``: every TCP route but /health needs ``Authorization: Bearer`` with
  one of the named tokens (401 and ``WWW-Authenticate`` otherwise); an official SDK
  client carrying the token works; the unix socket needs none; no token value appears
  in daemon.log, /v1/events or ``mcpx settings --json``.
- Beyond loopback, ``daemon.auth=none`` is refused before anything is bound, and the
  CLI's auto-start shows the daemon's message. The tests never bind beyond loopback:
  192.0.2.1 (TEST-NET-1, RFC 5737) is on no interface here, so even a daemon that
  did not refuse could not listen on it; 0.0.0.0 is only given to the decision function.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpx.daemon._daemon_auth import MIN_TOKEN, exposure
from support.daemon import Daemon, running_daemon
from support.peers import peer_python

SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
ALICE, BOB = secrets.token_urlsafe(32), secrets.token_hex(24)
# Tokens come from the environment, named in the config: NAME=VAR reads $VAR.
ENV = {"SECTEST_TOKEN_ALICE": ALICE, "SECTEST_TOKEN_BOB": BOB}
SETTINGS = {
    "daemon.auth": "token",
    "daemon.tokens": ["alice=SECTEST_TOKEN_ALICE", "bob=SECTEST_TOKEN_BOB"],
    "log.level": "debug",  # the most the log ever says: still no token in it
    "transport.sseKeepAlive": "200ms",
}
ROUTES = ["/v1/servers", "/openapi.json", "/v1/events", "/mcp"]
TEST_NET = "192.0.2.1"
LIMIT = 60.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in ENV.items():
            mp.setenv(name, value)
        with running_daemon(tmp_path_factory.mktemp("auth"), SERVERS, SETTINGS) as d:
            yield d


@pytest.fixture
def tcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client


def _get(client: httpx.Client, path: str, headers: dict[str, str]) -> httpx.Response:
    with client.stream("GET", path, headers=headers) as r:
        if r.status_code != 200 or path != "/v1/events":
            r.read()
        return r


@pytest.mark.obligation("S-SEC-4")
@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        (None, 'Bearer realm="mcpx"'),
        ("Bearer " + "x" * 43, 'Bearer realm="mcpx", error="invalid_token"'),
        ("Bearer " + ALICE[:-1], 'Bearer realm="mcpx", error="invalid_token"'),
        ("Basic " + ALICE, 'Bearer realm="mcpx"'),
        ("Bearer", 'Bearer realm="mcpx"'),
    ],
    ids=["none", "unknown", "truncated", "basic", "empty"],
)
def test_no_or_a_wrong_token_is_401(
    tcp: httpx.Client, path: str, authorization: str | None, challenge: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    r = _get(tcp, path, headers)
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == challenge
    body = r.json()
    if path == "/mcp":
        assert body["error"]["code"] == -32600 and "id" not in body
    else:
        assert body["error"]["code"] in ("unauthorized", "invalid_token")
        assert "daemon.tokens" in body["error"]["message"]
    assert ALICE not in r.text


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("token", [ALICE, BOB], ids=["alice", "bob"])
def test_each_named_token_opens_every_route(tcp: httpx.Client, path: str, token: str) -> None:
    r = _get(tcp, path, {"Authorization": f"bearer {token}"})  # the scheme in any case
    assert r.status_code == (405 if path == "/mcp" else 200), r.text  # /mcp: GET needs a session


def test_a_token_does_not_open_a_foreign_host(tcp: httpx.Client) -> None:
    r = tcp.get("/v1/servers", headers={"Authorization": f"Bearer {ALICE}", "Host": "evil.example"})
    assert r.status_code == 421


def test_health_is_open_without_a_token(tcp: httpx.Client) -> None:
    r = tcp.get("/health")
    assert (r.status_code, r.json()) == (200, {"ok": True})


def test_the_unix_socket_needs_no_token(daemon: Daemon) -> None:
    with daemon.http() as api:
        assert api.get("/v1/servers").status_code == 200
    done = daemon.cli("servers", "--json")
    assert done.returncode == 0, done.stderr
    assert [s["name"] for s in json.loads(done.stdout)["servers"]] == ["demo"]


_SDK_CLIENT = """
import asyncio, os, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main():
    token = os.environ.get("SDK_TOKEN")
    headers = {"Authorization": "Bearer " + token} if token else None
    async with streamablehttp_client(sys.argv[1], headers=headers) as (read, write, _):
        async with ClientSession(read, write) as s:
            await s.initialize()
            args = {"server": "demo", "tool": "echo", "arguments": {"text": "with a token"}}
            r = await s.call_tool("mcpx_call", args)
            print("".join(x.text for x in r.content if x.type == "text"))

asyncio.run(asyncio.wait_for(main(), 30))
"""


def _sdk(daemon: Daemon, token: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SDK_TOKEN"}
    if token is not None:
        env["SDK_TOKEN"] = token
    return subprocess.run(
        [
            str(peer_python("1.23.3")),
            "-c",
            textwrap.dedent(_SDK_CLIENT),
            daemon.info["url"] + "/mcp",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_an_official_sdk_client_with_the_token_works(daemon: Daemon) -> None:
    done = _sdk(daemon, ALICE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "with a token" in done.stdout


@pytest.mark.parametrize("token", [None, "y" * MIN_TOKEN], ids=["none", "wrong"])
def test_an_official_sdk_client_without_it_is_refused(daemon: Daemon, token: str | None) -> None:
    done = _sdk(daemon, token)
    assert done.returncode != 0
    assert "with a token" not in done.stdout
    assert "401" in done.stderr, done.stderr[-3000:]


def _replayed(daemon: Daemon) -> str:
    """Every retained event, as the /v1/events stream sends them (until its first
    keep-alive, which follows the replay)."""
    lines: list[str] = []
    deadline = time.monotonic() + LIMIT
    with daemon.http() as api, api.stream("GET", "/v1/events", params={"since": 0}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            assert time.monotonic() < deadline
            if line == ": keepalive":
                break
            lines.append(line)
    return "\n".join(lines)


def test_no_token_is_ever_shown(daemon: Daemon, tcp: httpx.Client) -> None:
    # Used, rightly and wrongly: a call (it starts the demo upstream and makes events).
    bearer = {"Authorization": f"Bearer {ALICE}"}
    echo = {"server": "demo", "tool": "echo", "arguments": {"text": "shown?"}}
    assert tcp.post("/v1/call", json=echo, headers=bearer).status_code == 200
    wrong = ALICE[:-2] + "zz"
    assert tcp.get("/v1/servers", headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
    log = (daemon.state / "daemon.log").read_text()
    assert "authenticated as token alice" in log  # the name is what is logged
    events = _replayed(daemon)
    assert '"kind"' in events or "event:" in events
    env = {**daemon.env(), **ENV}
    shown = subprocess.run(
        [sys.executable, "-m", "mcpx", "settings", "--json"],
        cwd=daemon.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "alice=SECTEST_TOKEN_ALICE" in shown.stdout  # the names, and where they are read
    # The upstream servers the daemon started: their environment is inherited from it.
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    pids = [i["pid"] for s in servers for i in s["instances"] if i.get("pid")]
    assert pids, servers
    environs = "\n".join(Path(f"/proc/{pid}/environ").read_bytes().decode() for pid in pids)
    leaked = "SECTEST_TOKEN_ALICE" in environs  # a bool: a failure must not print them
    assert not leaked, "a token's variable in an upstream's environment"
    surfaces = {
        "daemon.log": log,
        "/v1/events": events,
        "settings": shown.stdout,
        "an upstream's environment": environs,
    }
    for secret in (ALICE, BOB, wrong):
        for where, text in surfaces.items():
            shown_there = secret in text
            assert not shown_there, f"a token in {where}"


# -- starting beyond loopback ---------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "auth", "insecure", "refused", "warned"),
    [
        ("127.0.0.1", "none", False, False, False),
        ("127.9.9.9", "none", False, False, False),
        ("::1", "none", False, False, False),
        ("localhost", "none", False, False, False),
        ("0.0.0.0", "none", False, True, False),
        ("::", "none", False, True, False),
        ("192.168.1.5", "none", False, True, False),
        ("my-laptop.local", "none", False, True, False),
        ("0.0.0.0", "token", False, False, False),
        ("0.0.0.0", "none", True, False, True),
        ("::", "none", True, False, True),
        ("127.0.0.1", "none", True, False, False),
    ],
)
def test_the_exposure_decision(
    address: str, auth: str, insecure: bool, refused: bool, warned: bool
) -> None:
    verdict = exposure(address, auth, insecure)
    assert (verdict.refusal is not None, verdict.warning is not None) == (refused, warned)
    if refused:
        assert verdict.refusal is not None
        for hint in ("daemon.auth=token", "daemon.tokens", "--insecure-no-auth", address):
            assert hint in verdict.refusal
    if warned:
        assert verdict.warning is not None and address in verdict.warning


def _cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": SERVERS}))
    return {**env, "MCPX_STATE_DIR": str(tmp / "state"), "MCPX_CONFIG": str(config), **extra}


def _mcpx(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpx", *args],
        cwd=tmp,
        env=_cli_env(tmp, **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.obligation("S-SEC-3")
def test_auto_start_beyond_loopback_fails_with_the_daemons_message(tmp_path: Path) -> None:
    done = _mcpx(tmp_path, "servers", MCPX_DAEMON_ADDRESS=TEST_NET)
    assert done.returncode != 0
    assert f"refusing to listen on {TEST_NET}" in done.stderr, done.stderr
    assert "daemon.auth=token" in done.stderr and "--insecure-no-auth" in done.stderr
    log = (tmp_path / "state" / "daemon.log").read_text()
    assert any(
        json.loads(line)["level"] == "error" and "refusing to listen" in json.loads(line)["msg"]
        for line in log.splitlines()
    )
    assert not (tmp_path / "state" / "daemon.json").exists()  # it never served


def test_insecure_no_auth_is_warned_at_start(tmp_path: Path) -> None:
    # The warning comes before binding, which fails here (192.0.2.1 is no address of ours).
    done = _mcpx(tmp_path, "daemon", "--address", TEST_NET, "--insecure-no-auth", "true")
    assert done.returncode != 0
    assert "warning: listening on 192.0.2.1" in done.stderr, done.stderr
    assert "cannot listen on 192.0.2.1" in done.stderr
    log = (tmp_path / "state" / "daemon.log").read_text()
    assert any(
        json.loads(line)["level"] == "warning" and "no authentication" in json.loads(line)["msg"]
        for line in log.splitlines()
    )


@pytest.mark.parametrize(
    ("tokens", "env", "says"),
    [
        ("", {}, "daemon.tokens names none"),
        ("ci", {}, "$MCPX_TOKEN_CI is unset or empty"),
        ("ci", {"MCPX_TOKEN_CI": "short-secret"}, "holds only 12 characters"),
        ("ci=SECTEST_NOT_SET", {}, "$SECTEST_NOT_SET is unset"),
        ("ci=" + ALICE, {}, "'ci=…' is not NAME or NAME=ENV_VAR"),
        ("ci,ci", {"MCPX_TOKEN_CI": ALICE}, "is not NAME or NAME=ENV_VAR"),
    ],
    ids=["none", "unset", "short", "unset-var", "inline", "twice"],
)
def test_token_mode_refuses_to_start_without_good_tokens(
    tmp_path: Path, tokens: str, env: dict[str, str], says: str
) -> None:
    extra = {"MCPX_DAEMON_AUTH": "token", "MCPX_DAEMON_TOKENS": tokens, **env}
    done = _mcpx(tmp_path, "daemon", "--address", "127.0.0.1", **extra)
    assert done.returncode != 0
    assert says in done.stderr, done.stderr
    assert ALICE not in done.stderr and "short-secret" not in done.stderr
    assert not (tmp_path / "state" / "daemon.json").exists()
