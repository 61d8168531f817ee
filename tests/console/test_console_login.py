"""The web console of a daemon whose port needs a token, in a real browser.

A browser cannot send ``Authorization``: without a login the page and the API refuse
(401) and say to run ``mcpx ui``; ``mcpx ui`` hands out a one-time link whose ticket is in
the fragment (never in a request line or the daemon's log), the page trades it for an
HttpOnly, SameSite=Strict session cookie, and that cookie is accepted only from the
console's own pages.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from support.daemon import Daemon, running_daemon

from .conftest import DEMO

_VAR = "CONSOLE_TEST_TOKEN"
_SETTINGS = {"daemon.auth": "token", "daemon.tokens": [f"ui={_VAR}"]}


@pytest.fixture(scope="module")
def token() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, token: str) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv(_VAR, token)
        tmp = tmp_path_factory.mktemp("console-token")
        with running_daemon(tmp, {"demo": DEMO}, _SETTINGS) as running:
            yield running


def _base(daemon: Daemon) -> str:
    return str(daemon.info["url"]).rstrip("/")


def _login_link(daemon: Daemon) -> str:
    shown = daemon.cli("ui", "--no-browser")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.strip().splitlines()
    assert lines[0] == f"{_base(daemon)}/ui"
    found = re.search(r"by opening: (\S+)$", lines[1])
    assert found, shown.stdout
    return found.group(1)


def test_without_a_login_the_page_and_the_api_say_to_run_mcpx_ui(
    page: Page, guarded: Daemon, shots: Path
) -> None:
    answer = page.goto(f"{_base(guarded)}/ui")
    assert answer is not None and answer.status == 401
    expect(page.locator("body")).to_contain_text("run `mcpx ui`")
    page.screenshot(path=shots / "login-refused.png", full_page=True)
    with httpx.Client(base_url=_base(guarded), timeout=60) as tcp:
        api = tcp.get("/v1/servers")
        assert api.status_code == 401
        assert "run `mcpx ui`" in api.json()["error"]["message"]
        assert tcp.get("/ui/static/console.js").status_code == 401
    page.goto(f"{_base(guarded)}/ui/login")  # the login page with no ticket says the same
    expect(page.get_by_role("status")).to_contain_text("run `mcpx ui`")


def test_mcpx_ui_logs_the_browser_in_once(
    browser: Browser, page: Page, guarded: Daemon, shots: Path
) -> None:
    link = _login_link(guarded)
    base, ticket = link.split("#", 1)
    assert base == f"{_base(guarded)}/ui/login" and len(ticket) >= 40
    page.goto(link)
    expect(page).to_have_url(f"{_base(guarded)}/ui")  # the ticket left the address bar
    row = page.locator("tr", has=page.locator("th", has_text="demo"))
    expect(row).to_contain_text("not running")  # /v1/servers answered the page
    [cookie] = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    # A state-changing /v1 request from the page: the tools form calls demo/add.
    page.goto(f"{_base(guarded)}/ui#tools")
    page.get_by_label("Search tools").fill("add two numbers")
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator(".tool-list .tool-name").get_by_text("demo/add", exact=True).click()
    page.get_by_label("a", exact=True).fill("40")
    page.get_by_label("b", exact=True).fill("2")
    page.get_by_role("button", name="Call").click()
    expect(page.locator(".result pre.text").first).to_have_text("42")
    page.goto(f"{_base(guarded)}/ui#events")
    expect(page.get_by_role("status")).to_have_text("connected")
    page.screenshot(path=shots / "login-events.png", full_page=True)
    # Used once: the same link in another browser is refused, and says what to do.
    other = browser.new_context()
    try:
        again = other.new_page()
        again.goto(link)
        expect(again.get_by_role("status")).to_contain_text("used already or has expired")
        expect(again.get_by_role("status")).to_contain_text("run `mcpx ui` again")
        assert other.cookies() == []
    finally:
        other.close()
    # The ticket was in no request line: the daemon's log never saw it.
    assert ticket not in (guarded.state / "daemon.log").read_text()


def test_the_session_cookie_counts_only_from_the_consoles_own_pages(
    page: Page, guarded: Daemon
) -> None:
    page.goto(_login_link(guarded))
    expect(page).to_have_url(f"{_base(guarded)}/ui")
    [cookie] = page.context.cookies()
    jar = {"Cookie": f"{cookie['name']}={cookie['value']}"}
    own = {**jar, "Sec-Fetch-Site": "same-origin"}
    port = str(guarded.info["url"]).rsplit(":", 1)[1]
    with httpx.Client(base_url=_base(guarded), timeout=60) as tcp:
        assert tcp.get("/v1/servers", headers=own).status_code == 200
        # Another port of the same host is same-site: SameSite=Strict sends it the cookie.
        elsewhere = {**jar, "Sec-Fetch-Site": "same-site"}
        assert tcp.get("/v1/servers", headers=elsewhere).status_code == 401
        another = {**own, "Origin": f"http://localhost:{int(port) + 1}"}
        assert tcp.get("/v1/servers", headers=another).status_code == 401
        assert tcp.get("/v1/servers", headers=jar).status_code == 401  # not a browser's
        # Not a page's to ask for: a ticket needs the token (or the unix socket).
        assert tcp.post("/ui/login/ticket", json={}, headers=own).status_code == 401
        # A state change still needs the form token beside the cookie.
        body = {"server": "demo", "tool": "add", "arguments": {"a": 1, "b": 2}}
        posted = {**own, "Origin": _base(guarded)}
        refused = tcp.post("/v1/call", json=body, headers=posted)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "console_token_required"


def test_sign_out_ends_the_session_for_every_copy_of_its_cookie(
    page: Page, guarded: Daemon, shots: Path
) -> None:
    page.goto(_login_link(guarded))
    expect(page).to_have_url(f"{_base(guarded)}/ui")
    [cookie] = page.context.cookies()
    copy = {"Cookie": f"{cookie['name']}={cookie['value']}", "Sec-Fetch-Site": "same-origin"}
    with httpx.Client(base_url=_base(guarded), timeout=60) as tcp:
        assert tcp.get("/v1/servers", headers=copy).status_code == 200
        # Not from a page elsewhere: the sign-out needs the console's form token too.
        forged = {**copy, "Origin": _base(guarded), "Content-Type": "application/json"}
        refused = tcp.post("/ui/logout", content=b"{}", headers=forged)
        assert refused.status_code == 403
        assert "console_token_required" in refused.text
        assert tcp.get("/v1/servers", headers=copy).status_code == 200
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("status")).to_contain_text("Signed out")
        expect(page.get_by_role("status")).to_contain_text("run `mcpx ui`")
        page.screenshot(path=shots / "signed-out.png", full_page=True)
        assert page.context.cookies() == []  # the browser dropped it
        # And the session is over here: a copy of the cookie opens nothing any more.
        assert tcp.get("/v1/servers", headers=copy).status_code == 401
        answer = page.goto(f"{_base(guarded)}/ui")
        assert answer is not None and answer.status == 401


def test_a_console_without_a_session_offers_no_sign_out(
    page: Page, guarded: Daemon, token: str
) -> None:
    page.goto(_login_link(guarded))
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    # Reached with the daemon's token instead of a session: nothing to sign out of.
    with httpx.Client(base_url=_base(guarded), timeout=60) as tcp:
        html = tcp.get("/ui", headers={"Authorization": f"Bearer {token}"}).text
    assert '<meta name="mcpx-console-signed-in" content="">' in html
