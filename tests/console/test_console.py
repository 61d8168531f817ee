"""The web console at /ui, in a real browser against a real daemon.

Each test opens one page of the console, does what a person would (fill a tool's form,
answer a question, watch events) and checks what the page shows; screenshots of every
page go to the run's temp dir (``shots``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from support.daemon import Daemon
from support.waiting import wait_until

MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _url(daemon: Daemon, page: str = "") -> str:
    return f"{daemon.info['url'].rstrip('/')}/ui{page}"


def _open_tool(page: Page, daemon: Daemon, search: str, name: str) -> None:
    page.goto(_url(daemon, "#tools"))
    page.get_by_label("Search tools").fill(search)
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator(".tool-list .tool-name").get_by_text(name, exact=True).click()
    expect(page.locator(".tool h3")).to_have_text(name.replace("/", " / "))


def _call(daemon: Daemon, server: str, tool: str, arguments: dict[str, object]) -> None:
    with daemon.http() as api:
        body = {"server": server, "tool": tool, "arguments": arguments}
        assert api.post("/v1/call", json=body).status_code == 200


def test_servers_page_shows_the_demo_ready(page: Page, daemon: Daemon, shots: Path) -> None:
    _call(daemon, "demo", "add", {"a": 1, "b": 1})  # the instance starts on first use
    page.goto(_url(daemon))
    row = page.locator("tr", has=page.locator("th", has_text="demo"))
    expect(row.locator(".state")).to_have_text("ready")
    expect(row).to_contain_text("modern")
    expect(row).to_contain_text("pid ")
    page.screenshot(path=shots / "servers.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.screenshot(path=shots / "servers-phone.png", full_page=True)


def test_add_form_calls_the_tool_and_shows_the_sum(page: Page, daemon: Daemon, shots: Path) -> None:
    _open_tool(page, daemon, "add two numbers", "demo/add")
    page.get_by_label("a", exact=True).fill("2.5")
    page.get_by_label("b", exact=True).fill("40")
    page.get_by_role("button", name="Call").click()
    result = page.locator(".result")
    expect(result.locator("pre.text").first).to_have_text("42.5")
    expect(result).to_contain_text("structuredContent")
    page.screenshot(path=shots / "tools-add.png", full_page=True)


def test_an_invalid_value_shows_the_fields_message(page: Page, daemon: Daemon, shots: Path) -> None:
    _open_tool(page, daemon, "wait a while", "demo/slow")
    page.get_by_label("seconds", exact=True).fill("9999")  # the schema's maximum is 600
    page.get_by_role("button", name="Call").click()
    field = page.locator('[data-field="seconds"]')
    expect(field.locator(".error")).to_contain_text("9999 is greater than the maximum of 600")
    expect(field.locator("input")).to_have_attribute("aria-invalid", "true")
    expect(page.locator('[data-field="steps"] .error')).to_be_hidden()
    page.screenshot(path=shots / "tools-invalid.png", full_page=True)


def test_a_slow_call_shows_its_progress(page: Page, daemon: Daemon, shots: Path) -> None:
    _open_tool(page, daemon, "wait a while", "demo/slow")
    page.get_by_label("seconds", exact=True).fill("3")
    page.get_by_label("steps", exact=True).fill("3")
    page.get_by_role("button", name="Call").click()
    status = page.locator(".progress [role=status]")
    # Seen while the call runs (each step takes a second), before any result.
    expect(status).to_contain_text(re.compile(r"progress [12] of 3"))
    expect(page.locator(".result")).to_have_count(0)
    page.screenshot(path=shots / "tools-progress.png", full_page=True)
    expect(page.locator(".result")).to_contain_text("slept 3 s in 3 steps")
    expect(status).to_contain_text("step 3 of 3")
    expect(page.locator(".progress progress")).to_have_attribute("value", "3")


def test_a_question_answered_in_the_browser_completes_the_cli_call(
    page: Page, daemon: Daemon, shots: Path
) -> None:
    # The CLI cannot be asked in-band: it exits 75 and the call goes on as a task.
    asked = daemon.cli("call", "asker", "ask", "question=colour?")
    assert asked.returncode == 75, asked.stderr
    task = re.search(r"mcpx task result (\S+)", asked.stderr)
    assert task, asked.stderr
    page.goto(_url(daemon, "#questions"))
    card = page.locator("article.question", has_text="asks: colour?")
    expect(card).to_be_visible()
    expect(page.locator("#question-count")).to_have_text("1")
    page.screenshot(path=shots / "questions.png", full_page=True)
    card.get_by_label("Answer").fill("ultramarine")
    card.get_by_role("button", name="Accept").click()
    expect(card).to_have_count(0)  # answered: gone from the page
    result = daemon.cli("task", "result", task.group(1))
    assert result.returncode == 0, result.stderr
    assert "ultramarine" in result.stdout


# A 2025-11-25 form with each primitive type, titled enums (oneOf and enumNames) and defaults.
_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "size": {
            "type": "string",
            "title": "Size",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
        },
        "tone": {
            "type": "string",
            "title": "Tone",
            "enum": ["w", "c"],
            "enumNames": ["Warm", "Cool"],
        },
    },
    "required": ["age", "size"],
}
_QUESTIONS = [
    {"method": "elicitation/create", "params": {"message": "About you?", "requestedSchema": _FORM}},
    {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say <b>hi</b>"}}],
            "maxTokens": 20,
        },
    },
]


def test_questions_render_their_forms_refuse_a_bad_answer_and_take_a_good_one(
    page: Page, daemon: Daemon, shots: Path
) -> None:
    with daemon.http() as api:
        body = {"server": "scripted", "tool": "ask", "arguments": {"requests": _QUESTIONS}}
        parked = api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})
    assert parked.status_code == 202, parked.text
    task = parked.json()["task"]["id"]
    page.goto(_url(daemon, "#questions"))
    form = page.locator("article.question", has_text="About you?")
    expect(form.get_by_label("Your name")).to_have_value("Ada")
    expect(form.get_by_label("Subscribe")).to_be_checked()
    expect(form.get_by_label("Size").locator("option")).to_have_text(["—", "Small", "Large"])
    expect(form.get_by_label("Tone").locator("option")).to_have_text(["—", "Warm", "Cool"])
    sampled = page.locator("article.question", has_text="sampling/createMessage")
    expect(sampled.locator(".messages")).to_have_text("user: Say <b>hi</b>")
    page.screenshot(path=shots / "questions-forms.png", full_page=True)
    form.get_by_label("Age").fill("200")  # above the schema's maximum
    form.get_by_label("Size").select_option(label="Large")
    form.get_by_role("button", name="Accept").click()
    # Refused by the broker against the schema, the field named; the question stays open.
    refusal = form.locator('[data-field="age"] .error')
    expect(refusal).to_contain_text("age: 200 is greater than the maximum of 150")
    expect(form.get_by_label("Age")).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=shots / "questions-refused.png", full_page=True)
    form.get_by_label("Age").fill("36")
    form.get_by_label("Tone").select_option(label="Cool")
    form.get_by_role("button", name="Accept").click()
    expect(form).to_have_count(0)
    sampled.get_by_label("Your reply").fill("hello there")
    sampled.get_by_role("button", name="Accept").click()
    expect(sampled).to_have_count(0)
    result = daemon.cli("task", "result", task)
    assert result.returncode == 0, result.stderr
    answers = result.stdout
    for said in ('"age": 36', '"size": "l"', '"tone": "c"', '"name": "Ada"', "hello there"):
        assert said in answers.replace('\\"', '"'), answers


def test_upstream_markup_renders_as_text(
    page: Page, daemon: Daemon, shots: Path, dialogs: list[str]
) -> None:
    _open_tool(page, daemon, "says things", "hostile/shout")
    expect(page.locator(".tool .description")).to_have_text(f"Says things. {MARKUP}")
    expect(page.locator('[data-field="text"] .help')).to_contain_text(MARKUP)
    page.get_by_label("text", exact=True).fill("<b onmouseover=alert(3)>hi</b>")
    page.get_by_role("button", name="Call").click()
    expect(page.locator(".result pre.text")).to_have_text(
        f"{MARKUP} <b onmouseover=alert(3)>hi</b>"
    )
    # Nothing of it became markup: no image from it, no bold, no script ran.
    assert page.locator("main img").count() == 0
    assert page.locator("main b, main script").count() == 0
    assert dialogs == []
    page.screenshot(path=shots / "tools-hostile.png", full_page=True)


def test_the_events_page_shows_a_calls_events(page: Page, daemon: Daemon, shots: Path) -> None:
    page.goto(_url(daemon, "#events"))
    expect(page.get_by_role("status")).to_have_text("connected")
    page.get_by_label("Server").fill("demo")
    _call(daemon, "demo", "add", {"a": 20, "b": 22})
    row = page.locator("tr[data-kind='call.finished']").first
    expect(row).to_contain_text("demo")
    expect(row).to_contain_text('"tool":"add"')
    page.get_by_role("button", name="Pause").click()
    _call(daemon, "demo", "add", {"a": 1, "b": 2})
    expect(page.get_by_role("status")).to_contain_text("paused · ")
    page.screenshot(path=shots / "events.png", full_page=True)


def test_the_calls_page_shows_the_log_tasks_and_stats(
    page: Page, daemon: Daemon, shots: Path
) -> None:
    _call(daemon, "demo", "add", {"a": 3, "b": 4})
    page.goto(_url(daemon, "#calls"))
    expect(page.locator("table").first).to_contain_text("demo")
    page.get_by_role("button", name=re.compile("^details of call ")).first.click()
    expect(page.locator(".detail dl").first).to_contain_text("upstream_ms")
    expect(page.locator("svg.chart")).to_be_visible()
    expect(page.locator("svg.chart")).to_contain_text("demo/add")
    page.screenshot(path=shots / "calls.png", full_page=True)


def test_a_state_changing_request_from_a_browser_needs_the_console_token(
    page: Page, daemon: Daemon
) -> None:
    url = daemon.info["url"].rstrip("/")
    origin = url  # even the daemon's own origin: what matters is the token
    body = {"server": "demo", "tool": "add", "arguments": {"a": 1, "b": 2}}
    with httpx.Client(base_url=url, timeout=60) as tcp:
        token = re.search(r'name="mcpx-console-token" content="([^"]+)"', tcp.get("/ui").text)
        assert token
        refused = tcp.post("/v1/call", json=body, headers={"Origin": origin})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "console_token_required"
        assert "X-Mcpx-Console-Token" in refused.json()["error"]["message"]
        wrong = {"Origin": origin, "X-Mcpx-Console-Token": "x" + token.group(1)}
        assert tcp.post("/v1/call", json=body, headers=wrong).status_code == 403
        right = {"Origin": origin, "X-Mcpx-Console-Token": token.group(1)}
        assert tcp.post("/v1/call", json=body, headers=right).status_code == 200
        assert tcp.post("/v1/call", json=body).status_code == 200  # no Origin: the CLI's way
        assert tcp.get("/v1/servers", headers={"Origin": origin}).status_code == 200  # a read
    # A page of another loopback origin (allowed by the Origin rule) posts to the daemon.
    with _other_page() as other:
        page.goto(other)
        status = _post_from_page(page, url)
    assert status == 403
    # Refused by the front door, as the two above were: no call ran.
    wait_until(
        lambda: _refusals(daemon) == 3,
        message=lambda: f"3 refusals logged, not {_refusals(daemon)}",
    )


def _refusals(daemon: Daemon) -> int:
    lines = daemon.log_lines()
    return sum(
        "POST /v1/call" in str(line.get("msg")) and "console_token_required" in str(line.get("msg"))
        for line in lines
    )


@contextmanager
def _other_page() -> Iterator[str]:
    """The URL of a page served from another loopback port (another origin)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><p>another site</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _post_from_page(page: Page, url: str) -> int:
    """The status the daemon answered a no-cors POST the page sent to /v1/call."""
    with page.expect_response(f"{url}/v1/call") as seen:
        page.evaluate(
            "url => fetch(url, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': "
            "'text/plain'}, body: JSON.stringify({server: 'demo', tool: 'add', arguments: {}})})"
            ".then(r => r.type, e => String(e))",
            f"{url}/v1/call",
        )
    return seen.value.status


def test_the_page_is_served_with_a_strict_policy(daemon: Daemon) -> None:
    url = daemon.info["url"].rstrip("/")
    with httpx.Client(base_url=url, timeout=60) as tcp:
        ui = tcp.get("/ui")
        policy = ui.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert ui.headers["content-type"].startswith("text/html")
        script = tcp.get("/ui/static/console.js")
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        assert tcp.get("/ui/static/console.css").headers["content-type"].startswith("text/css")
        # Every file shipped beside the page is served (a module the page imports, too).
        shipped = resources.files("mcpx.daemon").joinpath("console")
        for name in (f.name for f in shipped.iterdir() if f.name.endswith((".js", ".css"))):
            assert tcp.get(f"/ui/static/{name}").status_code == 200, name
        assert tcp.get("/ui/static/..%2F_console.py").status_code == 404
        assert tcp.get("/ui/static/nothing.js").status_code == 404
        root = tcp.get("/")
        assert root.status_code == 200 and 'href="/ui"' in root.text


def test_mcpx_ui_prints_the_consoles_address(daemon: Daemon) -> None:
    shown = daemon.cli("ui", "--no-browser")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == _url(daemon)
    with httpx.Client(timeout=60) as tcp:
        page = tcp.get(shown.stdout.strip())
    assert page.status_code == 200 and "<title>mcpx console</title>" in page.text
