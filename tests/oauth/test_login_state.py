"""What mcpx says of an OAuth server's sign-in, through a real daemon and the real
authorization server (``tests/fixtures/oauth_server.py``): ``/v1/servers`` and
``mcpx servers``, ``mcpx doctor`` with and without a daemon, and a refresh endpoint
that keeps failing ending in "login needed" after a bounded number of tries.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from oauth.test_daemon_login import EX_LOGIN, _entry, login_pasted, stored_secrets
from support.daemon import Daemon, running_daemon
from support.oauth_server import oauth_server
from support.waiting import wait_until

EX_BROKEN = 8  # mcpx doctor: something is broken


def _servers(d: Daemon) -> dict[str, dict[str, Any]]:
    with d.http() as v1:
        return {s["name"]: s for s in v1.get("/v1/servers").json()["servers"]}


def _doctor(d: Daemon) -> tuple[int, dict[str, Any]]:
    done = d.cli("doctor", "--json")
    return done.returncode, json.loads(done.stdout)


def test_servers_and_doctor_tell_the_sign_in(tmp_path: Path) -> None:
    with oauth_server() as issuer:
        servers = {"demo-oauth": _entry(issuer), "other-oauth": _entry(issuer)}
        with running_daemon(tmp_path, servers) as d:
            before = _servers(d)["demo-oauth"]["auth"]
            assert before["state"] == "login needed" and before["why"]
            assert before["command"] == "mcpx auth login demo-oauth"
            assert login_pasted(d, "demo-oauth", []).returncode == 0
            views = _servers(d)
            assert views["demo-oauth"]["auth"]["state"] == "logged in"
            assert views["demo-oauth"]["auth"]["why"] is None
            assert views["other-oauth"]["auth"]["state"] == "login needed"
            table = d.cli("servers")
            assert table.returncode == 0, table.stderr
            assert "demo-oauth: oauth logged in" in table.stdout
            assert "other-oauth: oauth login needed" in table.stdout
            assert "run mcpx auth login other-oauth" in table.stdout

            # The daemon's sign-ins: the one logged in to is started and answers, the
            # other is a problem whose fix is the login, not a broken server.
            code, report = _doctor(d)
            assert code == EX_BROKEN
            rows = {s["name"]: s for s in report["servers"]}
            assert rows["demo-oauth"]["ok"] is True and rows["demo-oauth"]["tools"] == 2
            assert rows["demo-oauth"]["authState"] == "logged in"
            assert rows["other-oauth"]["loginNeeded"] is True
            [problem] = report["problems"]
            assert "login needed" in problem["what"] and "other-oauth" in problem["what"]
            assert problem["fix"] == "mcpx auth login other-oauth"
            secrets = stored_secrets(d.state)
            assert secrets and not any(s in json.dumps(report) for s in secrets)
            assert not any(s in json.dumps(views) + table.stdout for s in secrets)
        # No daemon now: doctor reads the token store itself, read-only.
        code, report = _doctor(d)
        rows = {s["name"]: s for s in report["servers"]}
        assert report["daemon"]["running"] is False
        assert rows["demo-oauth"]["ok"] is True and rows["demo-oauth"]["tools"] == 2
        assert rows["other-oauth"]["loginNeeded"] is True
        assert [p["fix"] for p in report["problems"]] == ["mcpx auth login other-oauth"]


def test_a_failing_refresh_endpoint_ends_in_login_needed(tmp_path: Path) -> None:
    with (
        oauth_server("--token-ttl", "3") as issuer,
        running_daemon(tmp_path, {"demo-oauth": _entry(issuer)}) as d,
    ):
        assert login_pasted(d, "demo-oauth", []).returncode == 0
        assert d.cli("call", "demo-oauth", "whoami").returncode == 0
        failing = httpx.post(issuer + "/admin/fail-refresh", json={"status": 503}, timeout=30)
        assert failing.status_code == 200
        db = sqlite3.connect(d.state / "oauth.db")
        (data,) = db.execute("SELECT data FROM tokens").fetchone()
        db.close()
        expires = float(json.loads(data)["expires_at"])
        wait_until(lambda: time.time() > expires + 0.2, timeout=10)

        after = d.cli("call", "demo-oauth", "whoami")
        assert after.returncode == EX_LOGIN, after.stderr
        assert "the token refresh failed 3 times" in after.stderr
        assert "HTTP 503" in after.stderr and "mcpx auth login demo-oauth" in after.stderr

        def stats() -> dict[str, Any]:
            got: dict[str, Any] = httpx.get(issuer + "/admin/stats", timeout=30).json()
            return got

        assert stats()["refreshFailures"] == 3  # bounded: no loop
        again = d.cli("call", "demo-oauth", "whoami")
        assert again.returncode == EX_LOGIN, again.stderr
        assert stats()["refreshFailures"] == 3  # given up on: not tried again
        assert stats()["refreshGrants"] == 0
        with d.http() as v1:
            [row] = v1.get("/v1/auth").json()["servers"]
            assert row["needsLogin"] is True
        assert _servers(d)["demo-oauth"]["auth"]["state"] == "login needed"
