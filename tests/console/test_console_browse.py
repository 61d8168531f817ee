"""The console's Prompts and Resources pages, in a real browser against a real daemon
(the demo and npm server-everything).

A prompt's arguments are a form (required marked, a missing one refused with the field
named), Get renders the messages by content type (text as text, embedded resources);
resources and templates are listed, Read renders text, and a blob is offered as a
download of its size, never dumped into the page.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from support.daemon import Daemon


def _url(daemon: Daemon, page: str = "") -> str:
    return f"{daemon.info['url'].rstrip('/')}/ui{page}"


def _phone(page: Page, shots: Path, name: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=shots / f"{name}-phone.png", full_page=True)


def test_a_prompt_is_filled_in_refused_without_its_argument_and_got(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    page.goto(_url(everything_daemon, "#prompts"))
    expect(page.locator(".tool-list .tool-name")).to_contain_text(["demo/hello"])
    page.get_by_label("Server").select_option("everything")
    names = page.locator(".tool-list .tool-name")
    expect(names).to_have_text(
        [f"everything/{n}-prompt" for n in ("simple", "args", "completable", "resource")]
    )
    page.get_by_label("Server").select_option("")
    page.get_by_label("Filter prompts").fill("greet")
    expect(names).to_have_text(["demo/hello"])
    names.first.click()
    prompt = page.locator("section.prompt")
    expect(prompt.locator("h3")).to_have_text("demo / hello")
    field = prompt.locator('[data-field="name"]')
    expect(field.locator(".required")).to_have_text(" *")
    expect(prompt.get_by_label("Name")).to_have_attribute("aria-required", "true")
    prompt.get_by_role("button", name="Get").click()
    # The daemon refuses it (400) and names the argument; the page shows it at the field.
    expect(field.locator(".error")).to_contain_text("needs the argument(s) name")
    prompt.get_by_label("Name").fill("<b>Ada</b>")
    prompt.get_by_role("button", name="Get").click()
    messages = prompt.locator(".result .messages")
    expect(messages).to_have_text("user: Please greet <b>Ada</b> warmly, in one short sentence.")
    assert prompt.locator("b").count() == 0  # the name stayed text
    page.screenshot(path=shots / "prompts.png", full_page=True)
    _phone(page, shots, "prompts")


def test_a_prompts_embedded_resource_is_rendered(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    page.goto(_url(everything_daemon, "#prompts"))
    page.locator(".tool-list .tool-name").get_by_text("everything/resource-prompt").click()
    prompt = page.locator("section.prompt")
    prompt.get_by_label("resourceType").fill("Text")
    prompt.get_by_label("resourceId").fill("1")
    prompt.get_by_role("button", name="Get").click()
    embedded = prompt.locator(".messages .content.resource")
    expect(embedded.locator(".meta")).to_contain_text(
        "Embedded resource demo://resource/dynamic/text/1 (text/plain)"
    )
    expect(embedded.locator("pre.text")).to_contain_text("Resource 1: This is a plaintext resource")
    page.screenshot(path=shots / "prompts-embedded.png", full_page=True)


def test_resources_and_templates_are_read(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    page.goto(_url(everything_daemon, "#resources"))
    listed = page.locator(".tool-list .tool-name")
    expect(listed.get_by_text("demo demo://readme", exact=True)).to_be_visible()
    expect(listed.get_by_text("demo demo://greeting/{name}", exact=True)).to_be_visible()
    listed.get_by_text("demo demo://readme", exact=True).click()
    resource = page.locator("section.resource")
    resource.get_by_role("button", name="Read").click()
    expect(resource.locator(".result .meta")).to_contain_text(
        "Resource demo://readme (text/markdown)"
    )
    expect(resource.locator(".result pre.text")).to_contain_text("mcpx")
    page.screenshot(path=shots / "resources.png", full_page=True)

    listed.get_by_text("demo demo://greeting/{name}", exact=True).click()
    template = page.locator("section.template")
    template.get_by_role("button", name="Read").click()
    expect(template.locator('[data-field="name"] .error')).to_have_text(
        "a value is needed to make the URI"
    )
    template.get_by_label("name", exact=True).fill("Grace Hopper")
    expect(template.locator(".help code")).to_have_text("demo://greeting/Grace%20Hopper")
    template.get_by_role("button", name="Read").click()
    expect(template.locator(".result pre.text")).to_contain_text("Grace Hopper")
    page.screenshot(path=shots / "resources-template.png", full_page=True)
    _phone(page, shots, "resources")


def test_a_blob_is_offered_as_a_download_not_dumped(
    page: Page, everything_daemon: Daemon, shots: Path
) -> None:
    page.goto(_url(everything_daemon, "#resources"))
    page.get_by_label("Filter resources and templates").fill("blob")
    page.locator(".tool-list .tool-name").get_by_text("demo://resource/dynamic/blob/").click()
    template = page.locator("section.template")
    template.get_by_label("resourceId", exact=True).fill("7")
    template.get_by_role("button", name="Read").click()
    link = template.locator(".result a.download")
    expect(link).to_have_text("Download 7")
    expect(template.locator(".result")).to_contain_text(re.compile(r"[0-9]+ bytes of text/plain"))
    assert (link.get_attribute("href") or "").startswith("blob:")
    assert template.locator(".result pre").count() == 0  # the base64 is not shown
    with page.expect_download() as fetched:
        link.click()
    saved = fetched.value.path()
    assert saved is not None and saved.read_bytes().startswith(b"Resource 7")
    page.screenshot(path=shots / "resources-blob.png", full_page=True)
