"""Helpers shared by the client-questions obligation tests (``test_*.py`` in this directory).

The upstream is a scripted stdio server (``ASKER`` below, standard library only,
written to a temporary file): legacy (2025-11-25) by default, 2026-07-28 with
``--modern``. Its tool ``ask`` sends the client the requests it is given and returns
the responses it got (legacy), or answers ``input_required`` with the input requests
it is given and, on the retry, returns what the retry carried (modern). Every frame it
receives from mcpx is logged and, at the end, checked strictly against the revision it
was sent in. Questions are answered by a real daemon's broker (``/v1/questions``), a
real /mcp host session, or, for the client's own mechanics, by a test handler on
mcpx's upstream session.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from support.daemon import Daemon
from support.schemas import frame_errors
from support.waiting import wait_until

META = "io.modelcontextprotocol/"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
OLDER = "2025-06-18"  # elicitation without modes: form only

ASKER = (Path(__file__).parents[2] / "fixtures" / "asker_server.py").read_text()


# -- the scripted upstream and its log ------------------------------------------------


def _asker(
    tmp: Path, name: str, *, modern: bool = False, rev: str | None = None
) -> tuple[list[str], Path]:
    """The scripted upstream's command line and its log; ``rev``: the one legacy
    revision it answers ``initialize`` with, whatever it is offered."""
    script = tmp / "asker.py"
    if not script.exists():
        script.write_text(ASKER)
    log = tmp / f"{name}.jsonl"
    flags = (["--modern"] if modern else []) + (["--rev", rev] if rev else [])
    return [sys.executable, str(script), str(log), *flags], log


def _entry(argv: list[str]) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:]}


def _received(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _frame_rev(entry: dict[str, Any]) -> str:
    frame = entry["frame"]
    params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
    if frame.get("method") == "initialize":
        return str(params["protocolVersion"])
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    return str(meta.get(META + "protocolVersion") or entry["rev"])


def _problems(log: Path) -> list[str]:
    """How each frame mcpx sent the scripted upstream fails its revision (strict)."""
    out = []
    for n, entry in enumerate(_received(log)):
        rev = _frame_rev(entry)
        for p in frame_errors(entry["frame"], rev, sender="client", answering=entry["answering"]):
            out.append(f"{log.name} frame {n} ({rev}): {p}\n  {entry['frame']}")
    return out


def _text(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


# -- asking through the daemon --------------------------------------------------------


def _call(daemon: Daemon, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": server, "tool": tool, "arguments": arguments})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body.get("result", body)


class Brokered:
    """A /v1/call in a thread, blocked on a question the broker holds."""

    def __init__(self, daemon: Daemon, server: str, arguments: dict[str, Any]) -> None:
        self.daemon = daemon
        self.replies: list[httpx.Response] = []
        with daemon.http() as api:
            before = {q["id"] for q in api.get("/v1/questions").json()["questions"]}
            self.thread = threading.Thread(target=self._run, args=(server, arguments), daemon=True)
            self.thread.start()

            def new() -> dict[str, Any] | None:
                pending = api.get("/v1/questions").json()["questions"]
                return next((q for q in pending if q["id"] not in before), None)

            self.question: dict[str, Any] = wait_until(new)

    def _run(self, server: str, arguments: dict[str, Any]) -> None:
        with self.daemon.http() as api:
            body = {"server": server, "tool": "ask", "arguments": arguments}
            self.replies.append(api.post("/v1/call", json=body))

    def settle(self, how: str, content: Any = None) -> dict[str, Any]:
        """Settled through the broker's API; ``how`` "cli": by ``mcpx elicit answer``."""
        if how == "cli":
            done = self.daemon.cli("elicit", "answer", self.question["id"])
            assert done.returncode == 0, done.stderr
        else:
            with self.daemon.http() as api:
                path = f"/v1/questions/{self.question['id']}/{how}"
                posted = api.post(path, json={"content": content} if how == "answer" else None)
                assert posted.status_code == 200, posted.text
        self.thread.join(timeout=60)
        assert self.replies, "the call did not end"
        body: dict[str, Any] = self.replies[0].json()
        return body.get("result", body)


EXPECTED_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


FORM = {"type": "object", "properties": {"answer": {"type": "string"}}}
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 5}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "human"}
