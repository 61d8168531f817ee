"""``daemon.auth=oauth``: mcpx's TCP port as an OAuth protected resource, against a real
authorization server (``tests/fixtures/oauth_server.py``, on the official SDK's auth).

Tokens come from the server's real flow (dynamic registration, authorize, token with
PKCE and ``resource``) or, for the negative cases, from its ``/admin/mint`` (another
audience, expired, a key not in its JWKS, ``alg: none``, a missing scope…).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from mcpx.daemon._auth_verdicts import Denied, StartRefused
from mcpx.daemon._oauth_auth import OAuthAuth, OAuthSettings, oauth_settings
from support.daemon import Daemon, running_daemon, sdk_entry
from support.oauth_server import INTROSPECTION_SECRET_ENV, oauth_server
from support.peers import peer_python

SERVERS = {
    "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    # The SDK fixture's ``ask`` elicits: a /v1 call on it returns as a task on the question.
    "sdk": sdk_entry("1.23.3"),
}
SCOPE = "mcp:tools"
PRM = "/.well-known/oauth-protected-resource"
INTROSPECTION_SECRET = secrets.token_urlsafe(32)
SECRET_VAR = "OAUTH_TEST_INTROSPECTION_SECRET"
# Every token a test sends: none may appear in the daemon's log or a /v1 answer.
SENT: list[str] = []


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server(env={INTROSPECTION_SECRET_ENV: INTROSPECTION_SECRET}) as base:
        yield base


def _settings(issuer: str, **more: Any) -> dict[str, Any]:
    return {
        "daemon.auth": "oauth",
        "daemon.oauth.issuer": issuer,
        "daemon.oauth.scopes": [SCOPE],
        "log.level": "debug",  # the most the log ever says: still no token in it
        **more,
    }


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, issuer: str) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("oauth"), SERVERS, _settings(issuer)) as d:
        yield d


@pytest.fixture
def tcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        yield client


def _resource(daemon: Daemon) -> str:
    # daemon.oauth.resource unset: http://ADDRESS:PORT/mcp as the port is reached.
    return str(daemon.info["url"]).rstrip("/") + "/mcp"


def _mint(issuer: str, **claims: Any) -> str:
    token = str(httpx.post(issuer + "/admin/mint", json=claims, timeout=30).json()["access_token"])
    SENT.append(token)
    return token


def _login(issuer: str, resource: str) -> str:
    """An access token from the real flow: DCR, authorize, token with PKCE + resource."""
    redirect = "http://127.0.0.1:9/callback"
    with httpx.Client(base_url=issuer, timeout=30) as as_:
        client = as_.post(
            "/register",
            json={"redirect_uris": [redirect], "client_name": "t", "scope": SCOPE},
        ).json()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(8)
        answer = as_.get(
            "/authorize",
            params={
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": redirect,
                "code_challenge": challenge.rstrip(b"=").decode(),
                "code_challenge_method": "S256",
                "state": state,
                "scope": SCOPE,
                "resource": resource,
            },
        )
        assert answer.status_code == 302, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert query["state"] == [state]
        tokens = as_.post(
            "/token",
            data={
                "grant_type": "authorization_code",
                "code": query["code"][0],
                "redirect_uri": redirect,
                "code_verifier": verifier,
                "client_id": client["client_id"],
                "client_secret": client.get("client_secret", ""),
                "resource": resource,
            },
        )
        assert tokens.status_code == 200, tokens.text
        pair: dict[str, str] = tokens.json()
        SENT.extend([pair["access_token"], pair["refresh_token"]])
        return str(pair["access_token"])


def _challenge(r: httpx.Response) -> str:
    return r.headers.get("www-authenticate", "")


@pytest.mark.obligation("S-AUTH-7", "S-AUTH-9")
@pytest.mark.parametrize("path", [PRM, PRM + "/mcp"])
def test_the_protected_resource_metadata_is_served_without_a_token(
    tcp: httpx.Client, daemon: Daemon, issuer: str, path: str
) -> None:
    r = tcp.get(path)
    assert r.status_code == 200
    assert r.json() == {
        "resource": _resource(daemon),
        "authorization_servers": [issuer],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "mcpx",
    }


def test_health_stays_open(tcp: httpx.Client) -> None:
    assert (tcp.get("/health").status_code, tcp.get("/health").json()) == (200, {"ok": True})


@pytest.mark.obligation("S-AUTH-2", "S-AUTH-8", "S-AUTH-9", "S-AUTH-10", "S-SEC-4")
@pytest.mark.parametrize("path", ["/mcp", "/v1/servers", "/openapi.json"])
def test_no_token_is_a_401_naming_the_metadata_and_scope(
    tcp: httpx.Client, daemon: Daemon, path: str
) -> None:
    r = tcp.post(path, json={}) if path == "/mcp" else tcp.get(path)
    assert r.status_code == 401
    metadata = str(daemon.info["url"]).rstrip("/") + PRM + "/mcp"
    assert _challenge(r) == f'Bearer resource_metadata="{metadata}", scope="{SCOPE}"'
    # The guard's own error shape: JSON-RPC on /mcp, the /v1 error elsewhere.
    body = r.json()
    message = body["error"]["message"]
    assert "OAuth access token" in message


def _bad_tokens(issuer: str, resource: str) -> dict[str, tuple[str, str]]:
    """Each bad token, and what the refusal must say of it."""
    good = {"sub": "mallory", "aud": resource, "scope": SCOPE}
    return {
        "another audience": (_mint(issuer, **{**good, "aud": issuer + "/mcp"}), "another audience"),
        "expired": (_mint(issuer, **good, expires_in=-120), "expired"),
        "not yet valid": (_mint(issuer, **good, nbf_in=600), "not valid yet"),
        "wrong signature": (_mint(issuer, **good, wrong_key=True), "signature"),
        "alg none": (_mint(issuer, **good, alg="none"), "'none'"),
        "alg HS256": (_mint(issuer, **good, alg="HS256"), "'HS256'"),
        "another issuer": (_mint(issuer, **good, iss="https://evil.example"), "not issued by"),
        "unknown kid": (_mint(issuer, **good, kid="nobody"), "no key"),
        "not a JWT": ("x" * 40, "not a JWT"),
    }


@pytest.mark.obligation("S-AUTH-2", "S-AUTH-11", "S-AUTH-12", "S-AUTH-14")
@pytest.mark.parametrize("path", ["/mcp", "/v1/servers"])
def test_a_bad_token_is_a_401_invalid_token(
    tcp: httpx.Client, daemon: Daemon, issuer: str, path: str
) -> None:
    metadata = str(daemon.info["url"]).rstrip("/") + PRM + "/mcp"
    for case, (token, why) in _bad_tokens(issuer, _resource(daemon)).items():
        headers = {"Authorization": "Bearer " + token}
        r = (
            tcp.post(path, json={}, headers=headers)
            if path == "/mcp"
            else tcp.get(path, headers=headers)
        )
        assert r.status_code == 401, case
        assert _challenge(r) == (
            f'Bearer resource_metadata="{metadata}", scope="{SCOPE}", error="invalid_token"'
        ), case
        assert why in r.text, (case, r.text)
        assert token not in r.text and token not in str(r.headers), case


@pytest.mark.obligation("S-AUTH-14", "S-AUTH-15", "S-AUTH-16")
def test_a_token_short_of_the_scope_is_a_403_insufficient_scope(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    token = _mint(issuer, sub="reader", aud=_resource(daemon), scope="mcp:read")
    for r in (
        tcp.get("/v1/servers", headers={"Authorization": "Bearer " + token}),
        tcp.post("/mcp", json={}, headers={"Authorization": "Bearer " + token}),
    ):
        assert r.status_code == 403
        metadata = str(daemon.info["url"]).rstrip("/") + PRM + "/mcp"
        assert _challenge(r) == (
            f'Bearer resource_metadata="{metadata}", scope="{SCOPE}", error="insufficient_scope"'
        )
        assert SCOPE in r.text


@pytest.mark.obligation("S-AUTH-17", "S-AUTH-21")
def test_a_broader_scope_and_an_upper_case_audience_are_accepted(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    shouted = _resource(daemon).replace("http://127.0.0.1", "HTTP://127.0.0.1")
    for token in (
        _mint(issuer, sub="parent", aud=_resource(daemon), scope="mcp"),
        _mint(issuer, sub="loud", aud=[shouted + "/", "https://other.example"], scope=SCOPE),
        _mint(issuer, sub="listed", aud=_resource(daemon), scp=["x", SCOPE]),
    ):
        r = tcp.get("/v1/servers", headers={"Authorization": "Bearer " + token})
        assert r.status_code == 200, r.text


def test_unknown_key_ids_do_not_make_a_fetch_each(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    def fetches() -> int:
        return (daemon.state / "daemon.log").read_text(encoding="utf-8").count("signing keys of")

    good = _mint(issuer, sub="k", aud=_resource(daemon), scope=SCOPE)
    assert tcp.get("/v1/servers", headers={"Authorization": "Bearer " + good}).status_code == 200
    before = fetches()
    assert before >= 1
    for n in range(20):
        token = _mint(issuer, sub="k", aud=_resource(daemon), scope=SCOPE, kid=f"made-up-{n}")
        r = tcp.get("/v1/servers", headers={"Authorization": "Bearer " + token})
        assert r.status_code == 401 and "no key" in r.text
    # At most one more fetch (if the last is older than REFETCH_AFTER), never one each.
    assert fetches() - before <= 1


@pytest.mark.obligation("S-AUTH-18")
def test_offline_access_is_never_advertised() -> None:
    config = OAuthSettings(
        issuer="https://auth.example",
        resource="https://mcpx.example/mcp",
        jwks_uri=None,
        introspection_url=None,
        client_id=None,
        secret_var=None,
        scopes=("mcp:tools", "offline_access"),
        algorithms=("RS256",),
    )
    auth = OAuthAuth(config, None)
    document = auth.metadata("http://127.0.0.1:1/mcp")
    assert document is not None and document["scopes_supported"] == ["mcp:tools"]
    assert document["resource"] == "https://mcpx.example/mcp"
    denied = anyio.run(auth.check, None, "http://127.0.0.1:1/mcp")
    assert isinstance(denied, Denied) and denied.challenge == (
        'Bearer resource_metadata="https://mcpx.example/.well-known/oauth-protected-resource'
        '/mcp", scope="mcp:tools"'
    )


def test_v1_works_with_a_token_from_the_real_flow(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    token = _login(issuer, _resource(daemon))
    r = tcp.get("/v1/servers", headers={"Authorization": "Bearer " + token})
    assert r.status_code == 200
    assert [s["name"] for s in r.json()["servers"]] == sorted(SERVERS)


_SDK_CLIENT = """
import asyncio, json, os, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main():
    headers = {"Authorization": "Bearer " + os.environ["SDK_TOKEN"]}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(sys.argv[1], http_client=http)
        async with Client(transport, mode=sys.argv[2]) as client:
            tools = await client.list_tools()
            args = {"server": "demo", "tool": "echo", "arguments": {"text": "as alice"}}
            r = await client.call_tool("mcpx_call", args)
            text = "".join(x.text for x in r.content if x.type == "text")
            print(json.dumps({"tools": [t.name for t in tools.tools], "text": text,
                              "version": client.protocol_version}))

asyncio.run(asyncio.wait_for(main(), 60))
"""


@pytest.mark.obligation("S-AUTH-11")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_official_sdk_client_with_a_valid_token_lists_and_calls_tools(
    daemon: Daemon, issuer: str, mode: str
) -> None:
    token = _login(issuer, _resource(daemon))
    env = {**os.environ, "SDK_TOKEN": token}
    done = subprocess.run(
        [str(peer_python("2.3.0")), "-c", textwrap.dedent(_SDK_CLIENT), _resource(daemon), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "mcpx_call" in seen["tools"]
    assert "as alice" in seen["text"]
    assert seen["version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")


def _initialize(tcp: httpx.Client, token: str) -> str:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}}
    params["clientInfo"] = {"name": "t", "version": "1"}
    r = tcp.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        headers={"Authorization": "Bearer " + token},
    )
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


def test_one_subject_cannot_use_anothers_session(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    alice = _mint(issuer, sub="alice", aud=_resource(daemon), scope=SCOPE)
    bob = _mint(issuer, sub="bob", aud=_resource(daemon), scope=SCOPE)
    sid = _initialize(tcp, alice)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    common = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    as_bob = tcp.post("/mcp", json=ping, headers={**common, "Authorization": "Bearer " + bob})
    assert as_bob.status_code == 404
    assert (
        tcp.delete("/mcp", headers={**common, "Authorization": "Bearer " + bob}).status_code == 404
    )
    as_alice = tcp.post("/mcp", json=ping, headers={**common, "Authorization": "Bearer " + alice})
    assert as_alice.status_code == 200
    assert as_alice.json()["result"] == {}


def test_one_subject_does_not_see_anothers_tasks_or_questions(
    tcp: httpx.Client, daemon: Daemon, issuer: str
) -> None:
    alice = {
        "Authorization": "Bearer " + _mint(issuer, sub="alice", aud=_resource(daemon), scope=SCOPE)
    }
    bob = {
        "Authorization": "Bearer " + _mint(issuer, sub="bob", aud=_resource(daemon), scope=SCOPE)
    }
    body = {"server": "sdk", "tool": "ask", "arguments": {"question": "ship it?"}}
    parked = tcp.post("/v1/call", json=body, headers={**alice, "Mcpx-Questions": "return"})
    assert parked.status_code == 202, parked.text
    task, (question,) = parked.json()["task"]["id"], parked.json()["task"]["questions"]

    def tasks(who: dict[str, str]) -> list[str]:
        return [t["id"] for t in tcp.get("/v1/tasks", headers=who).json()["tasks"]]

    def questions(who: dict[str, str]) -> list[str]:
        return [q["id"] for q in tcp.get("/v1/questions", headers=who).json()["questions"]]

    assert task in tasks(alice) and task not in tasks(bob)
    assert question in questions(alice) and question not in questions(bob)
    assert tcp.get(f"/v1/tasks/{task}", headers=bob).status_code == 404
    assert tcp.post(f"/v1/tasks/{task}/cancel", json={}, headers=bob).status_code == 404
    assert tcp.get(f"/v1/questions/{question}", headers=bob).status_code == 404
    answer = {"content": {"answer": "no"}}
    path = f"/v1/questions/{question}/answer"
    assert tcp.post(path, json=answer, headers=bob).status_code == 404
    # The operator (the unix socket) sees every task; alice answers her own question.
    with daemon.http() as api:
        assert task in [t["id"] for t in api.get("/v1/tasks").json()["tasks"]]
    assert tcp.post(path, json=answer, headers=alice).status_code == 200
    result = tcp.get(f"/v1/tasks/{task}/result", headers=alice)
    assert result.status_code == 200 and result.json()["content"][0]["text"] == "no"


@pytest.fixture(scope="module")
def introspecting(tmp_path_factory: pytest.TempPathFactory, issuer: str) -> Iterator[Daemon]:
    settings = _settings(
        issuer,
        **{
            "daemon.oauth.introspectionUrl": issuer + "/introspect",
            "daemon.oauth.clientId": "mcpx",
            "daemon.oauth.clientSecretEnv": SECRET_VAR,
        },
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, INTROSPECTION_SECRET)
        with running_daemon(tmp_path_factory.mktemp("introspect"), SERVERS, settings) as d:
            yield d


@pytest.mark.obligation("S-AUTH-11", "S-AUTH-12")
def test_introspection_mode_asks_the_issuer(introspecting: Daemon, issuer: str) -> None:
    resource = _resource(introspecting)
    good = _login(issuer, resource)
    other = _mint(issuer, sub="x", aud=issuer + "/mcp", scope=SCOPE)
    short = _mint(issuer, sub="x", aud=resource, scope="mcp:read")
    with httpx.Client(base_url=introspecting.info["url"], timeout=60) as tcp:

        def status(token: str) -> tuple[int, str]:
            r = tcp.get("/v1/servers", headers={"Authorization": "Bearer " + token})
            return r.status_code, _challenge(r)

        assert status(good)[0] == 200
        assert status(other)[0] == 401 and 'error="invalid_token"' in status(other)[1]
        assert status(short)[0] == 403
        # Revoked at the issuer: a JWT check could not know; introspection does.
        assert httpx.post(issuer + "/admin/revoke-all", timeout=30).status_code == 200
        code, challenge = status(good)
        assert code == 401 and 'error="invalid_token"' in challenge


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"daemon.oauth.issuer": ""}, "daemon.oauth.issuer is not set"),
        ({"daemon.oauth.issuer": "not a url"}, "is not an http(s) URL"),
        ({"daemon.oauth.algorithms": ("RS256", "none")}, "public-key algorithms only"),
        ({"daemon.oauth.algorithms": ("HS256",)}, "public-key algorithms only"),
        ({"daemon.oauth.introspectionUrl": "http://127.0.0.1:1/i"}, "needs daemon.oauth.clientId"),
    ],
)
def test_incomplete_oauth_settings_refuse_to_start(changed: dict[str, Any], said: str) -> None:
    settings: dict[str, Any] = {
        "daemon.oauth.issuer": "https://auth.example",
        "daemon.oauth.resource": "",
        "daemon.oauth.jwksUri": "",
        "daemon.oauth.introspectionUrl": "",
        "daemon.oauth.clientId": "",
        "daemon.oauth.clientSecretEnv": "",
        "daemon.oauth.scopes": (),
        "daemon.oauth.algorithms": ("RS256", "ES256"),
        **changed,
    }
    with pytest.raises(StartRefused, match=said.replace("(", r"\(").replace(")", r"\)")):
        oauth_settings(settings)  # type: ignore[arg-type]


def test_no_token_reaches_the_log_or_a_v1_answer(
    daemon: Daemon, introspecting: Daemon, issuer: str
) -> None:
    # Runs last in this module (pytest keeps file order): every token sent above is known.
    token = _login(issuer, _resource(daemon))
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as tcp:
        headers = {"Authorization": "Bearer " + token}
        paths = ("/v1/servers", "/v1/log", "/v1/stats", "/v1/tasks", "/v1/questions", "/v1/tools")
        answers = [tcp.get(p, headers=headers).text for p in paths]
    assert len(SENT) > 10
    for d in (daemon, introspecting):
        log = (d.state / "daemon.log").read_text(encoding="utf-8")
        assert "authenticated as oauth subject" in log or d is introspecting
        for sent in SENT:
            assert sent not in log
            assert sent[-24:] not in log  # not even its signature's tail
    for sent in SENT:
        for answer in answers:
            assert sent not in answer
