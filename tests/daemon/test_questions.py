"""An upstream's question during a call, put to the host that made it (legacy HTTP).

The official SDK's fixture server (1.23.3) elicits (``ask``), samples (``sample``) and
lists roots (``roots``) mid-call. The host is a legacy /mcp session: the POST's answer
becomes an event stream carrying the question, the host answers with a POST of its own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, legacy_session, running_daemon, sdk_entry

REV = "2025-11-25"
BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("questions"), {"sdk": sdk_entry("1.23.3")}) as d:
        yield d


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    args = {"server": "sdk", "tool": tool, "arguments": arguments}
    return {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "mcpx_call", "arguments": args},
    }


def _ask_and_answer(
    daemon: Daemon, capabilities: dict[str, Any], call: dict[str, Any], reply: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Make the call; answer the one question it brings with ``reply``; all it streamed."""
    seen: list[dict[str, Any]] = []
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = legacy_session(mcp, capabilities)
        with mcp.stream("POST", "/mcp", json=call, headers={**headers, "Accept": BOTH}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                frame = json.loads(line[len("data: ") :])
                seen.append(frame)
                if "method" in frame and "id" in frame:  # the question
                    answer = {"jsonrpc": "2.0", "id": frame["id"], **reply}
                    posted = mcp.post("/mcp", json=answer, headers=headers)
                    assert posted.status_code == 202
                if frame.get("id") == call["id"]:
                    return seen, frame
    raise AssertionError(f"no answer in {seen}")


@pytest.mark.obligation("C-ELIC-6")
def test_elicitation_reaches_the_calling_host_and_back(daemon: Daemon) -> None:
    reply = {"result": {"action": "accept", "content": {"answer": "blue"}}}
    seen, final = _ask_and_answer(
        daemon, {"elicitation": {}}, _call("ask", {"question": "favourite colour?"}), reply
    )
    question = seen[0]
    assert question["method"] == "elicitation/create" and question["id"] < 0
    assert question["params"]["message"] == "sdk (via mcpx) asks: favourite colour?"
    assert final["result"]["content"][0]["text"] == "blue"


def test_sampling_and_roots_reach_a_host_that_declared_them(daemon: Daemon) -> None:
    sampled = {
        "result": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}
    }
    seen, final = _ask_and_answer(
        daemon, {"sampling": {}}, _call("sample", {"prompt": "?"}), sampled
    )
    assert seen[0]["method"] == "sampling/createMessage"
    assert final["result"]["content"][0]["text"] == "42"
    roots = {"result": {"roots": [{"uri": "file:///work", "name": "work"}]}}
    seen, final = _ask_and_answer(daemon, {"roots": {}}, _call("roots", {}), roots)
    assert seen[0]["method"] == "roots/list"
    assert "file:///work" in final["result"]["content"][0]["text"]


def test_a_host_that_declared_no_roots_gets_mcpxs_own(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = legacy_session(mcp, {})
        r = mcp.post("/mcp", json=_call("roots", {}), headers={**headers, "Accept": BOTH})
    assert r.headers["content-type"] == "application/json"  # nothing was asked
    assert r.json()["result"]["content"][0]["text"] == "[]"


@pytest.mark.obligation("C-ELIC-9", "S-INPUT-1", "S-INPUT-13")
def test_a_question_nobody_present_can_answer_waits_in_the_broker(daemon: Daemon) -> None:
    # S-INPUT-1: the host declared no elicitation: it is sent none; the question goes to
    # the broker, and /v1 answers. S-INPUT-13: an answer is checked against the schema.
    result: list[httpx.Response] = []

    def call() -> None:
        with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
            headers = legacy_session(mcp, {})
            result.append(mcp.post("/mcp", json=_call("ask", {"question": "ok?"}), headers=headers))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    with daemon.http() as api:
        pending: list[dict[str, Any]] = []
        for _ in range(200):  # bounded: the question arrives within seconds
            pending = api.get("/v1/questions").json()["questions"]
            if pending:
                break
            caller.join(timeout=0.05)
        [question] = pending
        assert question["params"]["message"] == "sdk (via mcpx) asks: ok?"
        assert 0 < question["timeLeft"] <= 120
        # A wrong answer is refused, naming the field; the question stays open.
        wrong = api.post(f"/v1/questions/{question['id']}/answer", json={"content": {}})
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_answer"
        right = {"content": {"answer": "yes"}}
        done = api.post(f"/v1/questions/{question['id']}/answer", json=right)
        assert done.status_code == 200 and done.json()["state"] == "answered"
        again = api.post(f"/v1/questions/{question['id']}/decline")
        assert again.status_code == 409
    caller.join(timeout=30)
    assert result and result[0].json()["result"]["content"][0]["text"] == "yes"


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    entry = {**sdk_entry("1.23.3"), "scope": "identity"}
    with running_daemon(tmp_path_factory.mktemp("questions-scoped"), {"sdk": entry}) as d:
        yield d


def test_attribution_is_per_instance_of_an_identity_scoped_server(scoped: Daemon) -> None:
    # Host A's slow call is in flight on its own instance; host B's question comes from
    # B's instance, where B's call is the only one: it is B's, asked natively. A never
    # sees it (on a shared server it would have gone to the broker).
    slow_seen: list[dict[str, Any]] = []

    def slow_host() -> None:
        with httpx.Client(base_url=scoped.info["url"], timeout=30) as mcp:
            headers = legacy_session(mcp, {"elicitation": {}})
            call = {**_call("slow", {"seconds": 3}), "id": 9}
            with mcp.stream("POST", "/mcp", json=call, headers={**headers, "Accept": BOTH}) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        slow_seen.append(json.loads(line[len("data: ") :]))
            if not slow_seen:  # answered as plain JSON: nothing was streamed
                slow_seen.append({})

    a = threading.Thread(target=slow_host)
    a.start()
    with scoped.http() as api:
        for _ in range(200):  # bounded: A's call is in flight within seconds
            servers = api.get("/v1/servers").json()["servers"]
            if any(i.get("inFlight") for s in servers for i in s["instances"]):
                break
            a.join(timeout=0.05)
    reply = {"result": {"action": "accept", "content": {"answer": "mine"}}}
    seen, final = _ask_and_answer(
        scoped, {"elicitation": {}}, _call("ask", {"question": "b?"}), reply
    )
    a.join(timeout=30)
    assert seen[0]["method"] == "elicitation/create"
    assert final["result"]["content"][0]["text"] == "mine"
    assert not [f for f in slow_seen if f.get("method") == "elicitation/create"], slow_seen
    with scoped.http() as api:
        assert api.get("/v1/questions").json()["questions"] == []
