"""A 2026-07-28 host asked in-band: an upstream's question comes back as ``input_required``.

Real daemon, real upstreams (the official SDK's fixture server: 1.23.3, a legacy server
that sends ``elicitation/create`` mid-call; 2.3.0, a modern one that answers
``input_required`` itself), a host speaking 2026-07-28 over /mcp. Every frame the
daemon sent is checked strictly against 2026-07-28 at teardown.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.modern import modern_headers, modern_meta, modern_params
from support.waiting import wait_until

HEADERS = modern_headers(
    "tools/call", name="mcpx_call", accept="application/json, text/event-stream"
)
ANSWER = {"action": "accept", "content": {"answer": "blue"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"legacy": sdk_entry("1.23.3"), "modern": sdk_entry("2.3.0")}
    settings = {"proto.stateTTL": "3s"}
    with running_daemon(tmp_path_factory.mktemp("rounds"), servers, settings) as d:
        yield d


def _params(server: str, question: str, caps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    args = {"server": server, "tool": "ask", "arguments": {"question": question}}
    params = {"name": "mcpx_call", "arguments": args, **extra}
    return modern_params(params, modern_meta(caps, client=None))


def _post(mcp: httpx.Client, params: dict[str, Any], rid: int = 1) -> dict[str, Any]:
    frame = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    r = mcp.post("/mcp", json=frame, headers=HEADERS)
    assert r.headers["content-type"].startswith("application/json"), r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.mark.obligation(
    "S-CACHE-8", "S-HTTP-14", "S-TOOL-19", "S-MRTR-1", "S-MRTR-3", "S-MRTR-4", "S-MRTR-10"
)
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_question_comes_back_input_required_and_the_retry_resumes(
    daemon: Daemon, server: str
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        params = _params(server, "colour?", {"elicitation": {}})
        first = _post(mcp, params)["result"]
        # S-MRTR-1: asked inside the result, never as a request; S-MRTR-3: its type and
        # both members; S-MRTR-4: a bare request object under a key of its own.
        assert first["resultType"] == "input_required"
        [(key, request)] = first["inputRequests"].items()
        assert key == "elicitation-1" and request["method"] == "elicitation/create"
        assert set(request) == {"method", "params"}
        assert request["params"]["message"] == f"{server} (via mcpx) asks: colour?"
        assert "elicitationId" not in request["params"]
        state = first["requestState"]
        assert state.startswith("mcpx1.")
        # S-MRTR-10: a retry without the answer it needs is asked again, not refused.
        unanswered = {**params, "inputResponses": {}, "requestState": state}
        asked_again = _post(mcp, unanswered, rid=2)["result"]
        assert asked_again["resultType"] == "input_required"
        assert list(asked_again["inputRequests"]) == [key]
        state = asked_again["requestState"]
        again = {**params, "inputResponses": {key: ANSWER}, "requestState": state}
        done = _post(mcp, again, rid=3)["result"]
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "blue"


def test_responses_sent_up_front_are_held_until_asked(daemon: Daemon) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        ahead = {"elicitation-1": ANSWER, "sampling-9": {"unused": True}}  # unknown: ignored
        params = _params("legacy", "now?", {"elicitation": {}}, inputResponses=ahead)
        done = _post(mcp, params)["result"]
        assert done["resultType"] == "complete" and done["content"][0]["text"] == "blue"


def _expiry(state: str) -> float:
    """When ``state`` expires (wall clock), as its payload says: ``mcpx1.<payload>.<sig>``."""
    payload = state.removeprefix("mcpx1.").split(".")[0]
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    return float(json.loads(raw)["e"])


def _refusal(reply: dict[str, Any]) -> str:
    error = reply["error"]
    assert error["code"] == -32602, error
    reason: str = error["data"]["reason"]
    return reason


@pytest.mark.obligation("S-MRTR-6", "S-MRTR-7")
def test_states_that_are_not_for_this_request_are_refused(daemon: Daemon) -> None:
    # S-MRTR-6: the state is signed and one that fails is refused; S-MRTR-7: bound to the
    # request (method and params digest) and expiring.
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        params = _params("legacy", "which?", {"elicitation": {}})
        state = _post(mcp, params)["result"]["requestState"]
        answers = {"elicitation-1": ANSWER}
        # Altered: the signature no longer matches.
        body, signature = state.rsplit(".", 1)
        tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + signature
        reply = _post(mcp, {**params, "inputResponses": answers, "requestState": tampered}, 2)
        assert _refusal(reply) == "tampered"
        # Replayed on another request: the binding differs.
        other = _params("legacy", "another question", {"elicitation": {}})
        reply = _post(mcp, {**other, "inputResponses": answers, "requestState": state}, 3)
        assert _refusal(reply) == "other-request"
        assert "another request" in reply["error"]["message"]
        # Not mcpx's at all, and no pass-through server it could belong to.
        reply = _post(mcp, {**params, "requestState": "opaque"}, 4)
        assert _refusal(reply) == "malformed"
        # Expired (proto.stateTTL is 3 s here).
        expires = _expiry(state)
        wait_until(lambda: time.time() > expires, timeout=10, interval=0.1)
        reply = _post(mcp, {**params, "inputResponses": answers, "requestState": state}, 5)
        assert _refusal(reply) == "expired"


@pytest.mark.obligation("S-LIFE-19")
def test_a_host_that_declared_nothing_askable_is_served_inside_its_request(
    daemon: Daemon,
) -> None:
    # No elicitation declared: nothing comes back input_required; the broker holds the
    # question and the request waits for its answer.
    import threading

    replies: list[dict[str, Any]] = []

    def call() -> None:
        with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
            replies.append(_post(mcp, _params("legacy", "held?", {})))

    caller = threading.Thread(target=call)
    caller.start()
    with daemon.http() as api:
        pending: list[dict[str, Any]] = []
        for _ in range(200):  # bounded: the question reaches the broker within seconds
            pending = [q for q in api.get("/v1/questions").json()["questions"]]
            if pending:
                break
            caller.join(timeout=0.05)
        [question] = pending
        assert question["params"]["message"] == "legacy (via mcpx) asks: held?"
        api.post(f"/v1/questions/{question['id']}/answer", json={"content": {"answer": "ok"}})
    caller.join(timeout=30)
    assert replies and replies[0]["result"]["content"][0]["text"] == "ok"


@pytest.mark.obligation("S-MRTR-10")
def test_malformed_input_responses_are_invalid_params(daemon: Daemon) -> None:
    # S-MRTR-10: malformed inputResponses are a JSON-RPC error; unknown keys are ignored
    # (test_responses_sent_up_front_are_held_until_asked).
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        for bad in ([1], {"elicitation-1": "yes"}):
            reply = _post(mcp, _params("legacy", "x?", {"elicitation": {}}, inputResponses=bad))
            assert reply["error"]["code"] == -32602, reply
            assert "inputResponses" in reply["error"]["message"]
