"""An upstream that withdraws its question (``notifications/cancelled``) while it is being
answered: the host is told to stop asking (its own ``notifications/cancelled``), the
broker closes it as ``withdrawn``, and no response is sent upstream for it.

A real daemon; the upstream is tests/fixtures/bad_server.py in ``ask-withdraw`` mode
(it elicits, waits 1.5 s, withdraws, then reports whether a response to its question
ever came).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, bad_entry, legacy_session, running_daemon, sdk_entry

REV = "2025-11-25"
BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    entry = bad_entry("ask-withdraw")
    entry["args"] += ["--delay", "1.5"]
    with running_daemon(tmp_path_factory.mktemp("withdrawn"), {"bad": entry}) as d:
        yield d


CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {
        "name": "mcpx_call",
        "arguments": {"server": "bad", "tool": "echo", "arguments": {"text": "x"}},
    },
}


@pytest.mark.obligation("S-CANC-5", "C-CANC-7")
def test_the_host_is_told_its_question_was_withdrawn(daemon: Daemon) -> None:
    seen: list[dict[str, Any]] = []
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = legacy_session(mcp, {"elicitation": {}})
        with mcp.stream("POST", "/mcp", json=CALL, headers={**headers, "Accept": BOTH}) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[len("data: ") :]))
                    if seen[-1].get("id") == CALL["id"]:
                        break
        # Answering after the withdrawal: taken (202) and ignored.
        question = seen[0]
        late = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}
        assert mcp.post("/mcp", json=late, headers=headers).status_code == 202
    assert question["method"] == "elicitation/create" and question["id"] < 0
    cancelled = [f for f in seen if f.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancelled] == [question["id"]]
    final = seen[-1]
    # No response went upstream for the withdrawn question.
    assert final["result"]["content"][0]["text"] == "withdrawn; answered: no"


@pytest.mark.obligation("C-CANC-7")
def test_a_question_in_the_broker_is_closed_as_withdrawn(daemon: Daemon) -> None:
    replies: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []

    def call() -> None:
        with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
            headers = legacy_session(mcp, {})  # nothing declared: the broker holds it
            replies.append(mcp.post("/mcp", json=CALL, headers=headers).json())

    caller = threading.Thread(target=call)
    caller.start()
    with daemon.http() as api:
        for _ in range(200):  # bounded: the question reaches the broker within seconds
            asked = api.get("/v1/questions").json()["questions"]
            if asked:
                break
            caller.join(timeout=0.05)
        caller.join(timeout=30)
        [question] = asked
        closed = api.get(f"/v1/questions/{question['id']}").json()
    assert closed["state"] == "withdrawn"
    assert replies[0]["result"]["content"][0]["text"] == "withdrawn; answered: no"


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {"proto.askTimeout": "1s"}
    servers = {"sdk": sdk_entry("1.23.3")}
    with running_daemon(tmp_path_factory.mktemp("impatient"), servers, settings) as d:
        yield d


@pytest.mark.obligation("S-CANC-5", "S-LIFE-10")
def test_a_host_that_does_not_answer_in_time_is_told_it_was_given_up(impatient: Daemon) -> None:
    # S-LIFE-10: a request mcpx sends a client has a timeout (proto.askTimeout); when it
    # passes, notifications/cancelled says so, and the upstream gets an error.
    seen: list[dict[str, Any]] = []
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "mcpx_call",
            "arguments": {"server": "sdk", "tool": "ask", "arguments": {"question": "hm?"}},
        },
    }
    with httpx.Client(base_url=impatient.info["url"], timeout=30) as mcp:
        headers = legacy_session(mcp, {"elicitation": {}})
        with mcp.stream("POST", "/mcp", json=call, headers={**headers, "Accept": BOTH}) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[len("data: ") :]))
                    if seen[-1].get("id") == call["id"]:
                        break
    question = seen[0]
    assert question["method"] == "elicitation/create"
    [cancelled] = [f for f in seen if f.get("method") == "notifications/cancelled"]
    assert cancelled["params"]["requestId"] == question["id"]
    assert "within 1 s" in cancelled["params"]["reason"]
    assert seen[-1]["result"]["isError"] is True
