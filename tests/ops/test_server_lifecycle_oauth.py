"""Who may stop whose instance: with ``daemon.auth=oauth`` a caller is one user among many.
It starts, stops and restarts its own instances of a server scoped per identity, never a
shared instance nor another user's (403); the operator (the daemon's socket) may all.
Against a real authorization server (``tests/fixtures/oauth_server.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.oauth_server import oauth_server

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SERVERS = {"demo": DEMO, "mine": {**DEMO, "scope": "identity"}}
SCOPE = "mcp:tools"


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server() as base:
        yield base


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, issuer: str) -> Iterator[Daemon]:
    settings = {
        "daemon.auth": "oauth",
        "daemon.oauth.issuer": issuer,
        "daemon.oauth.scopes": [SCOPE],
    }
    with running_daemon(tmp_path_factory.mktemp("lifecycle-oauth"), SERVERS, settings) as d:
        yield d


def _user(daemon: Daemon, issuer: str, sub: str) -> httpx.Client:
    resource = str(daemon.info["url"]).rstrip("/") + "/mcp"
    claims = {"sub": sub, "aud": resource, "scope": SCOPE}
    token = httpx.post(issuer + "/admin/mint", json=claims, timeout=30).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=daemon.info["url"], headers=headers, timeout=60)


def _post(client: httpx.Client, server: str, what: str, **body: Any) -> httpx.Response:
    return client.post(f"/v1/servers/{server}/{what}", json=body)


def _scopes(daemon: Daemon, server: str) -> dict[str, int]:
    """The users' instances of ``server`` by scope (not the daemon's own listing's,
    ``anonymous``, nor the shared one)."""
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    [found] = [s for s in servers if s["name"] == server]
    return {i["scope"]: i["id"] for i in found["instances"] if i["scope"].startswith("oauth:")}


def test_a_user_acts_on_its_own_instances_only(daemon: Daemon, issuer: str) -> None:
    with _user(daemon, issuer, "alice") as alice, _user(daemon, issuer, "bob") as bob:
        started = _post(alice, "mine", "start")
        assert started.status_code == 200, started.text
        own = started.json()["instance"]
        assert own["scope"] == "oauth:alice" and own["state"] == "ready", own
        # A shared instance is every caller's: not a user's to stop or restart.
        assert _post(alice, "demo", "start").status_code == 200  # as a call would start it
        for what in ("stop", "restart"):
            refused = _post(bob, "demo", what)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "forbidden", refused.text
            assert "only the operator" in refused.json()["error"]["message"], refused.text
        # Another user's instance: named, refused; unnamed, not among bob's own.
        named = _post(bob, "mine", "stop", instance=own["id"])
        assert named.status_code == 403 and "another caller's" in named.text, named.text
        assert _post(bob, "mine", "stop").json() == {"server": "mine", "stopped": []}
        assert _scopes(daemon, "mine") == {"oauth:alice": own["id"]}
        # Her own: restarted, then stopped.
        restarted = _post(alice, "mine", "restart")
        assert restarted.status_code == 200, restarted.text
        assert [i["id"] for i in restarted.json()["stopped"]] == [own["id"]]
        new = restarted.json()["instance"]
        assert new["scope"] == "oauth:alice" and new["id"] != own["id"], new
        assert _post(bob, "mine", "start").status_code == 200
        stopped = _post(alice, "mine", "stop")
        assert [i["id"] for i in stopped.json()["stopped"]] == [new["id"]], stopped.text
        assert set(_scopes(daemon, "mine")) == {"oauth:bob"}
    # The operator, on the daemon's socket, stops any.
    with daemon.http() as api:
        stopped = api.post("/v1/servers/mine/stop", json={})
        assert "oauth:bob" in [i["scope"] for i in stopped.json()["stopped"]], stopped.text
        stopped = api.post("/v1/servers/demo/stop", json={})
        assert [i["scope"] for i in stopped.json()["stopped"]] == ["shared"], stopped.text
    assert _scopes(daemon, "mine") == {}
