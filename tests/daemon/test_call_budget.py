"""``pool.callTimeout`` pauses while the upstream's question is pending: a person taking
their time to answer is not the upstream being slow. A real daemon (callTimeout 2 s),
the official SDK's fixture server (1.23.3) asking mid-call, the broker answering late.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    settings = {"pool.callTimeout": "2s"}
    with running_daemon(tmp_path_factory.mktemp("budget"), {"sdk": sdk_entry()}, settings) as d:
        yield d


@pytest.mark.obligation("C-CANC-10")
def test_the_budget_is_real_for_a_slow_upstream(daemon: Daemon) -> None:
    with daemon.http() as api:
        r = api.post(
            "/v1/call", json={"server": "sdk", "tool": "slow", "arguments": {"seconds": 4}}
        )
    assert r.status_code == 504 and r.json()["error"]["code"] == "upstream_timeout"


def test_a_question_answered_after_the_budget_does_not_time_the_call_out(daemon: Daemon) -> None:
    replies: list[httpx.Response] = []

    def call() -> None:
        with daemon.http() as api:
            body = {"server": "sdk", "tool": "ask", "arguments": {"question": "slowly?"}}
            replies.append(api.post("/v1/call", json=body))

    caller = threading.Thread(target=call)
    caller.start()
    with daemon.http() as api:
        pending: list[dict[str, Any]] = []
        for _ in range(200):  # bounded: the question reaches the broker within seconds
            pending = api.get("/v1/questions").json()["questions"]
            if pending:
                break
            caller.join(timeout=0.05)
        [question] = pending
        # Slow on purpose, nothing to wait for: the person thinks longer than
        # pool.callTimeout, and the call must NOT time out meanwhile.
        time.sleep(3)
        answered = api.post(
            f"/v1/questions/{question['id']}/answer", json={"content": {"answer": "done"}}
        )
        assert answered.status_code == 200
    caller.join(timeout=30)
    assert replies and replies[0].status_code == 200, replies[0].text
    assert replies[0].json()["content"][0]["text"] == "done"
