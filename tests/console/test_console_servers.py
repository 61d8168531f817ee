"""The console's Servers page starts, restarts and stops instances (issue 25), in a real
browser against a real daemon: through ``/v1/servers/{server}/…`` with the page's form
token, each process checked by its pid; a failure shown as text; keyboard operable."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from support.daemon import Daemon, running_daemon
from support.processes import process_gone
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
BROKEN = {
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stderr.write('console-fixture: no such database\\n')"],
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """This module's own daemon: its tests stop and restart what the others' use."""
    servers = {"demo": DEMO, "broken": BROKEN, "mine": {**DEMO, "scope": "identity"}}
    with running_daemon(tmp_path_factory.mktemp("console-servers"), servers) as running:
        yield running


def _instances(daemon: Daemon, server: str) -> list[dict[str, Any]]:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    [found] = [s for s in servers if s["name"] == server]
    return list(found["instances"])


def _stopped(daemon: Daemon, server: str) -> None:
    with daemon.http() as api:
        assert api.post(f"/v1/servers/{server}/stop", json={}).status_code == 200


def _row(page: Page, server: str) -> Locator:
    return page.locator(f'tbody[data-server="{server}"] tr').first


def _pid(daemon: Daemon) -> int:
    [inst] = _instances(daemon, "demo")
    return int(inst["pid"])


def test_start_restart_and_stop_from_the_servers_page(
    page: Page, daemon: Daemon, shots: Path
) -> None:
    _stopped(daemon, "demo")
    page.goto(f"{daemon.info['url'].rstrip('/')}/ui#servers")
    row = _row(page, "demo")
    expect(row).to_contain_text("not running")
    page.get_by_role("button", name="Start demo", exact=True).click()
    expect(row.locator(".state")).to_have_text("ready")
    first = _pid(daemon)
    expect(row).to_contain_text(f"pid {first}")
    expect(page.locator(".outcome")).to_contain_text("demo: instance ")
    page.screenshot(path=shots / "servers-started.png", full_page=True)

    page.get_by_role("button", name=re.compile(r"^Restart demo instance \d+$")).click()
    expect(page.locator(".outcome")).to_contain_text("stopped instance")
    wait_until(lambda: _pid(daemon) != first, timeout=30, message="a new pid")
    second = _pid(daemon)
    expect(row).to_contain_text(f"pid {second}")
    wait_until(lambda: process_gone(first), timeout=30, message="the old process gone")
    page.screenshot(path=shots / "servers-restarted.png", full_page=True)

    page.get_by_role("button", name=re.compile(r"^Stop demo instance \d+$")).click()
    expect(row).to_contain_text("not running: started on first use")
    expect(page.locator(".outcome")).to_contain_text("stopped instance")
    assert _instances(daemon, "demo") == []
    wait_until(lambda: process_gone(second), timeout=30, message="the stopped process gone")


def test_the_actions_work_from_the_keyboard(page: Page, daemon: Daemon) -> None:
    _stopped(daemon, "demo")
    page.goto(f"{daemon.info['url'].rstrip('/')}/ui#servers")
    start = page.get_by_role("button", name="Start demo", exact=True)
    start.focus()
    page.keyboard.press("Enter")
    row = _row(page, "demo")
    expect(row.locator(".state")).to_have_text("ready")
    # Focus stays on the server's buttons across the page's redraws: Tab reaches Stop.
    restart = page.get_by_role("button", name=re.compile(r"^Restart demo instance \d+$"))
    expect(restart).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name=re.compile(r"^Stop demo instance \d+$"))).to_be_focused()
    page.keyboard.press("Enter")
    expect(row).to_contain_text("not running")


def test_a_failed_start_is_shown_as_text(page: Page, daemon: Daemon, shots: Path) -> None:
    page.goto(f"{daemon.info['url'].rstrip('/')}/ui#servers")
    page.get_by_role("button", name="Start broken", exact=True).click()
    outcome = page.locator(".outcome")
    expect(outcome).to_have_class(re.compile(r"\berror\b"))
    expect(outcome).to_contain_text("broken: start failed: ")
    expect(outcome).to_contain_text(re.compile("no such database|not started again"))
    page.screenshot(path=shots / "servers-start-failed.png", full_page=True)


def test_a_server_scoped_per_identity_has_its_own_actions(page: Page, daemon: Daemon) -> None:
    page.goto(f"{daemon.info['url'].rstrip('/')}/ui#servers")
    rows = page.locator('tbody[data-server="mine"]')
    start = page.get_by_role("button", name=re.compile(r"^Start mine"))
    start.first.click()
    expect(rows.locator("tr.state-ready")).to_have_count(1)
    stop_all = page.get_by_role("button", name="Stop every instance of mine", exact=True)
    stop_all.click()
    expect(rows).to_contain_text("not running")
    assert _instances(daemon, "mine") == []


def test_a_foreign_page_cannot_stop_an_instance(daemon: Daemon) -> None:
    with daemon.http() as api:
        assert api.post("/v1/servers/demo/start", json={}).status_code == 200
    [before] = _instances(daemon, "demo")
    url = daemon.info["url"].rstrip("/")
    with httpx.Client(base_url=url, timeout=60) as tcp:
        for origin in ("http://127.0.0.1:9", "https://evil.example"):
            refused = tcp.post("/v1/servers/demo/stop", json={}, headers={"Origin": origin})
            assert refused.status_code == 403, refused.text
    [after] = _instances(daemon, "demo")
    assert after["id"] == before["id"] and not process_gone(int(after["pid"]))
