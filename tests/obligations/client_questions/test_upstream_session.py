"""What mcpx's own upstream session owes a 2026-07-28 server that asks it questions
(``input_required`` rounds) and that it listens to: mcpx's upstream session against
the modern scripted asker, its questions answered by a test handler (``Answers``).

The scripted asker and the shared helpers are in ``helpers``; ``sent_frames`` is in
``tests/conftest.py``. No daemon is started here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.client import QuestionOrigin
from obligations.client_questions.helpers import (
    EXPECTED_CAPS,
    FORM,
    META,
    MODERN,
    _asker,
    _problems,
    _received,
    _text,
)
from support.schemas import FrameLog
from support.upstream import Recorder, connected, stdio_server
from support.waiting import wait_until

# -- mcpx's upstream session against the modern asker, with a test handler ----------


class Answers:
    """A host behind mcpx that answers each kind, recording what it was asked."""

    def __init__(self, gate: anyio.Event | None = None, wait_for: int = 0) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.gate = gate
        self.wait_for = wait_for

    def capabilities(self, revision: str) -> dict[str, Any]:
        return dict(EXPECTED_CAPS)

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        self.asked.append((method, params))
        if self.gate is not None:
            if len(self.asked) >= self.wait_for:
                self.gate.set()
            await self.gate.wait()
        if method == "elicitation/create":
            return {"action": "accept", "content": {"answer": params.get("message", "")}}
        if method == "sampling/createMessage":
            return {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"}
        if method == "roots/list":
            return {"roots": [{"uri": "file:///srv/work", "name": "work"}]}
        return {}


def _modern(tmp_path: Path) -> tuple[Any, Path]:
    argv, log = _asker(tmp_path, "session", modern=True)
    return stdio_server("asker", argv), log


STATE = '{"sub": "x", "exp": 1} eyJhbGciOiJub25lIn0.eyJ1IjoiYSJ9. ==\u00e9\\n'


@pytest.mark.obligation("C-MRTR-2", "C-MRTR-5", "C-MRTR-7", "C-MRTR-9")
@pytest.mark.anyio
async def test_every_input_request_is_answered_in_one_retry(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    requests = {
        "github_login": {
            "method": "elicitation/create",
            "params": {"message": "login?", "requestedSchema": FORM},
        },
        "capital_of_france": {
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "?"}}],
                "maxTokens": 5,
            },
        },
        "where": {"method": "roots/list", "params": {}},
    }
    answers = Answers()
    recorder = Recorder()
    async with connected(server, recorder, sent_frames, handler=answers) as session:
        args = {"inputRequests": requests, "requestState": STATE}
        done = await session.call_tool("ask", args)
    retried = _text(done)
    # Every entry fulfilled, keyed as asked, in the one retry.
    assert set(retried["params"]["inputResponses"]) == set(requests)
    assert retried["params"]["inputResponses"]["where"]["roots"][0]["uri"] == "file:///srv/work"
    assert sorted(m for m, _ in answers.asked) == sorted(r["method"] for r in requests.values())
    # The state went back byte for byte, and never reached the answering side.
    assert retried["params"]["requestState"] == STATE
    assert not any(STATE in json.dumps(p) for _, p in answers.asked)
    # A new id, and the full per-request _meta on the retry.
    calls = [e["frame"] for e in _received(log) if e["frame"].get("method") == "tools/call"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"] == retried["id"]
    meta = calls[1]["params"]["_meta"]
    assert meta[META + "protocolVersion"] == MODERN
    assert meta[META + "clientCapabilities"] == EXPECTED_CAPS
    assert meta[META + "clientInfo"]["name"] == "mcpx"
    assert _problems(log) == []


# C-MRTR-8: two calls in flight, each with its own state and questions: nothing crosses.
@pytest.mark.obligation("C-MRTR-8")
@pytest.mark.anyio
async def test_parallel_rounds_keep_their_own_state(tmp_path: Path, sent_frames: FrameLog) -> None:
    server, log = _modern(tmp_path)
    answers = Answers(anyio.Event(), wait_for=2)  # both asked before either is answered
    results: dict[str, Any] = {}
    async with connected(server, Recorder(), sent_frames, handler=answers) as session:

        async def one(tag: str) -> None:
            request = {
                "method": "elicitation/create",
                "params": {"message": tag, "requestedSchema": FORM},
            }
            args = {"inputRequests": {f"k-{tag}": request}, "requestState": f"state-{tag}"}
            results[tag] = _text(await session.call_tool("ask", args))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
    for tag in ("a", "b"):
        params = results[tag]["params"]
        assert params["requestState"] == f"state-{tag}"
        assert params["inputResponses"] == {
            f"k-{tag}": {"action": "accept", "content": {"answer": tag}}
        }
    assert _problems(log) == []


# C-MRTR-13: a request from a 2026-07-28 server gets no response.
@pytest.mark.obligation("C-MRTR-13")
@pytest.mark.anyio
async def test_a_modern_servers_request_is_never_answered(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    recorder = Recorder()
    async with connected(server, recorder, sent_frames, handler=Answers()) as session:
        push = [{"method": "ping"}, {"method": "roots/list"}]
        request = {"method": "roots/list", "params": {}}
        args = {"inputRequests": {"r": request}, "push": push}
        done = _text(await session.call_tool("ask", args))
        assert "r" in done["params"]["inputResponses"]
        assert await session.list_tools()  # read by the server after anything mcpx sent
    assert [f for f, _ in recorder.sent if "method" not in f] == []
    assert [e for e in _received(log) if "method" not in e["frame"]] == []
    assert _problems(log) == []


# C-SUB-4 C-SUB-5 C-SUB-6: two listens on one stdio connection, each told only its own; ending
# one sends notifications/cancelled naming its request id.
@pytest.mark.obligation("C-SUB-4", "C-SUB-5", "C-SUB-6")
@pytest.mark.anyio
async def test_listen_streams_are_told_apart_and_ended_by_cancel(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    async with connected(server, Recorder(), sent_frames) as session:  # noqa: SIM117
        async with session.listen({"toolsListChanged": True}, reopen=False) as tools:
            async with session.listen(
                {"resourceSubscriptions": ["asker://doc"]}, reopen=False
            ) as docs:
                got_docs = [await docs.receive(), await docs.receive()]
            got_tools = [await tools.receive(), await tools.receive()]
    listens = [
        e["frame"] for e in _received(log) if e["frame"].get("method") == "subscriptions/listen"
    ]
    ids = {json.dumps(f["params"]["notifications"]): f["id"] for f in listens}
    tools_id = ids[json.dumps({"toolsListChanged": True})]
    docs_id = ids[json.dumps({"resourceSubscriptions": ["asker://doc"]})]
    for got, sub in ((got_tools, tools_id), (got_docs, docs_id)):
        assert got[0]["method"] == "notifications/subscriptions/acknowledged"
        assert {n["params"]["_meta"][META + "subscriptionId"] for n in got} == {sub}
    assert got_docs[0]["params"]["notifications"] == {"resourceSubscriptions": ["asker://doc"]}

    def cancels() -> list[Any]:
        return [
            e["frame"]["params"]["requestId"]
            for e in _received(log)
            if e["frame"].get("method") == "notifications/cancelled"
        ]

    assert sorted(map(str, wait_until(lambda: len(cancels()) >= 2 and cancels()))) == sorted(
        map(str, [tools_id, docs_id])
    )
    assert _problems(log) == []
