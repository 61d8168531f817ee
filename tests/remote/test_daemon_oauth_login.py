"""The CLI signed in to a daemon that runs ``daemon.auth=oauth`` at an ``http://`` endpoint
(``mcpx auth login|status|logout --daemon``), against a real authorization server
(``tests/fixtures/oauth_server.py``, on the official SDK's auth) and a real daemon.

Two state dirs: the daemon's, and the CLI's own (``client-state``), where the sign-in is
kept. The sign-in is driven headlessly: a ``BROWSER`` script that opens the URL, which the
fixture approves at once, and follows the redirect to the CLI's loopback listener.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.oauth_server import INTROSPECTION_SECRET_ENV, oauth_server
from support.remote import client_env
from support.waiting import wait_until

SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
SCOPE = "mcp:tools"
EX_SIGN_IN = 9  # the README's "needs an OAuth sign-in"
INTROSPECTION_SECRET = "introspection-secret-for-the-daemon-login-tests-0123456789"
SECRET_VAR = "DAEMON_LOGIN_TEST_INTROSPECTION_SECRET"
SHORT_TTL = 4  # seconds an access token lives on the second authorization server


# The daemon's port as an OAuth protected resource; the log at its most talkative (still no
# token in it).
AUTH = {"daemon.auth": "oauth", "daemon.oauth.scopes": [SCOPE], "log.level": "debug"}


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with oauth_server() as base:
        yield base


@pytest.fixture(scope="module")
def short_issuer() -> Iterator[str]:
    env = {INTROSPECTION_SECRET_ENV: INTROSPECTION_SECRET}
    with oauth_server("--token-ttl", str(SHORT_TTL), env=env) as base:
        yield base


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, issuer: str) -> Iterator[Daemon]:
    """Tokens checked as JWTs against the issuer's keys."""
    settings = {**AUTH, "daemon.oauth.issuer": issuer}
    with running_daemon(tmp_path_factory.mktemp("jwt-daemon"), SERVERS, settings) as d:
        yield d


@pytest.fixture(scope="module")
def short_daemon(tmp_path_factory: pytest.TempPathFactory, short_issuer: str) -> Iterator[Daemon]:
    """Tokens checked by asking the issuer (RFC 7662): a revoked one is refused at once."""
    settings = {
        **AUTH,
        "daemon.oauth.issuer": short_issuer,
        "daemon.oauth.introspectionUrl": short_issuer + "/introspect",
        "daemon.oauth.clientId": "mcpx",
        "daemon.oauth.clientSecretEnv": SECRET_VAR,
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, INTROSPECTION_SECRET)
        tmp = tmp_path_factory.mktemp("introspecting-daemon")
        with running_daemon(tmp, SERVERS, settings) as d:
            yield d


@dataclass
class Client:
    """The CLI of another machine: its own state dir, the daemon's URL as its endpoint."""

    endpoint: str
    env: dict[str, str]
    cwd: Path
    browser: Path
    said: list[str]  # every stdout and stderr it printed

    @property
    def state(self) -> Path:
        return Path(self.env["MCPX_STATE_DIR"])

    @property
    def store(self) -> Path:
        return self.state / "daemon-logins.json"

    def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "mcpx", *args],
            cwd=self.cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        self.said += [done.stdout, done.stderr]
        return done

    def login(self) -> subprocess.CompletedProcess[str]:
        done = self.cli("auth", "login", "--daemon", "--timeout", "60", BROWSER=str(self.browser))
        assert done.returncode == 0, done.stderr
        return done

    def kept(self) -> dict[str, Any]:
        logins: dict[str, Any] = json.loads(self.store.read_text())["logins"]
        [entry] = logins.values()
        return dict(entry)

    def edit(self, **fields: Any) -> None:
        """Change the kept sign-in as a test needs (the file is this user's own)."""
        doc = json.loads(self.store.read_text())
        [key] = doc["logins"]
        doc["logins"][key] |= fields
        self.store.write_text(json.dumps(doc))


def _client(tmp: Path, d: Daemon) -> Client:
    env, home = client_env(tmp, d.info["url"])
    browser = tmp / "browser.py"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import sys, urllib.request\n"
        "urllib.request.urlopen(sys.argv[1], timeout=30).read()\n"  # follows to the listener
    )
    browser.chmod(0o700)
    return Client(d.info["url"], env, home, browser, [])


@pytest.fixture
def client(tmp_path: Path, daemon: Daemon) -> Client:
    return _client(tmp_path, daemon)


@pytest.fixture
def short_client(tmp_path: Path, short_daemon: Daemon) -> Client:
    return _client(tmp_path, short_daemon)


def _resource(d: Daemon) -> str:
    return str(d.info["url"]).rstrip("/") + "/mcp"


def _mint(issuer: str, **claims: Any) -> str:
    return str(httpx.post(issuer + "/admin/mint", json=claims, timeout=30).json()["access_token"])


def _refresh_grants(issuer: str) -> int:
    return int(httpx.get(issuer + "/admin/stats", timeout=30).json()["refreshGrants"])


def _events_line(c: Client) -> str:
    """The first event ``mcpx events`` shows (replayed from history), then SIGINT."""
    argv = [sys.executable, "-m", "mcpx", "events", "--since", "0", "--kind", "call.finished"]
    proc = subprocess.Popen(
        argv, cwd=c.cwd, env=c.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the replay's first event
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=30)
    c.said += [line, out, err]
    return line


def _assert_nowhere(secrets: list[str], c: Client, d: Daemon) -> None:
    texts = list(c.said)
    for path in d.state.rglob("*"):
        if path.is_file() and not path.is_socket():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    for path in c.state.rglob("*"):
        if path.is_file() and path != c.store:
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    for secret in secrets:
        assert not any(secret in text for text in texts)


# -- before a sign-in, and bad input -------------------------------------------------------


def test_a_command_before_any_sign_in_exits_9_naming_the_login(client: Client) -> None:
    for args in (("servers",), ("call", "demo", "add", "a=1", "b=2"), ("status",)):
        done = client.cli(*args)
        assert done.returncode == EX_SIGN_IN, done.stderr
        assert f"the daemon at {client.endpoint} needs an OAuth sign-in" in done.stderr
        assert f"mcpx auth login --daemon {client.endpoint}" in done.stderr
    assert not (client.state / "daemon.json").exists()  # no local daemon instead


@pytest.mark.parametrize("command", ["login", "status", "logout"])
def test_daemon_flag_without_an_http_endpoint_is_a_usage_error(
    tmp_path: Path, command: str
) -> None:
    env, home = client_env(tmp_path, "")
    env.pop("MCPX_DAEMON_ENDPOINT")
    argv = [sys.executable, "-m", "mcpx", "auth", command, "--daemon"]
    done = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "none is set: set daemon.endpoint (MCPX_DAEMON_ENDPOINT" in done.stderr
    over_ssh = {**env, "MCPX_DAEMON_ENDPOINT": "ssh://buildbox"}
    done = subprocess.run(argv, cwd=home, env=over_ssh, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "only an http(s):// daemon takes an OAuth sign-in" in done.stderr


# -- signed in ------------------------------------------------------------------------------


def test_sign_in_then_every_command_works_and_no_token_shows(
    client: Client, daemon: Daemon, issuer: str
) -> None:
    done = client.login()
    assert f"signed in to the daemon at {client.endpoint} as user-" in done.stdout
    mode = stat.S_IMODE(os.stat(client.store).st_mode)
    assert mode == 0o600, oct(mode)
    kept = client.kept()
    assert kept["issuer"] == issuer and kept["resource"] == _resource(daemon)
    assert kept["scope"] == SCOPE and kept["subject"].startswith("user-")

    servers = client.cli("servers", "--json")
    assert servers.returncode == 0, servers.stderr
    assert [s["name"] for s in json.loads(servers.stdout)["servers"]] == ["demo"]
    added = client.cli("call", "demo", "add", "a=2", "b=3")
    assert added.returncode == 0, added.stderr
    assert "5" in added.stdout
    tools = client.cli("tools", "demo", "--json")
    assert tools.returncode == 0, tools.stderr
    assert "add" in tools.stdout
    line = _events_line(client)
    assert "call.finished" in line and "demo" in line, line

    status = client.cli("auth", "status", "--daemon", "--json")
    assert status.returncode == 0, status.stderr
    said = json.loads(status.stdout)
    assert said["signedIn"] is True and said["subject"] == kept["subject"]
    assert said["issuer"] == issuer and said["scopes"] == [SCOPE]
    assert said["tokenFromEnvironment"] is False
    running = client.cli("status", "--json")
    assert running.returncode == 0, running.stderr
    assert json.loads(running.stdout)["auth"] == "login"
    plain = client.cli("status")
    assert f"signed in as {kept['subject']}" in plain.stdout, plain.stdout
    assert not (client.state / "daemon.json").exists()

    secrets = [kept["access_token"], kept["refresh_token"]]
    secrets += [kept["client_secret"]] if kept["client_secret"] else []
    _assert_nowhere(secrets, client, daemon)


def test_a_refused_token_is_renewed_once_and_the_request_sent_again(
    client: Client, issuer: str
) -> None:
    client.login()
    before = client.kept()
    # A token of the issuer's form but signed by a key it does not hold: 401 invalid_token.
    client.edit(access_token=_mint(issuer, wrong_key=True, scope=SCOPE))
    grants = _refresh_grants(issuer)
    done = client.cli("call", "demo", "echo", "text=renewed")
    assert done.returncode == 0, done.stderr
    assert "renewed" in done.stdout
    assert _refresh_grants(issuer) == grants + 1  # one renewal, one request sent again
    after = client.kept()
    assert after["access_token"] not in (before["access_token"],)
    assert after["refresh_token"] != before["refresh_token"]  # the fixture rotates it
    assert stat.S_IMODE(os.stat(client.store).st_mode) == 0o600


def test_insufficient_scope_names_the_scope(client: Client, daemon: Daemon, issuer: str) -> None:
    client.login()
    client.edit(access_token=_mint(issuer, aud=_resource(daemon), scope="other"))
    done = client.cli("servers")
    assert done.returncode == EX_SIGN_IN, done.stderr
    assert f"needs the scopes {SCOPE}" in done.stderr
    assert f"mcpx auth login --daemon {client.endpoint}" in done.stderr


def test_the_environment_token_wins(client: Client, daemon: Daemon, issuer: str) -> None:
    client.login()
    token = _mint(issuer, aud=_resource(daemon), scope=SCOPE, sub="from-the-environment")
    status = client.cli("status", "--json", MCPX_DAEMON_TOKEN=token)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["auth"] == "environment"
    said = client.cli("auth", "status", "--daemon", MCPX_DAEMON_TOKEN=token)
    assert "signed in as user-" in said.stdout
    assert "$MCPX_DAEMON_TOKEN is set: commands send it instead" in said.stdout
    # A refused one is said as the environment's, and the kept sign-in stays.
    refused = client.cli("servers", MCPX_DAEMON_TOKEN="not-a-token")
    assert refused.returncode == EX_SIGN_IN, refused.stderr
    assert "refused the token in $MCPX_DAEMON_TOKEN" in refused.stderr
    assert client.kept()["subject"].startswith("user-")
    _assert_nowhere([token], client, daemon)


def test_logout_forgets_the_sign_in_saying_whether_it_was_revoked(
    client: Client, issuer: str
) -> None:
    client.login()
    out = client.cli("auth", "logout", "--daemon")
    assert out.returncode == 0, out.stderr
    # The SDK's /revoke wants the client's secret in the form, where mcpx.oauth's
    # revocation sends it as HTTP Basic (the client's registered method): said, not hidden.
    said = f"signed out of the daemon at {client.endpoint} (its tokens "
    assert out.stdout.startswith(said), out.stdout
    assert f"revoked at {issuer})" in out.stdout or f"not revoked by {issuer})" in out.stdout
    assert json.loads(client.store.read_text())["logins"] == {}
    assert stat.S_IMODE(os.stat(client.store).st_mode) == 0o600
    again = client.cli("servers")
    assert again.returncode == EX_SIGN_IN, again.stderr
    twice = client.cli("auth", "logout", "--daemon")
    assert f"was not signed in to the daemon at {client.endpoint}" in twice.stdout


# -- short-lived tokens, revocation ----------------------------------------------------------


def test_an_expiring_token_is_renewed_before_it_is_sent(
    short_client: Client, short_issuer: str
) -> None:
    c = short_client
    c.login()
    first = c.kept()
    assert first["expires_at"] - first["issued_at"] <= SHORT_TTL + 1
    wait_until(lambda: time.time() > first["expires_at"], timeout=SHORT_TTL + 30, message="expiry")
    grants = _refresh_grants(short_issuer)
    done = c.cli("call", "demo", "echo", "text=still-signed-in")
    assert done.returncode == 0, done.stderr
    assert "still-signed-in" in done.stdout
    # Renewed before the first request; a command slower than half the short lifetime
    # renews again as it goes.
    assert _refresh_grants(short_issuer) >= grants + 1
    assert c.kept()["access_token"] != first["access_token"]


def test_revoked_at_the_issuer_is_exit_9_and_the_sign_in_dropped(
    short_client: Client, short_issuer: str
) -> None:
    c = short_client
    c.login()
    assert httpx.post(short_issuer + "/admin/revoke-all", timeout=30).status_code == 200
    done = c.cli("servers")
    assert done.returncode == EX_SIGN_IN, done.stderr
    assert f"the sign-in to the daemon at {c.endpoint} has ended" in done.stderr
    assert f"mcpx auth login --daemon {c.endpoint}" in done.stderr
    assert json.loads(c.store.read_text())["logins"] == {}
    status = c.cli("auth", "status", "--daemon", "--json")
    assert json.loads(status.stdout)["signedIn"] is False
