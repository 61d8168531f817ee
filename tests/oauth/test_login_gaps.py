"""The paths a login takes when nobody has logged in yet, through a real daemon and the
real authorization server (``tests/fixtures/oauth_server.py``): the daemon's own
``/oauth/callback`` behind ``daemon.auth=token``, a host's first login by URL
elicitation, and the broker holding a login nobody present can do.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from oauth.test_daemon_login import EX_LOGIN, _entry, sdk_host
from support.daemon import Daemon, running_daemon
from support.oauth_server import oauth_server
from support.waiting import wait_until

TOKEN_ENV = {"LOGIN_GAPS_TOKEN": "a-daemon-token-for-the-login-gaps-tests-0123456789"}


def browse(url: str) -> tuple[int, str]:
    """As a browser would: follow the redirects, read the page it ends on."""
    try:
        with urllib.request.urlopen(url, timeout=30) as page:
            return int(page.status), page.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server() as base:
        yield base


@pytest.fixture
def token_daemon(tmp_path: Path, issuer: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemon]:
    for name, value in TOKEN_ENV.items():
        monkeypatch.setenv(name, value)
    settings = {"daemon.auth": "token", "daemon.tokens": ["ops=LOGIN_GAPS_TOKEN"]}
    with running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}, settings) as d:
        yield d


def test_the_callback_is_open_behind_a_token_and_answers_nothing_else(
    token_daemon: Daemon,
) -> None:
    d = token_daemon
    callback = d.info["url"] + "/oauth/callback"
    with d.http() as v1:
        begun = v1.post("/v1/auth/demo-oauth/login", json={"redirectUri": callback})
        assert begun.status_code == 200, begun.text
    # The browser carries no daemon token: the redirect back still completes the login.
    status, page = browse(begun.json()["authorizationUrl"])
    assert status == 200, page
    assert "Logged in to demo-oauth" in page
    call = d.cli("call", "demo-oauth", "whoami")
    assert call.returncode == 0, call.stderr

    # An unknown state: a clear 400 page, nothing completed.
    status, page = browse(callback + "?code=x&state=never-issued")
    assert status == 400
    assert "no login is pending" in page and "mcpx auth login" in page
    # Open for GET only, and every other check stays: a POST still needs the token.
    with httpx.Client(timeout=30) as plain:
        posted = plain.post(callback, json={})
        assert posted.status_code == 401
        assert "www-authenticate" in posted.headers
        rebound = plain.get(callback + "?state=x", headers={"Host": "evil.example:80"})
        assert rebound.status_code == 421
        # The callback is open; its neighbours are not.
        assert plain.get(d.info["url"] + "/oauth/callbackx").status_code == 401
        assert plain.get(d.info["url"] + "/v1/servers").status_code == 401


def test_a_hosts_first_login_by_url_elicitation(tmp_path: Path) -> None:
    # The person takes longer to sign in than an instance may take to start: their
    # time must not count against the start (the probe), only against the call.
    settings = {"upstream.probeTimeout": "300ms", "pool.startTimeout": "1s"}
    with (
        oauth_server("--authorize-delay", "2.5") as issuer,
        running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}, settings) as d,
    ):
        seen = sdk_host(d, "--url-elicitation", mode="legacy")
        [question] = seen["asked"]
        assert question["mode"] == "url"
        assert question["url"].startswith(issuer + "/authorize?")
        assert "Logged in to demo-oauth" in question["page"]
        assert seen["isError"] is False, seen
        assert "user-" in " ".join(seen["texts"])
        # Nothing is left open in the broker: the host did the login itself.
        with d.http() as v1:
            assert v1.get("/v1/questions").json()["questions"] == []
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0


def _question_id(message: str) -> str:
    found = re.search(r"mcpx elicit show (\w+)", message)
    assert found is not None, message
    return found.group(1)


def _login_questions(v1: httpx.Client) -> list[dict[str, Any]]:
    listed = v1.get("/v1/questions").json()["questions"]
    return [q for q in listed if q["server"] == "demo-oauth"]


def test_the_broker_holds_a_login_nobody_present_can_do(tmp_path: Path, issuer: str) -> None:
    with running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}) as d:
        cli = d.cli("call", "demo-oauth", "whoami")
        assert cli.returncode == EX_LOGIN, cli.stderr
        assert "mcpx auth login demo-oauth" in cli.stderr
        qid = _question_id(cli.stderr)

        with d.http() as v1:
            refused = v1.post("/v1/call", json={"server": "demo-oauth", "tool": "whoami"})
            assert refused.status_code == 424
            message = refused.json()["error"]["message"]
            assert "mcpx auth login demo-oauth" in message
            assert _question_id(message) == qid  # the same question, not a second one
            [held] = _login_questions(v1)
            assert held["id"] == qid and held["state"] == "pending"
            assert held["params"]["mode"] == "url"
            url = held["params"]["url"]
            assert url.startswith(issuer + "/authorize?")
            assert (d.info["url"] + "/oauth/callback") in httpx.URL(url).params["redirect_uri"]

        # A host without URL elicitation: a tool error naming both ways in.
        plain = sdk_host(d, mode="legacy")
        assert plain["isError"] is True
        text = " ".join(plain["texts"])
        assert "mcpx auth login demo-oauth" in text and f"mcpx elicit show {qid}" in text

        listed = d.cli("elicit", "list")
        assert listed.returncode == 0 and qid in listed.stdout, listed.stdout
        shown = d.cli("elicit", "show", qid, "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["params"]["url"] == url

        status, page = browse(url)  # the person follows it
        assert status == 200 and "Logged in to demo-oauth" in page, page
        with d.http() as v1:

            def closed() -> dict[str, Any] | None:
                got = v1.get(f"/v1/questions/{qid}")
                body: dict[str, Any] = got.json()
                return body if body.get("state") != "pending" else None

            done = wait_until(closed, timeout=30, message="the login question closed")
            assert done["state"] == "answered", done
            assert _login_questions(v1) == []
        call = d.cli("call", "demo-oauth", "whoami")
        assert call.returncode == 0, call.stderr
