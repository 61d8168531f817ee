"""``mcpx elicit`` as a user runs it: real CLI processes against a real daemon whose
broker holds real questions.

A question comes from the official SDK's fixture server (1.23.3): its ``ask`` tool
elicits one string field ``answer``, its ``sample`` tool asks for a sampling reply. The
call is made by a /mcp session that declared no capabilities, in a thread: nobody
present can answer, so the question waits in the broker and the call blocks until the
CLI settles it; the call's result says what the server got. A question with a richer
schema (choices, integer, boolean, optional, multi-select) is put in the daemon's
broker file through the broker itself. Prompts are answered on a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import queue
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import httpx
import pytest

from mcpx.daemon import DaemonPaths
from mcpx.questions import Broker
from support.daemon import Daemon, running_daemon, sdk_entry
from support.signals import interruptible

REV = "2025-11-25"
ATTEMPTS = 200  # polls of /v1/questions, 50 ms apart at most
WAIT = 30.0  # seconds a process gets to print what is expected of it


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("cli-elicit"), {"sdk": sdk_entry("1.23.3")}) as d:
        yield d


# -- questions ---------------------------------------------------------------------


@dataclass
class Asked:
    """A call blocked on a question in the broker."""

    daemon: Daemon
    thread: threading.Thread
    outcome: list[Any] = field(default_factory=list)
    question: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.question["id"])

    def text(self) -> str:
        """What the server got, as its tool returned it (once the call is over)."""
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the call did not end"
        [response] = self.outcome
        assert isinstance(response, httpx.Response), response
        return str(response.json()["result"]["content"][0]["text"])

    def state(self) -> str:
        with self.daemon.http() as api:
            return str(api.get(f"/v1/questions/{self.id}").json()["state"])


def _pending(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.http() as api:
        found: list[dict[str, Any]] = api.get("/v1/questions").json()["questions"]
        return found


@contextmanager
def asked(daemon: Daemon, tool: str, arguments: dict[str, Any]) -> Iterator[Asked]:
    """Call ``tool`` on sdk from a host that can be asked nothing; the question it
    leaves in the broker. Cancelled at the end if still open; the call always joined."""
    before = {q["id"] for q in _pending(daemon)}
    outcome: list[Any] = []

    def call() -> None:
        init = {"protocolVersion": REV, "capabilities": {}}
        init["clientInfo"] = {"name": "t", "version": "1"}
        try:
            with httpx.Client(base_url=daemon.info["url"], timeout=90) as mcp:
                first = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
                r = mcp.post("/mcp", json=first)
                headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
                headers["MCP-Protocol-Version"] = REV
                args = {"server": "sdk", "tool": tool, "arguments": arguments}
                params = {"name": "mcpx_call", "arguments": args}
                body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
                outcome.append(mcp.post("/mcp", json=body, headers=headers))
        except Exception as exc:  # reported by text(), not lost in the thread
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    found = Asked(daemon, thread, outcome)
    try:
        for _ in range(ATTEMPTS):
            new = [q for q in _pending(daemon) if q["id"] not in before]
            if new:
                [found.question] = new
                break
            thread.join(timeout=0.05)
        assert found.question, f"no question arrived ({outcome})"
        yield found
    finally:
        if found.question:
            with daemon.http() as api:
                api.post(f"/v1/questions/{found.id}/cancel")  # 409 when settled: fine
        thread.join(timeout=60)
        assert not thread.is_alive()


RICH = {
    "message": "rich (via mcpx) asks: set it up",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "color": {
                "type": "string",
                "title": "Colour",
                "oneOf": [{"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}],
            },
            "count": {"type": "integer", "minimum": 1, "description": "How many"},
            "ok": {"type": "boolean", "title": "Proceed"},
            "note": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        },
        "required": ["color", "count", "ok"],
    },
}


@contextmanager
def rich_question(daemon: Daemon) -> Iterator[str]:
    """A pending question with every field type, put in the daemon's broker file."""
    broker = Broker(DaemonPaths(daemon.state).questions)
    try:
        # A message of its own each time: the broker takes over an earlier process's
        # question that asks the very same (this broker is another process's, to it).
        params = {**RICH, "message": f"{RICH['message']} ({secrets.token_hex(4)})"}
        question = broker.ask("rich", "elicitation/create", params, identity=None, routing="test")
        yield question.id
    finally:
        broker.close()
        with daemon.http() as api:
            api.post(f"/v1/questions/{question.id}/cancel")


def _shown(daemon: Daemon, qid: str) -> dict[str, Any]:
    with daemon.http() as api:
        found: dict[str, Any] = api.get(f"/v1/questions/{qid}").json()
        return found


# -- list, show, answer, decline, cancel ----------------------------------------------


def test_list_show_and_answer_with_key_value(daemon: Daemon) -> None:
    with asked(daemon, "ask", {"question": "favourite colour?"}) as q:
        listed = daemon.cli("elicit", "list")
        assert listed.returncode == 0, listed.stderr
        [line] = [ln for ln in listed.stdout.splitlines() if q.id in ln]
        assert line.startswith(f"{q.id}  sdk     elicitation/create  ")
        assert line.endswith("s  sdk (via mcpx) asks: favourite colour?")  # after the time left
        assert listed.stdout.splitlines()[0].split() == [
            "ID",
            "SERVER",
            "METHOD",
            "LEFT",
            "QUESTION",
        ]

        as_json = json.loads(daemon.cli("elicit", "list", "--json").stdout)
        assert [x["id"] for x in as_json["questions"]] == [q.id]

        shown = daemon.cli("elicit", "show", q.id)
        assert shown.returncode == 0, shown.stderr
        out = shown.stdout
        assert f"Question {q.id}  (pending, " in out
        assert "server:   sdk" in out and "method:   elicitation/create" in out
        assert "message:  sdk (via mcpx) asks: favourite colour?" in out
        assert "routing:  broker: no host could be asked" in out
        assert "answer  string, required" in out
        assert f"mcpx elicit answer {q.id} answer=<string>" in out
        assert f"""mcpx elicit answer {q.id} --json '{{"answer": "<string>"}}'""" in out
        assert f"mcpx elicit decline {q.id}" in out and f"mcpx elicit cancel {q.id}" in out
        detail = json.loads(daemon.cli("elicit", "show", q.id, "--json").stdout)
        assert detail["state"] == "pending" and 0 < detail["timeLeft"] <= 120

        done = daemon.cli("elicit", "answer", q.id, "answer=blue")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == (
            f'answered {q.id} (sdk): {{"action": "accept", "content": {{"answer": "blue"}}}}'
        )
        assert q.text() == "blue"
        assert q.state() == "answered"
    empty = daemon.cli("elicit", "list")
    assert (empty.returncode, empty.stdout.strip()) == (0, "no questions are waiting")


@pytest.mark.obligation("C-ELIC-9")
def test_a_wrong_answer_names_the_field_and_the_question_stays_open(daemon: Daemon) -> None:
    with asked(daemon, "ask", {"question": "ok?"}) as q:
        wrong = daemon.cli("elicit", "answer", q.id, "--json", '{"answer": 5}')
        assert wrong.returncode == 1
        assert "answer refused: field 'answer': 5 is not of type 'string'" in wrong.stderr
        assert f"question {q.id} is still open" in wrong.stderr
        missing = daemon.cli("elicit", "answer", q.id, "--json", "{}")
        assert missing.returncode == 1
        assert "field 'answer': required, not given" in missing.stderr
        unknown = daemon.cli("elicit", "answer", q.id, "anwser=yes")
        assert (
            unknown.returncode == 2 and "no field 'anwser' (its fields: answer)" in unknown.stderr
        )
        # Off a terminal with nothing given nothing waits for input: a usage error.
        nothing = daemon.cli("elicit", "answer", q.id)
        assert nothing.returncode == 2 and f"mcpx elicit show {q.id}" in nothing.stderr
        assert q.state() == "pending"

        right = daemon.cli("elicit", "answer", q.id, "--json", '{"answer": "yes"}')
        assert right.returncode == 0, right.stderr
        assert q.text() == "yes"
        # Closed now: answering, declining or cancelling again is refused.
        again = daemon.cli("elicit", "answer", q.id, "answer=no")
        assert again.returncode == 1 and f"question {q.id} is answered already" in again.stderr
        for how in ("decline", "cancel"):
            late = daemon.cli("elicit", how, q.id)
            assert late.returncode == 1 and "it is answered" in late.stderr, late.stderr
    nobody = daemon.cli("elicit", "show", "0123456789ab")
    assert nobody.returncode == 1 and "no question '0123456789ab'" in nobody.stderr
    gone = daemon.cli("elicit", "decline", "0123456789ab")
    assert gone.returncode == 1 and "no such question" in gone.stderr


@pytest.mark.obligation("C-ELIC-7")
def test_decline_and_cancel_reach_the_server(daemon: Daemon) -> None:
    for how, said in (("decline", "declined"), ("cancel", "cancelled")):
        with asked(daemon, "ask", {"question": f"{how}?"}) as q:
            done = daemon.cli("elicit", how, q.id)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == f"{said} {q.id} (sdk)"
            assert q.text() == f"({how})"  # the server's own rendering of the action
            assert q.state() == said


def test_a_sampling_question_takes_text(daemon: Daemon) -> None:
    with asked(daemon, "sample", {"prompt": "what is 6 x 7?"}) as q:
        assert q.question["method"] == "sampling/createMessage"
        listed = daemon.cli("elicit", "list").stdout
        [line] = [ln for ln in listed.splitlines() if q.id in ln]
        assert "  sdk     sampling/createMessage  " in line and line.endswith("s  what is 6 x 7?")
        shown = daemon.cli("elicit", "show", q.id).stdout
        assert "user: what is 6 x 7?" in shown and "max tokens: 100" in shown
        assert f"mcpx elicit answer {q.id} text=<reply>" in shown
        # Not a CreateMessageResult: refused here, before the server could choke on it.
        bad = daemon.cli("elicit", "answer", q.id, "--json", '{"text": "42"}')
        assert bad.returncode == 1 and "field 'role'" in bad.stderr
        assert q.state() == "pending"
        done = daemon.cli("elicit", "answer", q.id, "text=42")
        assert done.returncode == 0, done.stderr
        assert q.text() == "42"
        result = _shown(daemon, q.id)["result"]
        assert result == {
            "role": "assistant",
            "content": {"type": "text", "text": "42"},
            "model": "human",
        }


def test_values_are_converted_by_the_requested_types(daemon: Daemon) -> None:
    with rich_question(daemon) as qid:
        shown = daemon.cli("elicit", "show", qid).stdout
        assert "color  choice, required" in shown and "choices: red (Red), green (Green)" in shown
        assert "count  integer, required, 1.." in shown and "description: How many" in shown
        assert "tags   list (comma-separated), optional" in shown
        pairs = "color=<red|green> count=<integer> ok=<true|false> [note=<string>] [tags=<a,b,c>]"
        assert f"mcpx elicit answer {qid} {pairs}" in shown
        example = """'{"color": "red", "count": 1, "ok": false}'"""  # the minimum, not 0
        assert f"mcpx elicit answer {qid} --json {example}" in shown
        for pair, why in (
            ("count=many", "'many' is not an integer"),
            ("color=purple", "'purple' is not one of: red, green"),
            ("ok=perhaps", "'perhaps' is not a boolean"),
            ("tags=a,z", "'z' is not one of: a, b, c"),
        ):
            bad = daemon.cli("elicit", "answer", qid, "color=red", "count=1", "ok=no", pair)
            assert bad.returncode == 1, bad.stdout
            assert f"field {pair.split('=')[0]!r}: {why}" in bad.stderr
        low = daemon.cli("elicit", "answer", qid, "color=red", "count=0", "ok=no")
        assert (
            low.returncode == 1 and "field 'count': 0 is less than the minimum of 1" in low.stderr
        )
        assert _shown(daemon, qid)["state"] == "pending"

        args = ("color=Green", "count=3", "ok=yes", "tags=a,c")  # a choice by its title, too
        done = daemon.cli("elicit", "answer", qid, *args)
        assert done.returncode == 0, done.stderr
        content = {"color": "green", "count": 3, "ok": True, "tags": ["a", "c"]}
        assert _shown(daemon, qid)["result"] == {"action": "accept", "content": content}


# -- on a terminal -------------------------------------------------------------------


class Terminal:
    """A CLI process on a pseudo-terminal: what it printed, and typing into it."""

    def __init__(self, daemon: Daemon, *args: str) -> None:
        self.master, slave = pty.openpty()
        argv = [sys.executable, "-m", "mcpx", *args]
        self.proc = subprocess.Popen(
            argv, cwd=daemon.home, env=daemon.env(), stdin=slave, stdout=slave, stderr=slave
        )
        os.close(slave)
        self.seen = ""  # everything read so far
        self._unread = ""

    def expect(self, text: str) -> str:
        """Read until ``text`` appears; what came up to and with it.

        Bounded by ``WAIT`` for each text: generous, since a loaded machine starts a
        process slowly, and free when all is well (it returns as the text appears).
        """
        deadline = time.monotonic() + WAIT
        while text not in self._unread:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} in:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                chunk = self._read()
                assert chunk, f"ended before {text!r}:\n{self.seen}"
        end = self._unread.index(text) + len(text)
        part, self._unread = self._unread[:end], self._unread[end:]
        return part

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\r").encode())

    def finish(self) -> int:
        """Its exit status, once it ended (bounded); the rest of its output read."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], deadline - time.monotonic())
            if ready and not self._read():
                break
        return self.proc.wait(timeout=WAIT)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        os.close(self.master)

    def _read(self) -> str:
        try:
            chunk = os.read(self.master, 4096).decode("utf-8", "replace")
        except OSError:  # EIO: the other side is closed
            return ""
        self.seen += chunk
        self._unread += chunk
        return chunk


@contextmanager
def terminal(daemon: Daemon, *args: str) -> Iterator[Terminal]:
    term = Terminal(daemon, *args)
    try:
        yield term
    finally:
        term.close()


def test_on_a_terminal_answer_asks_for_each_field(daemon: Daemon) -> None:
    with rich_question(daemon) as qid, terminal(daemon, "elicit", "answer", qid) as term:
        term.expect("rich asks (elicitation/create,")
        term.expect("rich (via mcpx) asks: set it up")
        term.expect("green = Green")  # the titled choices, then click's own list
        term.expect("Colour (color) (red, green): ")
        term.type("blue")
        term.expect("Error: 'blue' is not one of 'red', 'green'.")
        term.expect("Colour (color) (red, green): ")  # asked again: typed at its prompt
        term.type("green")
        term.expect("count — integer, required, 1.. — How many")
        term.expect("count: ")
        term.type("lots")
        term.expect("Error: 'lots' is not an integer")
        term.expect("count: ")  # asked again
        term.type("2")
        term.expect("Proceed (ok) [y/n]: ")
        term.type("y")
        term.expect("note (Enter to skip): ")
        term.type("")  # optional: left out
        term.expect("choose from: a, b, c")
        term.expect("tags (Enter to skip): ")
        term.type("b")
        term.expect(f"answered {qid} (rich)")
        assert term.finish() == 0, term.seen
    content = {"color": "green", "count": 2, "ok": True, "tags": ["b"]}
    assert _shown(daemon, qid)["result"] == {"action": "accept", "content": content}


# -- watch ---------------------------------------------------------------------------


class Watcher:
    """A running ``mcpx elicit watch`` on pipes: its lines as they come."""

    def __init__(self, daemon: Daemon, *args: str) -> None:
        argv = [sys.executable, "-m", "mcpx", "elicit", "watch", *args]
        self.proc = subprocess.Popen(
            argv,
            cwd=daemon.home,
            env=daemon.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=interruptible,  # stopped with Ctrl-C
        )
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        self._pumps = [
            threading.Thread(target=_pump, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for pump in self._pumps:
            pump.start()

    def line(self, lines: queue.Queue[str] | None = None) -> str:
        try:
            return (lines or self.out).get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"watch printed nothing (running: {self.proc.poll()})") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        for pump in self._pumps:
            pump.join(timeout=WAIT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    assert stream is not None
    for line in stream:
        lines.put(line.rstrip("\n"))


@contextmanager
def watching(daemon: Daemon, *args: str) -> Iterator[Watcher]:
    watcher = Watcher(daemon, *args)
    try:
        yield watcher
    finally:
        watcher.close()


def test_watch_shows_waiting_questions_first_and_ctrl_c_ends_with_0(daemon: Daemon) -> None:
    with asked(daemon, "ask", {"question": "still there?"}) as q:
        with watching(daemon, "--count", "1", "--json") as watch:
            event = json.loads(watch.line())
            assert event["kind"] == "question.asked" and "seq" not in event  # listed, not live
            assert event["data"]["id"] == q.id and event["data"]["state"] == "pending"
            assert watch.proc.wait(timeout=WAIT) == 0
        with watching(daemon) as watch:
            line = watch.line()
            assert f"waiting {q.id}  sdk  elicitation/create  " in line
            assert line.endswith("sdk (via mcpx) asks: still there?")
            assert "watching for questions" in watch.line(watch.err)
            watch.proc.send_signal(signal.SIGINT)
            assert watch.proc.wait(timeout=WAIT) == 0
        assert q.state() == "pending"  # watching off a terminal settles nothing


def test_watch_json_sees_questions_asked_and_closed(daemon: Daemon) -> None:
    # Needs the daemon's question.asked / question.closed events.
    with watching(daemon, "--json", "--count", "2") as watch:
        assert "watching for questions" in watch.line(watch.err)  # subscribed
        with asked(daemon, "ask", {"question": "first?"}) as first:
            event = json.loads(watch.line())
            assert (event["kind"], event["server"]) == ("question.asked", "sdk")
            assert isinstance(event["seq"], int)  # live, not listed
            assert event["data"]["id"] == first.id
            assert event["data"]["params"]["message"] == "sdk (via mcpx) asks: first?"
            assert daemon.cli("elicit", "answer", first.id, "answer=1").returncode == 0
            closed = json.loads(watch.line())
            assert closed["kind"] == "question.closed"
            assert closed["data"] == {"id": first.id, "state": "answered", "server": "sdk"}
            assert first.text() == "1"
        with asked(daemon, "ask", {"question": "second?"}) as second:
            event = json.loads(watch.line())
            assert event["kind"] == "question.asked" and event["data"]["id"] == second.id
            assert watch.proc.wait(timeout=WAIT) == 0  # --count 2: done


def test_watch_on_a_terminal_offers_each_new_question(daemon: Daemon) -> None:
    # Needs the daemon's question.asked events.
    menu = "Action (answer, decline, cancel, skip) [answer]: "
    with terminal(daemon, "elicit", "watch", "--count", "2") as term:
        term.expect("watching for questions")
        with asked(daemon, "ask", {"question": "which colour?"}) as q:
            term.expect("sdk asks (elicitation/create, ")
            term.expect(f"id {q.id}):")
            term.expect("sdk (via mcpx) asks: which colour?")
            term.expect(menu)
            term.type("")  # the default: answer
            term.expect("Answer — string, required")
            term.expect("Answer: ")
            term.type("teal")
            term.expect(f"answered {q.id} (sdk)")
            assert q.text() == "teal"
        with asked(daemon, "ask", {"question": "really?"}) as q:
            term.expect("sdk (via mcpx) asks: really?")
            term.expect(menu)
            term.type("decline")
            term.expect(f"declined {q.id} (sdk)")
            assert term.finish() == 0, term.seen  # --count 2: done
            assert q.text() == "(decline)"


@pytest.mark.obligation("C-ELIC-15")
def test_a_url_questions_site_is_said_plainly_with_a_warning_when_it_may_deceive() -> None:
    from mcpx.cli._requested_fields import url_site

    assert url_site("https://example.com/connect?flow=1") == "example.com"
    for url, why in [
        ("https://xn--exmple-cua.com/", "punycode"),
        ("https://ex\u0430mple.com/", "outside ASCII"),  # a Cyrillic "a"
        ("https://example.com@evil.test/", "user part (example.com@)"),
        ("http://example.com/", "http scheme, not https"),
    ]:
        site = url_site(url)
        assert site is not None and "careful:" in site and why in site, (url, site)
    assert url_site(None) is None
