"""mcpx.oauth's flow against a real authorization server and protected resource on
127.0.0.1 (``fake.py``: two origins), driven through the ``httpx.Auth`` the transports get."""

from __future__ import annotations

import dataclasses
import re
import time

import httpx
import pytest

from mcpx.client import login_needed, open_session
from mcpx.config import ServerConfig, resolve
from mcpx.oauth import LoginNeeded, MemoryStore, OAuthClient, OAuthError, Tokens
from oauth.fake import FakeOAuth, fake_oauth

pytestmark = pytest.mark.anyio


class Browser:
    """An ``Authorizer`` that follows the authorization URL without a person."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    async def authorize(self, authorization_url: str, redirect_uri: str) -> str:
        self.urls.append(authorization_url)
        async with httpx.AsyncClient(follow_redirects=False) as http:
            response = await http.get(authorization_url)
        assert response.status_code == 302
        return response.headers["location"]


def _client(
    fake: FakeOAuth, store: MemoryStore | None = None, browser: Browser | None = None
) -> OAuthClient:
    server = ServerConfig(
        name="srv", transport="http", url=f"{fake.rs_url}/mcp", auth={"type": "oauth"}
    )
    return OAuthClient(server, store=store or MemoryStore(), authorizer=browser or Browser())


async def _call(client: OAuthClient, url: str) -> httpx.Response:
    async with httpx.AsyncClient(auth=client.auth()) as http:
        return await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})


@pytest.mark.obligation("C-AUTH-7", "C-AUTH-23", "C-AUTH-25", "C-AUTH-22", "C-AUTH-28")
async def test_a_401_runs_discovery_login_and_retries_with_the_bearer() -> None:
    with fake_oauth() as fake:
        browser = Browser()
        client = _client(fake, browser=browser)
        response = await _call(client, f"{fake.rs_url}/mcp")
        assert response.status_code == 200
        mcp = [s for s in fake.seen if s.path == "/mcp"]
        assert [s.headers.get("authorization", "")[:10] for s in mcp] == ["", "Bearer at-"]
        assert all("access_token" not in s.query for s in mcp)
        authorize = next(s for s in fake.seen if s.path == "/authorize")
        token = next(s for s in fake.seen if s.path == "/token")
        resource = f"{fake.rs_url}/mcp"
        assert authorize.query["resource"] == token.form["resource"] == resource
        assert authorize.query["code_challenge_method"] == "S256"
        assert authorize.query["scope"] == "mcp:read"  # the challenge's scope
        assert token.headers["authorization"].startswith("Basic ")  # as registered
        status = await client.status()
        assert status["loggedIn"] is True and status["issuer"] == fake.issuer
        assert status["scopes"] == ["mcp:read"]


@pytest.mark.obligation("C-AUTH-26")
async def test_the_token_never_goes_to_another_origin() -> None:
    with fake_oauth() as fake:
        client = _client(fake)
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        async with httpx.AsyncClient(auth=client.auth()) as http:
            other = await http.post(f"{fake.as_url}/elsewhere", json={})
        assert other.status_code == 200
        elsewhere = [s for s in fake.seen if s.path == "/elsewhere"]
        assert len(elsewhere) == 1 and "authorization" not in elsewhere[0].headers


@pytest.mark.obligation("C-AUTH-9", "C-AUTH-10", "C-AUTH-11")
async def test_discovery_tries_the_well_known_paths_in_order() -> None:
    with fake_oauth(
        challenge_has_metadata_url=False, prm_at_root_only=True, issuer_path="/tenant1"
    ) as fake:
        assert (await _call(_client(fake), f"{fake.rs_url}/mcp")).status_code == 200
        gets = [p for p in fake.paths("GET") if "well-known" in p]
        assert gets == [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
        ]


@pytest.mark.obligation("C-AUTH-12")
async def test_metadata_naming_another_issuer_is_refused() -> None:
    with fake_oauth(metadata_issuer="https://attacker.example") as fake:
        with pytest.raises(OAuthError, match=re.escape("names issuer 'https://attacker.example'")):
            await _call(_client(fake), f"{fake.rs_url}/mcp")
        assert not {"/register", "/authorize", "/token"} & set(fake.paths())


async def test_a_resource_metadata_for_another_resource_is_refused() -> None:
    with fake_oauth(prm_resource="https://evil.example/mcp") as fake:
        with pytest.raises(OAuthError, match=re.escape("evil.example")):
            await _call(_client(fake), f"{fake.rs_url}/mcp")
        assert "/authorize" not in fake.paths()


@pytest.mark.obligation("C-AUTH-22")
async def test_an_authorization_server_without_s256_is_refused() -> None:
    with fake_oauth(code_methods=["plain"]) as fake:
        with pytest.raises(OAuthError, match="S256"):
            await _call(_client(fake), f"{fake.rs_url}/mcp")
        assert "/authorize" not in fake.paths()


@pytest.mark.obligation("C-AUTH-24")
@pytest.mark.parametrize(
    ("iss", "words"), [("https://other.example", "came from issuer"), (None, "promised an iss")]
)
async def test_a_wrong_or_missing_iss_stops_before_the_token_request(
    iss: str | None, words: str
) -> None:
    with fake_oauth(iss_in_redirect=iss) as fake:
        with pytest.raises(OAuthError, match=words):
            await _call(_client(fake), f"{fake.rs_url}/mcp")
        assert "/authorize" in fake.paths() and "/token" not in fake.paths()


async def test_a_401_with_a_stale_token_refreshes_instead_of_logging_in() -> None:
    with fake_oauth() as fake:
        browser = Browser()
        client = _client(fake, browser=browser)
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        fake.valid.clear()  # the resource no longer takes the token it issued
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        assert fake.token_grants() == ["authorization_code", "refresh_token"]
        assert len(browser.urls) == 1


async def test_a_token_about_to_expire_is_refreshed_before_it_is_sent() -> None:
    with fake_oauth() as fake:
        store = MemoryStore()
        client = _client(fake, store=store)
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        tokens = store.tokens(client.key, "")
        assert tokens is not None
        # An hour-long token with five seconds left: inside the refresh-early window.
        now = time.time()
        aged = dataclasses.replace(tokens, issued_at=now - 3600, expires_at=now + 5)
        store.save_tokens(client.key, "", aged)
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        assert fake.token_grants() == ["authorization_code", "refresh_token"]
        mcp = [s for s in fake.seen if s.path == "/mcp"]
        assert [s.headers.get("authorization") is not None for s in mcp] == [False, True, True]
        assert mcp[1].headers["authorization"] != mcp[2].headers["authorization"]


@pytest.mark.obligation("C-AUTH-16")
async def test_step_up_asks_for_the_union_and_gives_up_when_it_does_not_help() -> None:
    with fake_oauth(required_scope="mcp:admin") as fake:
        browser = Browser()
        client = _client(fake, browser=browser)
        response = await _call(client, f"{fake.rs_url}/mcp")
        assert response.status_code == 200  # the step-up got mcp:admin
        scopes = [httpx.URL(u).params["scope"] for u in browser.urls]
        assert scopes == ["mcp:read", "mcp:read mcp:admin"]
        # A scope the server never grants: one more try, then the 403 stands.
        fake.required_scope = "mcp:never"
        fake.grants_only = "mcp:read"
        for _ in range(3):
            assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 403
        # One re-authorization for mcp:never, then none: no loop across requests either.
        assert len(browser.urls) == 3


async def test_without_an_authorizer_the_flow_ends_in_login_needed() -> None:
    with fake_oauth() as fake:
        server = ServerConfig(
            name="srv", transport="http", url=f"{fake.rs_url}/mcp", auth={"type": "oauth"}
        )
        client = OAuthClient(server, store=MemoryStore())
        with pytest.raises(LoginNeeded) as caught:
            await _call(client, f"{fake.rs_url}/mcp")
        assert "mcpx auth login srv" in str(caught.value)
        assert "/authorize" not in fake.paths()


async def test_open_session_surfaces_login_needed_itself() -> None:
    with fake_oauth() as fake:
        server = ServerConfig(
            name="srv", transport="http", url=f"{fake.rs_url}/mcp", auth={"type": "oauth"}
        )
        settings = resolve(file=None, env={}, flags={"upstream.eraCache": "false"})
        with pytest.raises(LoginNeeded) as caught:
            async with open_session(server, settings):
                pass
        assert login_needed(caught.value) is caught.value
        assert "mcpx auth login srv" in str(caught.value)


async def test_logout_drops_the_tokens() -> None:
    with fake_oauth() as fake:
        store = MemoryStore()
        client = _client(fake, store=store)
        assert (await _call(client, f"{fake.rs_url}/mcp")).status_code == 200
        assert await client.logout() is True
        assert (await client.status())["loggedIn"] is False
        assert await client.logout() is False


async def test_begin_and_finish_login_check_the_state() -> None:
    with fake_oauth() as fake:
        client = _client(fake)
        pending = await client.begin_login("http://127.0.0.1:9/callback")
        assert pending.state in pending.authorization_url and pending.state not in repr(pending)
        redirected = await Browser().authorize(pending.authorization_url, pending.redirect_uri)
        with pytest.raises(OAuthError, match="state does not match"):
            await client.finish_login(pending, redirected.replace(pending.state, "forged"))
        tokens = await client.finish_login(pending, redirected)
        assert isinstance(tokens, Tokens) and tokens.issuer == fake.issuer
        assert tokens.expires_at is not None and tokens.expires_at > time.time()
