"""A real daemon and Debian's chromium, driven by Playwright, for the web console's tests.

Chromium is the system's (``/usr/bin/chromium``, installed by scripts/peers.sh); nothing
is downloaded (no ``playwright install``). One daemon and one browser serve the module;
each test gets a fresh page, and its screenshots go to the run's temp dir.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import everything_server_command

CHROMIUM = Path("/usr/bin/chromium")
_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Modern only: the pages show its era, and a probe raced by initialize on a loaded machine
# (a start slower than upstream.probeTimeout) may class this dual-era server legacy.
DEMO = {
    "command": sys.executable,
    "args": ["-m", "mcpx", "demo-server"],
    "protocol": "force-discover",
}
HOSTILE = {"command": sys.executable, "args": [str(FIXTURES / "hostile_text_server.py")]}


def _scripted(log: Path) -> dict[str, Any]:
    """The scripted asker: its ``ask`` tool puts mcpx the questions it is given."""
    return {"command": sys.executable, "args": [str(FIXTURES / "asker_server.py"), str(log)]}


# A loaded machine (two CPUs, other suites beside) is slow, not wrong.
expect.set_options(timeout=30_000)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("console")
    servers = {"demo": DEMO, "asker": sdk_entry("1.23.3"), "hostile": HOSTILE}
    servers["scripted"] = _scripted(tmp / "scripted.jsonl")
    with running_daemon(tmp, servers) as running:
        yield running


@pytest.fixture(scope="module")
def everything_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The demo and npm server-everything: prompts, resources, templates and blobs, and
    tools that ask (URL-mode elicitation, sampling)."""
    argv = everything_server_command("stdio")
    servers = {"demo": DEMO, "everything": {"command": argv[0], "args": argv[1:]}}
    with running_daemon(tmp_path_factory.mktemp("console-everything"), servers) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: run scripts/peers.sh (Debian's chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=_ARGS, headless=True
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests' screenshots go (printed, so a person can look at them)."""
    folder = tmp_path_factory.mktemp("console-screenshots")
    print(f"console screenshots: {folder}")
    return folder


@pytest.fixture
def dialogs() -> list[str]:
    """The messages of every dialog the test's page opened (there must be none)."""
    return []


@pytest.fixture
def page(browser: Browser, dialogs: list[str]) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()

    def dialog(shown: Any) -> None:
        dialogs.append(shown.message)
        shown.dismiss()

    # No page of the console may ever open a dialog (an alert() run from upstream text).
    opened.on("dialog", dialog)
    opened.set_default_timeout(30_000)
    yield opened
    context.close()
    assert not dialogs, f"the page opened dialogs: {dialogs}"
