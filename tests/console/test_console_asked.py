"""The console's Events page across a dropped connection, and the Questions page's other
shapes (URL-mode elicitation, sampling), in a real browser against a real daemon.

The events page reads every kind the daemon sends (no list of kinds in the page) and,
after the browser went offline and came back, shows the events sent meanwhile exactly
once (Last-Event-ID). Questions are raised by npm server-everything during CLI calls,
answered in the page, and the CLI's calls complete with the answers.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from support.daemon import Daemon

CONSENT = "https://example.com/consent?step=1&who=mcpx"


def _url(daemon: Daemon, page: str = "") -> str:
    return f"{daemon.info['url'].rstrip('/')}/ui{page}"


def _add(daemon: Daemon, a: int, b: int) -> None:
    with daemon.http() as api:  # the unix socket: the browser's being offline is no matter
        body = {"server": "demo", "tool": "add", "arguments": {"a": a, "b": b}}
        assert api.post("/v1/call", json=body).status_code == 200


def _seqs(page: Page) -> list[int]:
    cells = page.locator("table.events tbody tr td:first-child").all_inner_texts()
    return [int(c) for c in cells if c.strip()]


def test_events_sent_while_offline_appear_once_after_the_reconnect(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    page.goto(_url(everything_daemon, "#events"))
    status = page.get_by_role("status")
    expect(status).to_have_text("connected")
    _add(everything_daemon, 1, 1)
    rows = page.locator("tr[data-kind='call.finished']")
    expect(rows).to_have_count(1)
    page.context.set_offline(True)
    expect(status).to_contain_text("connection lost")
    for n in range(3):
        _add(everything_daemon, n, 100)  # sent while the page cannot hear
    page.screenshot(path=shots / "events-offline.png", full_page=True)
    page.context.set_offline(False)
    expect(status).to_contain_text(re.compile(r"connected · resumed after event [0-9]+"))
    expect(rows).to_have_count(4)  # the three calls made meanwhile, each once
    # Every event the daemon sent since the page opened, each once: no seq missing, none twice.
    seqs = sorted(_seqs(page))
    assert seqs == list(range(seqs[0], seqs[-1] + 1)), seqs
    page.screenshot(path=shots / "events-resumed.png", full_page=True)


def test_a_url_question_is_a_link_answered_in_the_page(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    asked = everything_daemon.cli(
        "call", "everything", "trigger-url-elicitation", f"url={CONSENT}", "message=Consent, please"
    )
    assert asked.returncode == 75, asked.stderr
    task = re.search(r"mcpx task result (\S+)", asked.stderr)
    assert task, asked.stderr
    page.goto(_url(everything_daemon, "#questions"))
    card = page.locator("article.question", has_text="Consent, please")
    link = card.get_by_role("link")
    expect(link).to_have_text(CONSENT)  # the whole URL, as text, where it goes
    expect(link).to_have_attribute("href", CONSENT)
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    assert len(page.context.pages) == 1  # shown, not opened
    page.screenshot(path=shots / "questions-url.png", full_page=True)
    card.get_by_role("button", name="Done (accept)").click()
    expect(card).to_have_count(0)
    result = everything_daemon.cli("task", "result", task.group(1))
    assert result.returncode == 0, result.stderr
    assert "accept" in result.stdout, result.stdout


def test_a_sampling_question_shows_its_messages_and_takes_a_reply(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    asked = everything_daemon.cli(
        "call", "everything", "trigger-sampling-request", "prompt=Say <b>hi</b>"
    )
    assert asked.returncode == 75, asked.stderr
    task = re.search(r"mcpx task result (\S+)", asked.stderr)
    assert task, asked.stderr
    page.goto(_url(everything_daemon, "#questions"))
    card = page.locator("article.question", has_text="sampling/createMessage")
    expect(card.locator(".messages")).to_contain_text("user: ")
    expect(card.locator(".messages")).to_contain_text("Say <b>hi</b>")
    assert card.locator(".messages b").count() == 0
    page.screenshot(path=shots / "questions-sampling.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=shots / "questions-sampling-phone.png", full_page=True)
    card.get_by_label("Your reply").fill("hello from the page")
    card.get_by_role("button", name="Accept").click()
    expect(card).to_have_count(0)
    result = everything_daemon.cli("task", "result", task.group(1))
    assert result.returncode == 0, result.stderr
    assert "hello from the page" in result.stdout, result.stdout
