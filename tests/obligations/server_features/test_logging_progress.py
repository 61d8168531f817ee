"""Server obligations on features: logging (where log lines and progress go, no secrets,
no log notifications of mcpx's own, log levels checked and logging declared) and progress
(no progress token on questions, no tasks, no prompt list changes).

The real daemon (fixture ``daemon``, one for the package) and its upstreams are described in
``conftest.py`` of this directory; shared helpers are in ``helpers.py``.

Hosts: ``mcpx serve`` over stdio (raw lines) and ``/mcp`` over HTTP (raw requests). Every
frame the daemon sends is traced and checked strictly against the host's revision when the
daemon stops; the frames a test reads are also checked with ``sent_frames``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from obligations.server_features.helpers import (
    LEGACY,
    META,
    SECRET,
    SUB_ID,
    _call,
    _drain,
    _listen_frame,
    _listening,
    _modern,
    _serve,
    _until,
)
from support.daemon import Daemon
from support.modern import MODERN, modern_meta, modern_params
from support.schemas import FrameLog

# --- logging --------------------------------------------------------------------------


def _slow_call(meta: dict[str, Any]) -> dict[str, Any]:
    return _call("demo", "slow", {"seconds": 0.6, "steps": 4}, meta)


@pytest.mark.obligation("S-LOG-5", "S-PROG-9", "S-SUB-7", "S-PROG-3")
def test_progress_and_log_lines_go_on_the_call_stream_never_on_a_listen_stream(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    meta = {**META, "io.modelcontextprotocol/logLevel": "debug", "progressToken": "p-1"}
    url = daemon.info["url"]
    with _listening(url, "listen-9", {"resourcesListChanged": True}) as listened:
        with httpx.Client(base_url=url, timeout=60) as mcp:
            frames = _modern(mcp, "tools/call", _slow_call(meta), name="mcpx_call", rid=4)
        time.sleep(0.5)  # anything misrouted would be on the listen stream by now
        seen = list(listened)
    for frame in frames[:-1]:
        sent_frames.sent(frame, MODERN)
    sent_frames.sent(frames[-1], MODERN, answering="tools/call")
    progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
    logs = [f for f in frames if f.get("method") == "notifications/message"]
    assert progress and logs, frames  # on the call's own stream, before its response
    assert frames[-1]["id"] == 4 and "result" in frames[-1]
    # Human-readable progress text, relayed with the values.
    assert all(isinstance(p.get("message"), str) and p["message"].strip() for p in progress)
    # The listen stream carried its acknowledgement and nothing else.
    assert [f["method"] for f in seen] == ["notifications/subscriptions/acknowledged"], seen
    # Nor on stdio: request-scoped notifications carry no subscription id.
    with _serve(daemon) as peer:
        peer.send(_listen_frame("L", {"resourcesListChanged": True}))
        assert _until(peer, lambda got: bool(got))[0]["params"]["_meta"][SUB_ID] == "L"
        reply = peer.request(5, "tools/call", _slow_call(meta), timeout=60)
        assert reply["result"]["content"][0]["text"].startswith("slept")
        noted = peer.notifications
        assert {n["method"] for n in noted} == {"notifications/progress", "notifications/message"}
        assert not [n for n in noted if SUB_ID in (n["params"].get("_meta") or {})]


@pytest.mark.obligation("S-LOG-7")
def test_what_hosts_are_told_never_carries_configured_secrets(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    told: list[dict[str, Any]] = []
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        assert peer.request(1, "logging/setLevel", {"level": "debug"})["result"] == {}
        for rid, server in enumerate(("remote", "broken"), start=2):
            reply = peer.request(
                rid, "tools/call", _call(server, "echo", {"text": "x"}), timeout=60
            )
            assert reply["result"]["isError"] is True  # it failed, and said so
            assert server in json.dumps(reply)
            told.append(reply)
        servers = peer.request(
            4, "tools/call", {"name": "mcpx_servers", "arguments": {}}, timeout=60
        )
        told += [servers, *peer.notifications]
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        meta = {**META, "io.modelcontextprotocol/logLevel": "debug"}
        told += _modern(
            mcp, "tools/call", _call("remote", "echo", {"text": "x"}, meta), name="mcpx_call"
        )
        told += _modern(
            mcp,
            "resources/read",
            {"uri": "mcpx://remote/x%3A%2F%2Fy"},
            name="mcpx://remote/x%3A%2F%2Fy",
        )
    assert "remote" in json.dumps(servers)
    assert SECRET not in json.dumps(told)
    # Nor anything else the daemon sent any host in this module so far.
    assert SECRET not in json.dumps(daemon.sent_frames())
    sent_frames.sent(told[0], LEGACY, answering="tools/call")


# S-LOG-9 (reading: mcpx sends no log notifications of its own)
@pytest.mark.obligation("S-LOG-9")
def test_mcpx_itself_emits_no_log_notifications(daemon: Daemon, sent_frames: FrameLog) -> None:
    meta = {**META, "io.modelcontextprotocol/logLevel": "debug"}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        # A call whose upstream logs nothing, one that fails in mcpx, a listing, a bad read.
        asked = [
            _modern(
                mcp, "tools/call", _call("demo", "echo", {"text": "x"}, meta), name="mcpx_call"
            ),
            _modern(mcp, "tools/call", _call("nope", "echo", {}, meta), name="mcpx_call"),
            _modern(mcp, "tools/list", {}, meta=meta),
            _modern(
                mcp, "resources/read", {"uri": "mcpx://nope/x"}, name="mcpx://nope/x", meta=meta
            ),
        ]
    methods = ("tools/call", "tools/call", "tools/list", "resources/read")
    for frames, method in zip(asked, methods, strict=True):
        assert len(frames) == 1, frames  # the answer alone: no notifications/message
        sent_frames.sent(frames[0], MODERN, answering=method)
    assert asked[1][0]["result"]["isError"] is True


@pytest.mark.obligation("S-LOG-1", "S-LOG-3", "S-LOG-6")
def test_log_levels_are_checked_and_logging_is_declared(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    def modern(host: Any, rid: int, method: str, **meta: Any) -> Any:
        return host.request(rid, method, modern_params(meta=modern_meta(**meta)), timeout=60)

    level = "io.modelcontextprotocol/logLevel"
    with _serve(daemon) as host:
        found = modern(host, 1, "server/discover")
        loud = modern(host, 2, "tools/list", **{level: "loud"})
        fine = modern(host, 3, "tools/list", **{level: "info"})
    sent_frames.sent(found, MODERN, answering="server/discover")
    sent_frames.sent(loud, MODERN, answering="tools/list")
    # mcpx relays upstreams' log lines to a 2026-07-28 host that names a level: declared.
    assert found["result"]["capabilities"]["logging"] == {}, found
    assert loud["error"]["code"] == -32602 and "logLevel" in loud["error"]["message"], loud
    assert "result" in fine, fine
    with _serve(daemon) as host:
        host.initialize(LEGACY)
        bad = host.request(1, "logging/setLevel", {"level": "loud"}, timeout=60)
        good = host.request(2, "logging/setLevel", {"level": "debug"}, timeout=60)
    sent_frames.sent(bad, LEGACY, answering="logging/setLevel")
    assert bad["error"]["code"] == -32602, bad
    assert good["result"] == {}, good


# --- progress -------------------------------------------------------------------------


# S-PROG-7 (nothing to check: mcpx puts no progressToken on the requests it sends hosts)
@pytest.mark.obligation("S-PROG-7")
def test_questions_mcpx_puts_to_a_host_carry_no_progress_token(daemon: Daemon) -> None:
    with _serve(daemon) as peer:
        peer.initialize(LEGACY, {"elicitation": {}})

        def answer(request: dict[str, Any]) -> dict[str, Any]:
            return {"action": "accept", "content": {"answer": "Ada"}}

        reply = peer.request(
            3,
            "tools/call",
            _call("legacy", "ask", {"question": "name?"}),
            timeout=60,
            on_request=answer,
        )
        assert reply["result"]["content"][0]["text"] == "Ada"
    [question] = peer.server_requests
    assert question["method"] == "elicitation/create"
    assert "progressToken" not in (question["params"].get("_meta") or {})


# S-PROG-8 S-CANC-6 (2025-11-25 core tasks; tests/server/test_core_tasks.py has the rest)
@pytest.mark.obligation("S-PROG-8", "S-CANC-6")
def test_a_task_keeps_its_progress_token_and_only_tasks_cancel_stops_it(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        # S-PROG-8: the call's progress goes on with the request's token after the
        # CreateTaskResult answered it, until the task ends.
        params = {**_slow_call({"progressToken": "p-1"}), "task": {}}
        created = peer.request(1, "tools/call", params, timeout=60)
        task_id = created["result"]["task"]["taskId"]
        before = len(peer.notifications)
        done = peer.request(2, "tasks/result", {"taskId": task_id}, timeout=60)
        after = [n for n in peer.notifications[before:] if n["method"] == "notifications/progress"]
        assert after and all(n["params"]["progressToken"] == "p-1" for n in after), after
        assert done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id
        # S-CANC-6: cancelling the request that made the task does not stop the task …
        params = {**_call("demo", "slow", {"seconds": 30}), "task": {}}
        long = peer.request(3, "tools/call", params, timeout=60)["result"]["task"]["taskId"]
        peer.notify("notifications/cancelled", {"requestId": 3})
        still = peer.request(4, "tasks/get", {"taskId": long}, timeout=60)
        assert still["result"]["status"] == "working", still
        # … tasks/cancel does.
        cancelled = peer.request(5, "tasks/cancel", {"taskId": long}, timeout=60)
        assert cancelled["result"]["status"] == "cancelled", cancelled
    for reply, method in ((created, "tools/call"), (done, "tasks/result"), (still, "tasks/get")):
        sent_frames.sent(reply, LEGACY, answering=method)
    sent_frames.sent(cancelled, LEGACY, answering="tasks/cancel")
    for note in peer.notifications:
        sent_frames.sent(note, LEGACY)


# S-PROMPT-2 (not declared: prompts.listChanged is false, so no prompt change is sent)
@pytest.mark.obligation("S-PROMPT-2")
def test_prompt_list_changes_are_neither_promised_nor_sent(daemon: Daemon) -> None:
    with _serve(daemon) as peer:
        caps = peer.initialize(LEGACY)["capabilities"]
        assert caps["prompts"]["listChanged"] is False
        reply = peer.request(
            1, "tools/call", _call("conformance", "test_trigger_prompt_change", {}), timeout=60
        )
        assert "result" in reply, reply
        seen = peer.notifications + _drain(peer, 2)
    assert not [m for m in seen if m.get("method") == "notifications/prompts/list_changed"]
