"""An upstream that floods mcpx with questions is refused beyond its limits.

The unit tests drive ``Throttle`` on a hand-turned clock; the end-to-end ones run a real
daemon whose upstream (tests/fixtures/asker_server.py, a real process) puts many
questions at once, with nobody present to answer them: the broker holds what is
admitted, and the upstream hears a refusal for the rest.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpx.questions import THROTTLED, Throttle
from mcpx.wire import McpError
from support.daemon import Daemon, running_daemon
from support.waiting import wait_until

ASKER = Path(__file__).parents[1] / "fixtures" / "asker_server.py"
SAMPLE = "sampling/createMessage"
ELICIT = "elicitation/create"


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_open_questions_are_capped_per_server_and_freed_when_they_end() -> None:
    throttle = Throttle(open_limit=2, rate=1000)
    with throttle.asking("a", SAMPLE), throttle.asking("a", ELICIT):
        with pytest.raises(McpError) as refused, throttle.asking("a", SAMPLE):
            pass
        assert refused.value.code == THROTTLED
        assert "proto.questionsOpen" in str(refused.value)
        with throttle.asking("b", SAMPLE):  # another server has its own count
            assert throttle.open("b") == 1
        with throttle.asking("a", "roots/list"):  # answered at once: not counted
            assert throttle.open("a") == 2
    assert throttle.open("a") == 0
    with throttle.asking("a", SAMPLE):  # freed: asking again is fine
        pass


def test_questions_come_at_most_at_the_rate_in_bursts_of_four_times_it() -> None:
    clock = _Clock()
    throttle = Throttle(open_limit=100, rate=2, clock=clock)
    for _ in range(8):  # the burst
        with throttle.asking("a", SAMPLE):
            pass
    with pytest.raises(McpError) as refused, throttle.asking("a", SAMPLE):
        pass
    assert refused.value.code == THROTTLED and "proto.questionRate" in str(refused.value)
    clock.now += 0.5  # one more token at 2 a second
    with throttle.asking("a", ELICIT):
        pass
    with pytest.raises(McpError), throttle.asking("a", ELICIT):
        pass
    clock.now += 1000  # refilled, never beyond the burst
    admitted = 0
    for _ in range(20):
        try:
            with throttle.asking("a", SAMPLE):
                admitted += 1
        except McpError:
            pass
    assert admitted == 8


def _elicitations(n: int) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    requests = [
        {"method": ELICIT, "params": {"message": f"flood {i}", "requestedSchema": schema}}
        for i in range(n)
    ]
    return {"requests": requests}


def _pending(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.http() as api:
        questions: list[dict[str, Any]] = api.get("/v1/questions").json()["questions"]
    return [q for q in questions if q["server"] == "asker" and q["state"] == "pending"]


def _asking(
    daemon: Daemon, arguments: dict[str, Any]
) -> tuple[threading.Thread, list[httpx.Response]]:
    """The asker's ``ask`` tool called with ``arguments`` in a thread; its reply, once in."""
    replies: list[httpx.Response] = []

    def call() -> None:
        with daemon.http() as api:
            body = {"server": "asker", "tool": "ask", "arguments": arguments}
            replies.append(api.post("/v1/call", json=body, timeout=120))

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, replies


def _flood(daemon: Daemon, n: int, admitted: int) -> list[dict[str, Any]]:
    """The asker puts ``n`` elicitations at once in one call; once ``admitted`` of them
    are in the broker (nobody else can answer), they are declined; the call's result:
    what the upstream heard for each question, in order."""
    thread, replies = _asking(daemon, _elicitations(n))
    wait_until(lambda: len(_pending(daemon)) >= admitted, timeout=60)
    time.sleep(0.3)  # had there been more admitted, they would show by now
    held = _pending(daemon)
    assert len(held) == admitted, held
    with daemon.http() as api:
        for question in held:
            assert api.post(f"/v1/questions/{question['id']}/decline").status_code == 200
    thread.join(timeout=60)
    assert replies and replies[0].status_code == 200, replies
    body = replies[0].json()
    result = body.get("result", body)
    heard: list[dict[str, Any]] = json.loads(result["content"][0]["text"])
    return heard


@pytest.fixture
def throttled(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Daemon]:
    argv = [sys.executable, str(ASKER), str(tmp_path / "asker.jsonl")]
    servers = {"asker": {"command": argv[0], "args": argv[1:]}}
    with running_daemon(tmp_path, servers, settings=request.param) as daemon:
        yield daemon


@pytest.mark.obligation("C-ELIC-8", "C-SAMP-10")
@pytest.mark.parametrize("throttled", [{"proto.questionsOpen": 3}], indirect=True)
def test_an_upstream_gets_at_most_its_open_questions_held_and_the_rest_refused(
    throttled: Daemon,
) -> None:
    heard = _flood(throttled, 10, admitted=3)
    refused = [h for h in heard if "error" in h]
    answered = [h for h in heard if "result" in h]
    assert len(refused) == 7 and len(answered) == 3
    assert {h["error"]["code"] for h in refused} == {THROTTLED}
    assert all("proto.questionsOpen" in h["error"]["message"] for h in refused)
    assert all(h["result"] == {"action": "decline"} for h in answered)
    assert not _pending(throttled)  # nothing left behind for the refused ones


@pytest.mark.obligation("C-ELIC-8", "C-SAMP-10")
@pytest.mark.parametrize(
    "throttled", [{"proto.questionsOpen": 100, "proto.questionRate": 1}], indirect=True
)
def test_an_upstream_asking_faster_than_its_rate_is_refused(throttled: Daemon) -> None:
    # At 1 a second the burst is 4; the ten questions come within well under a second.
    heard = _flood(throttled, 10, admitted=4)
    refused = [h for h in heard if "error" in h]
    assert len(refused) == 6
    assert all(h["error"]["code"] == THROTTLED for h in refused)
    assert all("proto.questionRate" in h["error"]["message"] for h in refused)


@pytest.fixture
def modern_asker(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Daemon, Path]]:
    log = tmp_path / "asker.jsonl"
    servers = {"asker": {"command": sys.executable, "args": [str(ASKER), str(log), "--modern"]}}
    with running_daemon(tmp_path, servers, settings=request.param) as daemon:
        yield daemon, log


def _round(n: int) -> dict[str, Any]:
    asked = _elicitations(n)["requests"]
    return {"inputRequests": {f"q{i}": question for i, question in enumerate(asked)}}


def _calls_received(log: Path) -> list[dict[str, Any]]:
    frames = [json.loads(line)["frame"] for line in log.read_text().splitlines()]
    return [f for f in frames if f.get("method") == "tools/call"]


@pytest.mark.obligation("C-ELIC-8", "C-SAMP-10")
@pytest.mark.parametrize(
    "modern_asker", [{"proto.questionsOpen": 100, "proto.questionRate": 1}], indirect=True
)
def test_a_modern_round_leaves_the_refused_questions_out_of_its_retry(
    modern_asker: tuple[Daemon, Path],
) -> None:
    daemon, log = modern_asker
    thread, replies = _asking(daemon, _round(12))
    declined = 0

    def declined_all_until_done() -> bool:
        nonlocal declined
        with daemon.http() as api:
            for question in _pending(daemon):
                assert api.post(f"/v1/questions/{question['id']}/decline").status_code == 200
                declined += 1
        return not thread.is_alive()

    # Asked one after another: each is declined as it comes. Twelve take well under the
    # eight seconds that would refill the burst of four for all of them.
    wait_until(declined_all_until_done, timeout=60)
    thread.join(timeout=10)
    assert replies and replies[0].status_code == 200, replies
    body = replies[0].json()
    retried = json.loads(body.get("result", body)["content"][0]["text"])["params"]
    answered = retried["inputResponses"]
    assert 4 <= len(answered) == declined < 12
    assert set(answered) < set(_round(12)["inputRequests"])
    assert all(a == {"action": "decline"} for a in answered.values())
    assert len(_calls_received(log)) == 2  # the call, and its one retry
    assert any("left unanswered" in line["msg"] for line in daemon.log_lines())


@pytest.mark.obligation("C-ELIC-8", "C-SAMP-10")
@pytest.mark.parametrize("modern_asker", [{"proto.questionsOpen": 1}], indirect=True)
def test_a_modern_round_whose_questions_are_all_refused_fails_at_once(
    modern_asker: tuple[Daemon, Path],
) -> None:
    daemon, log = modern_asker
    first, replies = _asking(daemon, _round(1))
    wait_until(lambda: _pending(daemon), timeout=60)
    [held] = _pending(daemon)  # the one open question the setting allows
    with daemon.http() as api:
        body = {"server": "asker", "tool": "ask", "arguments": _round(2)}
        refused = api.post("/v1/call", json=body, timeout=60)
        error = refused.json()["error"]
        assert refused.status_code == 502 and error["code"] == "upstream_error", error
        assert "questions were all refused" in error["message"]
        assert "proto.questionsOpen" in error["message"]
        assert len(_calls_received(log)) == 2  # each call once: the refused one not retried
        assert api.post(f"/v1/questions/{held['id']}/decline").status_code == 200
    first.join(timeout=60)
    assert replies and replies[0].status_code == 200, replies
