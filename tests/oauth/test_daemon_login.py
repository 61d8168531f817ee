"""OAuth upstreams through a real daemon, against a real authorization server
(``tests/fixtures/oauth_server.py``, on the official SDK's auth): ``mcpx auth login``
driven headlessly (pasted URL and a BROWSER script), calls, status, refresh on expiry,
revocation to "login needed" (CLI, /v1), logout, and no secret anywhere but oauth.db.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.oauth_server import oauth_server
from support.peers import peer_python
from support.waiting import wait_until

EX_LOGIN = 9  # README's exit code for "an upstream needs an OAuth sign-in"


def _entry(issuer: str) -> dict[str, Any]:
    return {"url": issuer + "/mcp", "auth": {"type": "oauth"}}


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server() as base:
        yield base


@pytest.fixture
def daemon(tmp_path: Path, issuer: str) -> Iterator[Daemon]:
    servers = {"demo-oauth": _entry(issuer), "other-oauth": _entry(issuer)}
    with running_daemon(tmp_path, servers, {"log.level": "debug"}) as d:
        yield d


def login_pasted(d: Daemon, server: str, seen: list[str]) -> subprocess.CompletedProcess[str]:
    """``mcpx auth login SERVER --no-browser``: the test opens the printed URL itself
    (the fixture approves at once) and pastes where it was sent back."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpx", "auth", "login", server, "--no-browser"],
        cwd=d.home,
        env=d.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http"), url
        answer = httpx.get(url, follow_redirects=False, timeout=30)
        assert answer.status_code in (302, 303, 307), answer.text
        location = answer.headers["location"]
        seen.append(location)  # it holds the code: it must appear nowhere else
        out, err = proc.communicate(location + "\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return subprocess.CompletedProcess(proc.args, proc.returncode, url + "\n" + out, err)


def replayed_events(v1: httpx.Client) -> str:
    """Every event the daemon retained (the stream stays open: read until it is quiet)."""
    got: list[str] = []
    timeout = httpx.Timeout(30, read=2)
    with v1.stream("GET", "/v1/events", params={"since": 0}, timeout=timeout) as stream:
        try:
            for chunk in stream.iter_text():
                got.append(chunk)
        except httpx.ReadTimeout:
            pass  # quiet: the replay is over
    text = "".join(got)
    assert "call.finished" in text  # the replay did come
    return text


def stored_secrets(state: Path) -> list[str]:
    db = sqlite3.connect(state / "oauth.db")
    try:
        found: list[str] = []
        for (data,) in db.execute("SELECT data FROM tokens"):
            row = json.loads(data)
            found += [
                row["access_token"],
                *([row["refresh_token"]] if row["refresh_token"] else []),
            ]
        for (data,) in db.execute("SELECT data FROM clients"):
            secret = json.loads(data).get("client_secret")
            found += [secret] if secret else []
        return found
    finally:
        db.close()


def codes(locations: list[str]) -> list[str]:
    from urllib.parse import parse_qs, urlsplit

    return [parse_qs(urlsplit(u).query)["code"][0] for u in locations]


@pytest.mark.obligation("C-AUTH-27", "C-AUTH-28")
def test_login_pasted_then_calls_status_and_secrets_stay_in_oauth_db(
    daemon: Daemon, issuer: str
) -> None:
    answers: list[str] = []
    before = daemon.cli("call", "demo-oauth", "whoami")
    assert before.returncode == EX_LOGIN, before.stderr
    assert "mcpx auth login demo-oauth" in before.stderr

    seen: list[str] = []
    done = login_pasted(daemon, "demo-oauth", seen)
    assert done.returncode == 0, done.stderr
    assert "logged in to demo-oauth" in done.stdout

    call = daemon.cli("call", "demo-oauth", "whoami", "--json")
    assert call.returncode == 0, call.stderr
    answers += [call.stdout, call.stderr]
    assert "user-" in call.stdout  # the fixture's subject for the registered client

    status = daemon.cli("auth", "status", "--json")
    assert status.returncode == 0, status.stderr
    answers.append(status.stdout)
    rows = {r["server"]: r for r in json.loads(status.stdout)["servers"]}
    assert rows["demo-oauth"]["loggedIn"] is True
    assert rows["demo-oauth"]["issuer"] == issuer
    assert rows["demo-oauth"]["scopes"] == ["mcp:tools"]
    assert rows["other-oauth"]["loggedIn"] is False
    assert rows["other-oauth"]["command"] == "mcpx auth login other-oauth"
    table = daemon.cli("auth", "status")
    assert "demo-oauth" in table.stdout and "yes" in table.stdout

    # A redirect whose state no login holds is refused (C-AUTH-28).
    with daemon.http() as v1:
        forged = v1.post("/v1/auth/callback", json={"url": seen[0]})
        assert forged.status_code == 404
        assert forged.json()["error"]["code"] == "login_not_pending"
        answers.append(forged.text)
        for path in ("/v1/auth", "/v1/servers", "/openapi.json"):
            answers.append(v1.get(path).text)
        answers.append(replayed_events(v1))

    mode = stat.S_IMODE(os.stat(daemon.state / "oauth.db").st_mode)
    assert mode == 0o600
    secrets = stored_secrets(daemon.state) + codes(seen)
    assert len(secrets) >= 3  # access and refresh token, the code at least
    _assert_nowhere(daemon, secrets, answers)


def _assert_nowhere(d: Daemon, secrets: list[str], answers: list[str]) -> None:
    texts = list(answers)
    for path in d.state.rglob("*"):
        if path.is_file() and not path.name.startswith("oauth.db") and not path.is_socket():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    for secret in secrets:
        for text in texts:
            assert secret not in text


def test_browser_login_and_logout(daemon: Daemon, tmp_path: Path) -> None:
    browser = tmp_path / "browser.py"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import sys, urllib.request\n"
        "urllib.request.urlopen(sys.argv[1], timeout=30).read()\n"  # follows to the listener
    )
    browser.chmod(0o700)
    env = {**daemon.env(), "BROWSER": str(browser)}
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "auth", "login", "other-oauth", "--timeout", "60"],
        cwd=daemon.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "logged in to other-oauth" in done.stdout
    call = daemon.cli("call", "other-oauth", "echo", "text=hi")
    assert call.returncode == 0, call.stderr
    assert "hi" in call.stdout

    out = daemon.cli("auth", "logout", "other-oauth")
    assert out.returncode == 0 and "logged out of other-oauth" in out.stdout, out.stderr
    again = daemon.cli("call", "other-oauth", "echo", "text=hi")
    assert again.returncode == EX_LOGIN, again.stderr
    assert "mcpx auth login other-oauth" in again.stderr


def test_a_wrong_state_does_not_finish_the_browser_login(daemon: Daemon, tmp_path: Path) -> None:
    browser = tmp_path / "forger.py"
    # A page that sends the browser back with another state: refused; then nothing comes.
    browser.write_text(
        f"#!{sys.executable}\n"
        "import sys, re, urllib.request, urllib.error\n"
        "from urllib.parse import parse_qs, urlsplit\n"
        "q = parse_qs(urlsplit(sys.argv[1]).query)\n"
        "back = q['redirect_uri'][0] + '?code=x&state=forged'\n"
        "try:\n    urllib.request.urlopen(back, timeout=30)\n"
        "except urllib.error.HTTPError as e:\n    assert e.code == 400\n"
    )
    browser.chmod(0o700)
    env = {**daemon.env(), "BROWSER": str(browser)}
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "auth", "login", "demo-oauth", "--timeout", "2"],
        cwd=daemon.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "did not come back within 2s" in done.stderr


def test_expired_token_is_refreshed_unnoticed(tmp_path: Path) -> None:
    with (
        oauth_server("--token-ttl", "3") as issuer,
        running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}) as d,
    ):
        assert login_pasted(d, "demo-oauth", []).returncode == 0
        first = d.cli("call", "demo-oauth", "whoami")
        assert first.returncode == 0, first.stderr
        # Usually none yet; a loaded machine may have taken long enough for the daemon to
        # renew the 3 s token early, as it should: the count before the expiry is the base.
        grants = httpx.get(issuer + "/admin/stats").json()["refreshGrants"]
        db = sqlite3.connect(d.state / "oauth.db")
        (data,) = db.execute("SELECT data FROM tokens").fetchone()
        db.close()
        expires = float(json.loads(data)["expires_at"])
        # Past the token's expiry: the next call must refresh first (or on the 401).
        wait_until(lambda: time.time() > expires + 0.2, timeout=10)
        second = d.cli("call", "demo-oauth", "whoami")
        assert second.returncode == 0, second.stderr
        assert httpx.get(issuer + "/admin/stats").json()["refreshGrants"] >= grants + 1


def test_revoked_tokens_lead_to_login_needed(tmp_path: Path) -> None:
    with (
        oauth_server() as issuer,
        running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}) as d,
    ):
        assert login_pasted(d, "demo-oauth", []).returncode == 0
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0
        assert httpx.post(issuer + "/admin/revoke-all").status_code == 200
        after = d.cli("call", "demo-oauth", "whoami")
        assert after.returncode == EX_LOGIN, after.stderr
        assert "mcpx auth login demo-oauth" in after.stderr
        with d.http() as v1:
            r = v1.post("/v1/call", json={"server": "demo-oauth", "tool": "whoami"})
            assert r.status_code == 424
            error = r.json()["error"]
            assert error["code"] == "login_needed"
            assert error["details"]["command"] == "mcpx auth login demo-oauth"
            rows = v1.get("/v1/auth").json()["servers"]
            assert rows[0]["needsLogin"] is True and rows[0]["why"]
        # Logged in again: the same warm instance goes on with the new tokens.
        assert login_pasted(d, "demo-oauth", []).returncode == 0
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0


HOST = Path(__file__).resolve().parent.parent / "fixtures" / "oauth_host.py"


def sdk_host(d: Daemon, *flags: str, mode: str = "legacy") -> dict[str, Any]:
    argv = [str(peer_python("2.3.0")), str(HOST), d.info["url"] + "/mcp", "demo-oauth", "whoami"]
    done = subprocess.run(
        [*argv, "--mode", mode, *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_host_with_url_elicitation_signs_in_mid_call(tmp_path: Path, mode: str) -> None:
    with (
        oauth_server() as issuer,
        running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}) as d,
    ):
        assert login_pasted(d, "demo-oauth", []).returncode == 0
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0
        assert httpx.post(issuer + "/admin/revoke-all").status_code == 200

        plain = sdk_host(d, mode=mode)  # declares no elicitation: a tool error
        assert plain["isError"] is True and plain["asked"] == []
        assert "mcpx auth login demo-oauth" in " ".join(plain["texts"])

        seen = sdk_host(d, "--url-elicitation", mode=mode)
        [question] = seen["asked"]
        assert question["mode"] == "url"
        assert question["url"].startswith(issuer + "/authorize?")
        assert "Logged in to demo-oauth" in question["page"]
        assert seen["isError"] is False, seen
        assert "user-" in " ".join(seen["texts"])
        # The login the host made is the daemon's now: the CLI's calls work too.
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0
        _assert_nowhere(d, stored_secrets(d.state), [json.dumps(plain), json.dumps(seen)])


@pytest.mark.obligation("C-AUTH-26")
def test_two_users_of_an_identity_server_never_share_a_token(tmp_path: Path) -> None:
    with oauth_server() as issuer:
        servers = {"demo-oauth": {**_entry(issuer), "scope": "identity"}}
        settings = {
            "daemon.auth": "oauth",
            "daemon.oauth.issuer": issuer,
            "daemon.oauth.scopes": ["mcp:tools"],
        }
        with running_daemon(tmp_path, servers, settings) as d:
            resource = str(d.info["url"]) + "/mcp"

            def bearer(sub: str) -> dict[str, str]:
                claims = {"sub": sub, "aud": resource, "scope": "mcp:tools"}
                minted = httpx.post(issuer + "/admin/mint", json=claims, timeout=30).json()
                return {"Authorization": f"Bearer {minted['access_token']}"}

            alice, bob = bearer("alice"), bearer("bob")
            with httpx.Client(base_url=d.info["url"], timeout=60) as tcp:

                def login(who: dict[str, str]) -> None:
                    redirect = {"redirectUri": "http://127.0.0.1:9/callback"}
                    begun = tcp.post("/v1/auth/demo-oauth/login", json=redirect, headers=who)
                    assert begun.status_code == 200, begun.text
                    sent = httpx.get(begun.json()["authorizationUrl"], timeout=30)
                    back = {"url": sent.headers["location"]}
                    assert tcp.post("/v1/auth/callback", json=back, headers=who).status_code == 200

                def call(who: dict[str, str]) -> httpx.Response:
                    body = {"server": "demo-oauth", "tool": "whoami"}
                    return tcp.post("/v1/call", json=body, headers=who)

                def logged_in(who: dict[str, str]) -> bool:
                    [row] = tcp.get("/v1/auth", headers=who).json()["servers"]
                    return bool(row["loggedIn"])

                login(alice)
                assert call(alice).status_code == 200
                refused = call(bob)
                assert refused.status_code == 424, refused.text
                assert refused.json()["error"]["code"] == "login_needed"
                assert logged_in(alice) and not logged_in(bob)
                login(bob)
                assert call(bob).status_code == 200
                assert call(alice).status_code == 200
            db = sqlite3.connect(d.state / "oauth.db")
            rows = db.execute("SELECT user, data FROM tokens ORDER BY user").fetchall()
            db.close()
            assert [user for user, _ in rows] == ["oauth:alice", "oauth:bob"]
            tokens = {json.loads(data)["access_token"] for _, data in rows}
            assert len(tokens) == 2
