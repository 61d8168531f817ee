"""A call that stops on a question nobody present can answer returns at once (the CLI
cannot be asked in-band) and goes on as a task; the answer through the broker lets it
finish, and ``mcpx task result`` collects it.

A real daemon with the official SDK's fixture server (1.23.3: ``ask`` elicits one
string field ``answer``; ``slow`` sleeps), the real ``mcpx`` CLI as a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry

EX_TEMPFAIL = 75


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "sdk": sdk_entry("1.23.3"),
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
    }
    with running_daemon(tmp_path_factory.mktemp("detached"), servers) as d:
        yield d


def _answer(daemon: Daemon, qid: str, content: dict[str, Any]) -> None:
    with daemon.http() as api:
        done = api.post(f"/v1/questions/{qid}/answer", json={"content": content})
        assert done.status_code == 200, done.text


def test_cli_call_returns_75_with_the_question_and_task_result_collects(daemon: Daemon) -> None:
    asked = daemon.cli("call", "sdk", "ask", "question=deploy now?")
    assert asked.returncode == EX_TEMPFAIL, asked.stderr
    assert "sdk asks: sdk (via mcpx) asks: deploy now?" in asked.stderr
    qid = re.search(r"mcpx elicit answer (\w+)", asked.stderr)
    task = re.search(r"mcpx task result (\w+)", asked.stderr)
    assert qid and task, asked.stderr
    # Still running: the task waits on the question.
    with daemon.http() as api:
        shown = api.get(f"/v1/tasks/{task[1]}").json()
        assert shown["status"] == "working" and shown["server"] == "sdk"
        early = api.get(f"/v1/tasks/{task[1]}/result", params={"wait": 0})
        assert early.status_code == 202
    pending = daemon.cli("task", "result", task[1], "--wait", "0")
    assert pending.returncode == EX_TEMPFAIL and "still running" in pending.stderr
    _answer(daemon, qid[1], {"answer": "yes"})
    collected = daemon.cli("task", "result", task[1])
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.strip() == "yes"
    shown_json = json.loads(daemon.cli("task", "show", task[1]).stdout)
    assert shown_json["status"] == "completed"
    assert shown_json["result"]["content"][0]["text"] == "yes"


def test_a_call_that_asks_nothing_answers_as_usual(daemon: Daemon) -> None:
    with daemon.http() as api:
        body = {"server": "sdk", "tool": "echo", "arguments": {"text": "hi"}}
        r = api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})
    assert r.status_code == 200 and r.json()["content"][0]["text"] == "hi"


def test_every_caller_waiting_on_the_shared_server_is_told(daemon: Daemon) -> None:
    # A slow call in flight on the server, then one that asks: the question cannot be
    # attributed, so it goes to the broker and both callers return with it.
    replies: dict[str, httpx.Response] = {}

    def call(name: str, tool: str, arguments: dict[str, Any]) -> None:
        with daemon.http() as api:
            body = {"server": "sdk", "tool": tool, "arguments": arguments}
            replies[name] = api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})

    slow = threading.Thread(target=call, args=("slow", "slow", {"seconds": 3}))
    slow.start()
    with daemon.http() as api:
        for _ in range(100):  # bounded: the slow call is in flight within a second
            servers = api.get("/v1/servers").json()["servers"]
            busy = [i for s in servers if s["name"] == "sdk" for i in s["instances"]]
            if any(i.get("inFlight") for i in busy):
                break
            slow.join(timeout=0.05)
    call("ask", "ask", {"question": "which?"})
    slow.join(timeout=30)
    assert replies["ask"].status_code == 202
    assert replies["slow"].status_code == 202, replies["slow"].text
    [question] = replies["ask"].json()["questions"]
    assert replies["slow"].json()["questions"][0]["id"] == question["id"]
    assert question["routing"].startswith("broker")
    _answer(daemon, question["id"], {"answer": "this"})
    with daemon.http() as api:
        for name, text in (("ask", "this"), ("slow", "slept 3.0")):
            task = replies[name].json()["task"]["id"]
            done = api.get(f"/v1/tasks/{task}/result").json()
            assert done["content"][0]["text"] == text, done


def test_unknown_task_is_404(daemon: Daemon) -> None:
    with daemon.http() as api:
        r = api.get("/v1/tasks/nope")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_task"
    shown = daemon.cli("task", "result", "nope")
    assert shown.returncode == 4 and "no task 'nope'" in shown.stderr


@pytest.mark.obligation("S-INPUT-14")
def test_a_declined_sampling_question_is_an_error_upstream(daemon: Daemon) -> None:
    # S-INPUT-14: declining is handled. Only an elicitation has an action: a sampling
    # request declined through the broker reaches the server as a JSON-RPC error, not
    # as a malformed CreateMessageResult.
    with daemon.http() as api:
        body = {"server": "sdk", "tool": "sample", "arguments": {"prompt": "6 x 7?"}}
        parked = api.post("/v1/call", json=body, headers={"Mcpx-Questions": "return"})
        assert parked.status_code == 202, parked.text
        [question] = parked.json()["questions"]
        assert question["method"] == "sampling/createMessage"
        assert api.post(f"/v1/questions/{question['id']}/decline").status_code == 200
        task = parked.json()["task"]["id"]
        done = api.get(f"/v1/tasks/{task}/result").json()
    assert done["isError"] is True
    text = done["content"][0]["text"]
    assert "declined" in text and "Field required" not in text, text


def test_a_question_pending_across_a_restart_is_answered_once_when_asked_again(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # The broker is durable: a question left pending by a daemon that stopped stays
    # listed (its asker is gone, and it says so) and answerable; the same call run
    # again after the restart takes the answer without asking twice, once.
    tmp = tmp_path_factory.mktemp("restart")
    servers = {"sdk": sdk_entry("1.23.3")}
    with running_daemon(tmp, servers) as first:
        asked = first.cli("call", "sdk", "ask", "question=after restart?")
        assert asked.returncode == EX_TEMPFAIL, asked.stderr
        qid = re.search(r"mcpx elicit answer (\w+)", asked.stderr)
        assert qid, asked.stderr
    with running_daemon(tmp, servers) as second:
        with second.http() as api:
            [left] = api.get("/v1/questions").json()["questions"]
        assert left["id"] == qid[1] and "restarted" in left["routing"]
        _answer(second, qid[1], {"answer": "kept"})
        again = second.cli("call", "sdk", "ask", "question=after restart?")
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == "kept"
        # Taken once: the next time it is a new question.
        third = second.cli("call", "sdk", "ask", "question=after restart?")
        assert third.returncode == EX_TEMPFAIL, third.stderr
        assert qid[1] not in third.stderr


def _parked(daemon: Daemon, question: str) -> tuple[str, str]:
    """A CLI call that returned on its question: (question id, task id)."""
    asked = daemon.cli("call", "sdk", "ask", f"question={question}")
    assert asked.returncode == EX_TEMPFAIL, asked.stderr
    qid = re.search(r"mcpx elicit answer (\w+)", asked.stderr)
    task = re.search(r"mcpx task result (\w+)", asked.stderr)
    assert qid and task, asked.stderr
    return qid[1], task[1]


def test_a_result_is_collected_after_a_restart(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The caller that returned on a question comes back by the task's id; a restart in
    # between (an upgrade, `mcpx restart`) does not lose the result it left behind.
    tmp = tmp_path_factory.mktemp("kept")
    servers = {"sdk": sdk_entry("1.23.3")}
    with running_daemon(tmp, servers) as first:
        qid, task = _parked(first, "keep this?")
        _answer(first, qid, {"answer": "kept across"})
        with first.http() as api:
            assert api.get(f"/v1/tasks/{task}/result").status_code == 200
    assert (tmp / "state" / "tasks.db").stat().st_mode & 0o777 == 0o600
    with running_daemon(tmp, servers) as second:
        collected = second.cli("task", "result", task)
        assert collected.returncode == 0, collected.stderr
        assert collected.stdout.strip() == "kept across"
        shown = json.loads(second.cli("task", "show", task).stdout)
        assert shown["status"] == "completed" and shown["server"] == "sdk"
        assert shown["questions"] == [qid]


def test_a_call_the_stopping_daemon_ended_says_so_after_the_restart(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Stopped with the call still waiting on its question: the call is ended with an
    # error (daemon.stopGrace), and that is what the caller finds when it comes back.
    tmp = tmp_path_factory.mktemp("stopped")
    servers = {"sdk": sdk_entry("1.23.3")}
    with running_daemon(tmp, servers, {"daemon.stopGrace": "1s"}) as first:
        _, task = _parked(first, "never answered?")
    with running_daemon(tmp, servers) as second:
        with second.http() as api:
            shown = api.get(f"/v1/tasks/{task}").json()
            result = api.get(f"/v1/tasks/{task}/result")
        assert shown["status"] == "failed", shown
        assert "mcpx is stopping" in shown["error"]["message"], shown
        assert result.status_code == 502 and result.json()["error"]["code"] == "upstream_error"
        told = second.cli("task", "result", task)
        assert told.returncode != 0 and "mcpx is stopping" in told.stderr, told.stderr


def test_a_call_a_killed_daemon_was_running_is_failed_not_unknown(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # SIGKILL: nothing ran at the end, so the next daemon marks what was unfinished.
    tmp = tmp_path_factory.mktemp("killed")
    servers = {"sdk": sdk_entry("1.23.3")}
    with running_daemon(tmp, servers) as first:
        _, task = _parked(first, "killed?")
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=30)
    with running_daemon(tmp, servers) as second:
        with second.http() as api:
            shown = api.get(f"/v1/tasks/{task}").json()
        assert shown["status"] == "failed", shown
        assert "killed or crashed" in shown["error"]["message"], shown
