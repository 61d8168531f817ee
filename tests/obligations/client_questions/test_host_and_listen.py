"""What mcpx owes an upstream server whose questions are put to a real /mcp host
session (a legacy host calling ``mcpx_call``), and one it subscribes to or listens to
(resources/subscribe, subscriptions/listen, a restarted modern server).

The scripted asker and the shared helpers are in ``helpers``; the daemon fixture
(``askers``) is in this directory's ``conftest.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from obligations.client_questions.helpers import (
    FORM,
    LEGACY,
    SAMPLE,
    SAMPLED,
    _call,
    _received,
    _text,
)
from support.daemon import Daemon
from support.schemas import frame_errors
from support.waiting import wait_until

BOTH = "application/json, text/event-stream"


# -- questions put to a /mcp host -----------------------------------------------------


def _host_call(
    daemon: Daemon,
    capabilities: dict[str, Any],
    requests: list[dict[str, Any]],
    answer: dict[str, Any],
    *,
    server: str = "legacy",
) -> tuple[list[dict[str, Any]], Any]:
    """A legacy /mcp host calls an asker through ``mcpx_call`` and answers each question
    put to it with ``answer``: the questions it saw (each checked strictly), and what
    the asker got (legacy: its replies; modern: the retry, as ``inputRequests``)."""
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
    asking: dict[str, Any] = {"requests": requests}
    if server == "modern":
        asking = {"inputRequests": {f"r{n}": r for n, r in enumerate(requests)}}
    arguments = {"server": server, "tool": "ask", "arguments": asking}
    call["params"] = {"name": "mcpx_call", "arguments": arguments}
    seen: list[dict[str, Any]] = []
    init_params = {
        "protocolVersion": LEGACY,
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params}
        r = mcp.post("/mcp", json=init)
        headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        mcp.post("/mcp", json=initialized, headers=headers)
        with mcp.stream("POST", "/mcp", json=call, headers={**headers, "Accept": BOTH}) as r:
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                frame = json.loads(line[len("data: ") :])
                seen.append(frame)
                if "method" in frame and "id" in frame:
                    reply = {"jsonrpc": "2.0", "id": frame["id"], "result": answer}
                    assert mcp.post("/mcp", json=reply, headers=headers).status_code == 202
                if frame.get("id") == 5:
                    break
    asked = [f for f in seen if "method" in f and "id" in f]
    for frame in asked:
        assert frame_errors(frame, LEGACY, sender="server") == [], frame
    return asked, json.loads(seen[-1]["result"]["content"][0]["text"])


# C-ELIC-3: no mode means form: a host that declared form elicitation only is asked.
@pytest.mark.obligation("C-ELIC-3")
def test_an_elicitation_without_mode_is_a_form(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    question = {"message": "colour?", "requestedSchema": schema}
    answer = {"action": "accept", "content": {"colour": "teal"}}
    requests = [{"method": "elicitation/create", "params": question}]
    [asked], [reply] = _host_call(daemon, {"elicitation": {"form": {}}}, requests, answer)
    assert asked["method"] == "elicitation/create"
    assert asked["params"].get("mode", "form") == "form"
    assert asked["params"]["message"] == "legacy (via mcpx) asks: colour?"
    assert reply["result"] == answer


# C-SAMP-5 C-SAMP-6 C-SAMP-7 (the host's: mcpx picks no model; it forwards the request whole)
@pytest.mark.obligation("C-SAMP-5", "C-SAMP-6", "C-SAMP-7")
def test_model_preferences_and_max_tokens_reach_the_host_unchanged(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "modelPreferences": {
            "hints": [{"name": "sonnet"}, {"name": "gpt"}],
            "intelligencePriority": 0.8,
            "speedPriority": 0.2,
        },
        "maxTokens": 5,
    }
    sampled = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
    requests = [{"method": "sampling/createMessage", "params": params}]
    [asked], [reply] = _host_call(daemon, {"sampling": {}}, requests, sampled)
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"] == params  # hints in their order, maxTokens as asked
    assert reply["result"] == sampled


ROOTS_GIVEN = [
    {"uri": "file:///srv/work", "name": "work"},
    {"uri": "https://example.com/x"},
    {"uri": "file:///srv/../etc"},
    {"uri": "file:///srv/%2e%2e/etc"},
    {"uri": "file:///srv/a..b"},
]
ROOTS_KEPT = [{"uri": "file:///srv/work", "name": "work"}, {"uri": "file:///srv/a..b"}]


# C-ROOTS-3 C-ROOTS-4: a host's roots reach the upstream only as file:// URIs without
# ".." segments; the others are dropped, not the whole answer (a legacy server's request
# and a modern one's input request alike).
@pytest.mark.obligation("C-ROOTS-3", "C-ROOTS-4")
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_hosts_roots_are_cut_to_file_uris_without_traversal(
    askers: tuple[Daemon, Path, Path], server: str
) -> None:
    daemon, _, _ = askers
    requests = [{"method": "roots/list", "params": {}}]
    answer = {"roots": ROOTS_GIVEN}
    [asked], got = _host_call(daemon, {"roots": {}}, requests, answer, server=server)
    assert asked["method"] == "roots/list"
    if server == "legacy":
        assert got[0]["result"] == {"roots": ROOTS_KEPT}
    else:
        assert got["params"]["inputResponses"] == {"r0": {"roots": ROOTS_KEPT}}


# S-TASK-20: an upstream's task augmentation (never declared to it) is ignored, and never
# reaches a host: mcpx declares no tasks to hosts.
@pytest.mark.obligation("S-TASK-20")
def test_task_augmentation_never_reaches_a_host(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    task = {"ttl": 60000}
    elicit = {"message": "name?", "requestedSchema": FORM, "task": task}
    answer = {"action": "accept", "content": {"answer": "ada"}}
    requests = [{"method": "elicitation/create", "params": elicit}]
    [asked], [reply] = _host_call(daemon, {"elicitation": {"form": {}}}, requests, answer)
    assert "task" not in asked["params"]
    assert reply["result"] == answer  # the plain result, not a task
    requests = [{"method": "sampling/createMessage", "params": {**SAMPLE, "task": task}}]
    [asked], [reply] = _host_call(daemon, {"sampling": {}}, requests, SAMPLED)
    assert "task" not in asked["params"]
    assert reply["result"] == SAMPLED


# -- subscriptions and listens --------------------------------------------------------


# C-SUB-1: a server that did not declare resources.subscribe is never sent one.
@pytest.mark.obligation("C-SUB-1")
def test_no_subscribe_to_a_server_that_did_not_declare_it(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, legacy_log, _ = askers
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        init_params = {"protocolVersion": LEGACY, "capabilities": {}}
        init_params["clientInfo"] = {"name": "t", "version": "1"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params}
        r = mcp.post("/mcp", json=init)
        headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        listed = mcp.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
            headers=headers,
        ).json()["result"]["resources"]
        [uri] = [r["uri"] for r in listed if "asker" in r["uri"] and "legacy" in r["uri"]]
        sub = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": uri}}
        assert mcp.post("/mcp", json=sub, headers=headers).json()["result"] == {}
        # Something else reaches the server after the subscribe, so it has been read.
        assert _text(_call(daemon, "legacy", "init", {}))["protocolVersion"] == LEGACY
    methods = [e["frame"].get("method") for e in _received(legacy_log)]
    assert "resources/subscribe" not in methods and "resources/unsubscribe" not in methods


# C-SUB-2: a modern server is asked for change notifications only by a listen whose filter
# names what it declared (it declared tools.listChanged only).
@pytest.mark.obligation("C-SUB-2")
def test_a_modern_server_is_listened_to_for_what_it_declared(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, modern_log = askers
    _call(daemon, "modern", "meta", {})
    listens = wait_until(
        lambda: [
            e["frame"]
            for e in _received(modern_log)
            if e["frame"].get("method") == "subscriptions/listen"
        ]
    )
    assert {json.dumps(f["params"]["notifications"]) for f in listens} == {
        json.dumps({"toolsListChanged": True})
    }
    methods = {e["frame"].get("method") for e in _received(modern_log)}
    assert "resources/subscribe" not in methods


# C-SUB-8: a modern server started again (its stdio process ended) is listened to again.
@pytest.mark.obligation("C-SUB-8")
def test_a_restarted_modern_server_gets_a_new_listen(askers: tuple[Daemon, Path, Path]) -> None:
    import os
    import signal

    daemon, _, modern_log = askers
    _call(daemon, "modern", "meta", {})

    def listens() -> int:
        found = _received(modern_log)
        return sum(1 for e in found if e["frame"].get("method") == "subscriptions/listen")

    wait_until(listens)
    with daemon.http() as api:
        [server] = [s for s in api.get("/v1/servers").json()["servers"] if s["name"] == "modern"]
    pids = [i["pid"] for i in server["instances"] if i.get("pid")]
    assert pids, server
    before = listens()
    for pid in pids:  # the asker processes this module's daemon started
        os.kill(pid, signal.SIGTERM)
    # The next call starts it again; the new connection holds a listen of its own.
    wait_until(lambda: _call_ok(daemon))
    wait_until(lambda: listens() > before)
    with daemon.http() as api:
        [server] = [s for s in api.get("/v1/servers").json()["servers"] if s["name"] == "modern"]
    assert {i["pid"] for i in server["instances"]} & set(pids) == set()


def _call_ok(daemon: Daemon) -> bool:
    with daemon.http() as api:
        body = {"server": "modern", "tool": "meta", "arguments": {}}
        return api.post("/v1/call", json=body).status_code == 200
