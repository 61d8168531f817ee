"""Obligations of questions put to hosts (S-INPUT, S-MRTR), tasks (S-TASK, S-TASKX)
and authorization (S-AUTH), against a real daemon.

The upstream ``asker`` is a small legacy server (standard library only, written to the
module's temporary directory) whose tool ``raw`` puts to its client exactly the request its
arguments name (``method``, ``params``) and answers the call with the reply it got (and the
number of calls it has run); its ``completion/complete`` elicits before it answers. It lets
a test send what no well-behaved SDK server sends: a URL elicitation, tool-enabled sampling,
``includeContext``. A second daemon passes through ``tests/fixtures/task_server.py``, a
task-capable upstream on the official SDK. Every frame the daemons send a host is traced and
checked strictly against the host's revision when the module's daemons stop.
"""

from __future__ import annotations

import itertools
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.modern import MODERN, modern_headers, modern_meta
from support.peers import FIXTURES, peer_python, stdio_peer
from support.schemas import FrameLog
from support.waiting import wait_until

LEGACY = "2025-11-25"
LEGACY_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BOTH = "application/json, text/event-stream"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# How long a call may take to ask or end, under load.
CALL_LIMIT = 60.0

ASKER = textwrap.dedent(
    '''
    """A legacy stdio server that asks its client what each call names."""
    import json
    import sys

    LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    RAW = {
        "name": "raw",
        "description": "Put the request named by the arguments to the client.",
        "inputSchema": {
            "type": "object",
            "properties": {"method": {"type": "string"}, "params": {"type": "object"}},
            "required": ["method", "params"],
        },
    }
    PROMPT = {"name": "p", "arguments": [{"name": "a", "required": False}]}
    FORM = {
        "message": "complete what?",
        "requestedSchema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    }
    calls = 0
    asked = 0


    def send(frame):
        sys.stdout.write(json.dumps(frame) + "\\n")
        sys.stdout.flush()


    def ask(method, params):
        """Put a request to the client; its response (other requests served meanwhile)."""
        global asked
        asked += 1
        qid = f"q{asked}"
        send({"jsonrpc": "2.0", "id": qid, "method": method, "params": params})
        while True:
            line = sys.stdin.readline()
            if not line:
                sys.exit(0)
            frame = json.loads(line)
            if "method" not in frame and frame.get("id") == qid:
                return frame
            handle(frame)


    def answer(method, params):
        global calls
        if method == "initialize":
            asked_for = params.get("protocolVersion")
            return {
                "protocolVersion": asked_for if asked_for in LEGACY else "2025-11-25",
                "capabilities": {"tools": {}, "prompts": {}, "completions": {}},
                "serverInfo": {"name": "asker", "version": "1"},
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [RAW]}
        if method == "prompts/list":
            return {"prompts": [PROMPT]}
        if method == "prompts/get":
            text = {"type": "text", "text": "p"}
            return {"messages": [{"role": "user", "content": text}]}
        if method == "tools/call":
            calls += 1
            arguments = params.get("arguments") or {}
            reply = ask(arguments["method"], arguments["params"])
            sent = arguments["params"]
            if sent.get("mode") == "url" and "elicitationId" in sent:
                note = {"elicitationId": sent["elicitationId"]}
                send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                      "params": note})
            text = json.dumps({"call": calls, "reply": reply}, sort_keys=True)
            return {"content": [{"type": "text", "text": text}], "isError": False}
        if method == "completion/complete":
            reply = ask("elicitation/create", FORM)
            result = reply.get("result") or {}
            value = (result.get("content") or {}).get("answer") or result.get("action", "error")
            return {"completion": {"values": [value], "hasMore": False}}
        return None


    def handle(frame):
        if "method" not in frame or "id" not in frame:
            return
        result = answer(frame["method"], frame.get("params") or {})
        if result is None:
            error = {"code": -32601, "message": "Method not found: " + frame["method"]}
            send({"jsonrpc": "2.0", "id": frame["id"], "error": error})
        else:
            send({"jsonrpc": "2.0", "id": frame["id"], "result": result})


    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))
    '''
)

# The questions ``raw`` puts to mcpx, and the host answers to each.
FORM_PARAMS = {
    "message": "your name?",
    "requestedSchema": {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
}
URL_PARAMS = {
    "mode": "url",
    "message": "Connect your account",
    "url": "https://example.com/connect?flow=1",
    "elicitationId": "el-1",
}
USER = {"role": "user", "content": {"type": "text", "text": "p"}}
CONTEXT_SAMPLING = {"messages": [USER], "maxTokens": 10, "includeContext": "thisServer"}


def _host_answer(request: dict[str, Any]) -> dict[str, Any]:
    """What a host answers to a question it was put."""
    if request["method"] == "elicitation/create":
        if request["params"].get("mode") == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": {"answer": "from the host"}}
    content = {"type": "text", "text": "from the host"}
    return {"role": "assistant", "content": content, "model": "m"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("obligations-d")
    script = tmp / "asker.py"
    script.write_text(ASKER)
    servers = {"asker": {"command": sys.executable, "args": [str(script)]}}
    with running_daemon(tmp, servers) as d:
        yield d


# -- hosts ----------------------------------------------------------------------------


def _legacy_session(
    mcp: httpx.Client, rev: str, caps: dict[str, Any]
) -> tuple[dict[str, str], dict[str, Any]]:
    """A legacy /mcp session at ``rev``: the headers its later requests carry, and the
    initialize result."""
    params = {"protocolVersion": rev, "capabilities": caps}
    params["clientInfo"] = {"name": "obligations-d", "version": "1"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    r = mcp.post("/mcp", json=init, headers={"Accept": BOTH})
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    assert result["protocolVersion"] == rev, result
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Accept": BOTH}
    if rev not in ("2024-11-05", "2025-03-26"):
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers, result


def _post(
    mcp: httpx.Client,
    frame: dict[str, Any],
    headers: dict[str, str],
    seen: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """POST ``frame``; its response, from a JSON body or the event stream. Frames met on
    the stream go to ``seen``; a request among them is answered (``_host_answer``)."""
    with mcp.stream("POST", "/mcp", json=frame, headers=headers) as r:
        if r.headers["content-type"].startswith("application/json"):
            r.read()
            body: dict[str, Any] = r.json()
            return body
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        met: list[dict[str, Any]] = []
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            got = json.loads(line[len("data: ") :])
            met.append(got)
            if seen is not None:
                seen.append(got)
            if "method" in got and "id" in got:
                reply = {"jsonrpc": "2.0", "id": got["id"], "result": _host_answer(got)}
                assert mcp.post("/mcp", json=reply, headers=headers).status_code == 202
            elif got.get("id") == frame["id"]:
                return got
    raise AssertionError(f"no response to {frame['id']} in {met}")


def _legacy_call(
    daemon: Daemon, caps: dict[str, Any], method: str, params: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``method`` on a fresh 2025-11-25 session that declared ``caps``: every frame the
    host received on the POST's stream, and the response. Questions are answered."""
    seen: list[dict[str, Any]] = []
    frame = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        headers, _ = _legacy_session(mcp, LEGACY, caps)
        return seen, _post(mcp, frame, headers, seen)


def _meta(caps: dict[str, Any]) -> dict[str, Any]:
    return modern_meta(caps, client="obligations-d")


def _modern_headers(method: str, params: dict[str, Any]) -> dict[str, str]:
    return modern_headers(method, params, accept=BOTH)


def _modern_post(
    mcp: httpx.Client, method: str, params: dict[str, Any], rid: int = 1
) -> dict[str, Any]:
    frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    seen: list[dict[str, Any]] = []
    reply = _post(mcp, frame, _modern_headers(method, params), seen)
    # A 2026-07-28 host is never sent a request (S-MRTR-1).
    assert [f for f in seen if "method" in f and "id" in f] == [], seen
    return reply


def _modern_call(
    daemon: Daemon, caps: dict[str, Any], method: str, params: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``method`` as a 2026-07-28 host that declared ``caps``: the input_required results
    it got on the way (each answered, and retried), and the last response."""
    rounds: list[dict[str, Any]] = []
    sent = {**params, "_meta": _meta(caps)}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        for rid in range(1, 6):
            reply = _modern_post(mcp, method, sent, rid)
            result = reply.get("result") or {}
            if result.get("resultType") != "input_required":
                return rounds, reply
            rounds.append(result)
            answers = {k: _host_answer(r) for k, r in result.get("inputRequests", {}).items()}
            sent = {**sent, "inputResponses": answers, "requestState": result["requestState"]}
    raise AssertionError(f"still asking after {len(rounds)} rounds: {rounds}")


def _with_broker(
    daemon: Daemon, host: Callable[[], tuple[list[dict[str, Any]], dict[str, Any]]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Run ``host``'s call while declining every question that reaches the broker: what
    the host was put (frames or rounds), what the broker held, and the response."""
    held: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=1) as pool, daemon.http() as api:
        running: Future[tuple[list[dict[str, Any]], dict[str, Any]]] = pool.submit(host)

        def declined_all_until_done() -> bool:
            for question in api.get("/v1/questions").json()["questions"]:
                held.append(question)
                declined = api.post(f"/v1/questions/{question['id']}/decline")
                assert declined.status_code == 200, declined.text
            return running.done()

        wait_until(declined_all_until_done, timeout=3 * CALL_LIMIT, message="the host's call")
        put, response = running.result()
    return put, held, response


def _raw(method: str, params: dict[str, Any]) -> dict[str, Any]:
    args = {"server": "asker", "tool": "raw", "arguments": {"method": method, "params": params}}
    return {"name": "mcpx_call", "arguments": args}


def _reply(response: dict[str, Any]) -> dict[str, Any]:
    """What ``raw`` reported: the call number and the reply its question got."""
    result = response["result"]
    assert result.get("isError") is False, result
    text = "".join(c["text"] for c in result["content"] if c["type"] == "text")
    out: dict[str, Any] = json.loads(text)
    return out


def _put_to_host(era: str, put: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions the host itself was put, as ``{method, params}``."""
    if era == LEGACY:
        return [
            {"method": f["method"], "params": f["params"]}
            for f in put
            if "method" in f and "id" in f
        ]
    return [r for rounds in put for r in rounds.get("inputRequests", {}).values()]


def _call_as(daemon: Daemon, era: str, caps: dict[str, Any], method: str, params: Any) -> Any:
    if era == LEGACY:
        return _with_broker(daemon, lambda: _legacy_call(daemon, caps, method, params))
    return _with_broker(daemon, lambda: _modern_call(daemon, caps, method, params))


# -- S-INPUT: a host is put only the questions it declared ------------------------------

# (question, its params, what a host declares that may not be put it, what one declares
# that may). The host's answer and the broker's refusal differ, so the reply says which.
# Tool-enabled sampling is not among them: mcpx never declares sampling.tools upstream, so
# it refuses such a question at once (C-SAMP-3), and no host is ever put one (S-INPUT-15,
# tests/obligations/client_questions/test_broker_questions.py).
GATED = [
    pytest.param(
        "elicitation/create",
        URL_PARAMS,
        {"elicitation": {}},
        {"elicitation": {"url": {}}},
        id="url-elicitation",
    ),
    pytest.param(
        "sampling/createMessage",
        CONTEXT_SAMPLING,
        {"sampling": {}},
        {"sampling": {"context": {}}},
        id="include-context",
    ),
]


@pytest.mark.obligation("S-INPUT-4", "S-INPUT-16")
@pytest.mark.parametrize("era", [LEGACY, MODERN])
@pytest.mark.parametrize(("question", "params", "narrow", "wide"), GATED)
def test_a_host_is_put_only_the_question_modes_it_declared(
    daemon: Daemon,
    era: str,
    question: str,
    params: dict[str, Any],
    narrow: dict[str, Any],
    wide: dict[str, Any],
) -> None:
    # S-INPUT-4: `elicitation: {}` is form only: no mode "url" reaches the host.
    # S-INPUT-16: includeContext other than "none" only to one that declared
    # sampling.context. What the host may not be put waits in the broker instead.
    put, held, response = _call_as(daemon, era, narrow, "tools/call", _raw(question, params))
    assert _put_to_host(era, put) == [], put
    [brokered] = held
    assert brokered["method"] == question and brokered["server"] == "asker", brokered
    if question == "elicitation/create":
        assert brokered["params"]["mode"] == "url", brokered
        assert _reply(response)["reply"]["result"] == {"action": "decline"}, response
    else:
        assert ("tools" in brokered["params"]) == ("tools" in params), brokered
        assert brokered["params"].get("includeContext") == params.get("includeContext")
        assert _reply(response)["reply"]["error"]["code"] == -1, response  # declined

    # The same question to a host that declared the mode: put to it, answered by it.
    put, held, response = _call_as(daemon, era, wide, "tools/call", _raw(question, params))
    assert held == [], held
    [asked] = _put_to_host(era, put)
    assert asked["method"] == question, asked
    if question == "elicitation/create":
        assert asked["params"]["mode"] == "url" and asked["params"]["url"] == params["url"]
        # The id correlates a completion notification, which only 2025-11-25 has.
        assert ("elicitationId" in asked["params"]) == (era == LEGACY), asked
    else:
        assert asked["params"].get("tools") == params.get("tools"), asked
        assert asked["params"].get("includeContext") == params.get("includeContext"), asked
    assert _reply(response)["reply"]["result"] == _host_answer(asked), response


# S-INPUT-5, S-INPUT-6 (not offered: mcpx never sends notifications/elicitation/complete)
@pytest.mark.obligation("S-INPUT-5", "S-INPUT-6")
def test_a_url_elicitation_reaches_a_legacy_host_well_formed_and_no_completion_follows(
    daemon: Daemon,
) -> None:
    # S-INPUT-5: the URL elicitation put to a 2025-11-25 host has its message, mode "url",
    # the url and its elicitationId (and every frame is validated strictly when the
    # daemon stops). S-INPUT-6: the upstream's notifications/elicitation/complete is not
    # relayed, to this host or any other: mcpx sends that notification to nobody.
    caps = {"elicitation": {"form": {}, "url": {}}}
    put, held, response = _with_broker(
        daemon,
        lambda: _legacy_call(daemon, caps, "tools/call", _raw("elicitation/create", URL_PARAMS)),
    )
    assert held == []
    [question] = [f for f in put if "method" in f]
    attributed = {**URL_PARAMS, "message": "asker (via mcpx) asks: Connect your account"}
    assert question["params"] == attributed, question
    assert all(f.get("method") != "notifications/elicitation/complete" for f in put), put
    traced = [line["frame"] for line in daemon.sent_frames()]
    assert all(f.get("method") != "notifications/elicitation/complete" for f in traced)
    assert _reply(response)["reply"]["result"] == {"action": "accept"}


# -- S-MRTR ---------------------------------------------------------------------------


@pytest.mark.obligation("S-MRTR-2")
def test_input_required_comes_only_from_tools_call_prompts_get_and_resources_read(
    daemon: Daemon,
) -> None:
    # A 2026-07-28 host that can be asked (it declared elicitation) completes an argument
    # of asker's prompt; the upstream elicits before it answers. completion/complete may
    # not come back input_required: the question waits in the broker, and the completion
    # comes back complete once the broker's answer (a decline) reaches the upstream.
    caps = {"elicitation": {}}
    params = {
        "ref": {"type": "ref/prompt", "name": "asker_p"},
        "argument": {"name": "a", "value": ""},
    }
    put, held, response = _call_as(daemon, MODERN, caps, "completion/complete", params)
    assert put == [], put
    [brokered] = held
    assert brokered["method"] == "elicitation/create", brokered
    result = response["result"]
    assert result["resultType"] == "complete", result
    assert result["completion"]["values"] == ["decline"], result
    # Nor do the listings, for the same host.
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        for rid, method in enumerate(["tools/list", "prompts/list", "resources/list"], 10):
            listed = _modern_post(mcp, method, {"_meta": _meta(caps)}, rid)["result"]
            assert listed["resultType"] == "complete", listed


# S-MRTR-8 (reading: a replayed requestState is idempotent; it never runs the call again)
@pytest.mark.obligation("S-MRTR-8")
def test_a_replayed_request_state_returns_the_same_outcome_without_a_second_run(
    daemon: Daemon,
) -> None:
    caps = {"elicitation": {}}
    params = {**_raw("elicitation/create", FORM_PARAMS), "_meta": _meta(caps)}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        first = _modern_post(mcp, "tools/call", params)["result"]
        assert first["resultType"] == "input_required", first
        [key] = first["inputRequests"]
        retry = {
            **params,
            "inputResponses": {key: _host_answer(first["inputRequests"][key])},
            "requestState": first["requestState"],
        }
        done = _modern_post(mcp, "tools/call", retry, 2)["result"]
        assert done["resultType"] == "complete", done
        # The same retry again, and once more with another answer: the call is over, its
        # outcome is given again; the upstream's tool ran once (its call count is the same).
        again = _modern_post(mcp, "tools/call", retry, 3)["result"]
        other = {**retry, "inputResponses": {key: {"action": "decline"}}}
        third = _modern_post(mcp, "tools/call", other, 4)["result"]
    assert _reply({"result": again}) == _reply({"result": done})
    assert _reply({"result": third}) == _reply({"result": done})
    assert _reply({"result": done})["reply"]["result"]["content"] == {"answer": "from the host"}


@pytest.mark.obligation("S-MRTR-11")
def test_a_retry_needs_no_sticky_routing(daemon: Daemon) -> None:
    # Asked over HTTP, retried from another connection on another transport (a stdio
    # host through `mcpx serve`): the retry alone carries what resumes the call.
    caps = {"elicitation": {}}
    params = {**_raw("elicitation/create", FORM_PARAMS), "_meta": _meta(caps)}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        first = _modern_post(mcp, "tools/call", params)["result"]
    assert first["resultType"] == "input_required", first
    [(key, request)] = first["inputRequests"].items()
    retry = {
        **params,
        "inputResponses": {key: _host_answer(request)},
        "requestState": first["requestState"],
    }
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer:
        reply = peer.request(1, "tools/call", retry, timeout=120)
        # No request was put to the stdio host: the retry answered the question.
        assert peer.server_requests == []
    result = reply["result"]
    assert result["resultType"] == "complete", result
    assert _reply(reply)["reply"]["result"]["content"] == {"answer": "from the host"}


@pytest.fixture(scope="module")
def forgetful(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon whose parked calls wait 2 s for the host's retry (proto.askTTL)."""
    tmp = tmp_path_factory.mktemp("obligations-d-forgetful")
    script = tmp / "asker.py"
    script.write_text(ASKER)
    servers = {"asker": {"command": sys.executable, "args": [str(script)]}}
    with running_daemon(tmp, servers, {"proto.askTTL": "2s"}) as d:
        yield d


def _in_flight(daemon: Daemon) -> int:
    with daemon.http() as api:
        listed = api.get("/v1/servers").json()["servers"]
    [entry] = [s for s in listed if s["name"] == "asker"]
    return sum(int(i["inFlight"]) for i in entry["instances"])


@pytest.mark.obligation("S-MRTR-9")
def test_a_host_that_never_retries_leaves_nothing_held(forgetful: Daemon) -> None:
    # The host is asked and never comes back: the call gives up after proto.askTTL (the
    # upstream is told its question was cancelled), the upstream is not left with a call
    # in flight, and the state, once the call's end is forgotten, is refused as over.
    caps = {"elicitation": {}}
    params = {**_raw("elicitation/create", FORM_PARAMS), "_meta": _meta(caps)}
    with httpx.Client(base_url=forgetful.info["url"], timeout=120) as mcp:
        first = _modern_post(mcp, "tools/call", params)["result"]
        assert first["resultType"] == "input_required", first
        assert _in_flight(forgetful) == 1
        wait_until(lambda: _in_flight(forgetful) == 0, timeout=CALL_LIMIT)
        # The host comes back late: its state resumes nothing that still runs.
        [key] = first["inputRequests"]
        late = {
            **params,
            "inputResponses": {key: _host_answer(first["inputRequests"][key])},
            "requestState": first["requestState"],
        }
        # While kept (proto.askTTL) it gives the call's end: the upstream was told the
        # question was cancelled; then the state is refused as over.
        kept = _modern_post(mcp, "tools/call", late, 3)["result"]
        assert _reply({"result": kept})["reply"]["result"] == {"action": "cancel"}, kept
        rids = itertools.count(4)

        def refusal() -> dict[str, Any] | None:
            reply = _modern_post(mcp, "tools/call", late, next(rids))
            return reply if "error" in reply else None

        refused = wait_until(refusal, timeout=CALL_LIMIT, interval=0.5)
        assert refused["error"]["code"] == -32602, refused
        assert refused["error"]["data"]["reason"] == "over", refused
        # The upstream is free: the next call runs (and is asked afresh).
        fresh = _modern_post(mcp, "tools/call", params, 2)["result"]
        assert fresh["resultType"] == "input_required", fresh
        assert fresh["requestState"] != first["requestState"]


# -- S-TASK, S-TASKX: tasks, per era ---------------------------------------------------

TASK_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
CORE_TASKS = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


# S-TASK-1, S-TASK-3 (tests/server/test_core_tasks.py runs tasks through an SDK host)
@pytest.mark.obligation("S-TASK-1", "S-TASK-3")
def test_core_tasks_are_declared_to_2025_11_25_only_and_only_mcpx_call_and_exec_take_one(
    daemon: Daemon,
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        for rev in LEGACY_REVISIONS:
            headers, initialized = _legacy_session(mcp, rev, {"sampling": {}, "roots": {}})
            caps = initialized["capabilities"]
            # S-TASK-1: the tasks capability where the revision defines it, nowhere else.
            assert caps.get("tasks") == (CORE_TASKS if rev == LEGACY else None), (rev, caps)
            listed = mcp.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
            ).json()["result"]
            # S-TASK-3: only mcpx_call and mcpx_exec say they take a task, and only where
            # Tool has it.
            executions = {t["name"]: t["execution"] for t in listed["tools"] if "execution" in t}
            optional = {name: {"taskSupport": "optional"} for name in ("mcpx_call", "mcpx_exec")}
            assert executions == (optional if rev == LEGACY else {}), (rev, listed)
            if rev != LEGACY:
                continue
            # A task-augmented call of a tool that declares no taskSupport: -32601.
            params = {"name": "mcpx_servers", "arguments": {}, "task": {"ttl": 60000}}
            frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            error = mcp.post("/mcp", json=frame, headers=headers).json()["error"]
            assert error["code"] == -32601, error
            # tasks/* are served: an id the host does not own is -32602, its list empty.
            for rid, method in enumerate(TASK_METHODS, 3):
                call = {"jsonrpc": "2.0", "id": rid, "method": method}
                call["params"] = {} if method == "tasks/list" else {"taskId": "t-1"}
                reply = mcp.post("/mcp", json=call, headers=headers).json()
                if method == "tasks/list":
                    assert reply["result"] == {"tasks": []}, reply
                else:
                    assert reply["error"]["code"] == -32602, (method, reply)


# S-TASKX-1: the extension is declared to 2026-07-28 hosts, core tasks only to 2025-11-25
@pytest.mark.obligation("S-TASKX-1")
def test_modern_hosts_get_the_tasks_extension_never_core_tasks(daemon: Daemon) -> None:
    declaring = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        discovered = _modern_post(mcp, "server/discover", {"_meta": _meta({})})["result"]
        caps = discovered["capabilities"]
        # The extension is declared (a daemon that keeps tasks), core tasks never.
        assert "tasks" not in caps, caps
        assert TASKS_EXTENSION in caps.get("extensions", {}), caps
        # A fast call is answered with its own result, even to a host that declared it.
        params = {"name": "mcpx_servers", "arguments": {}, "_meta": _meta(declaring)}
        result = _modern_post(mcp, "tools/call", params, 2)["result"]
        assert result["resultType"] == "complete" and "content" in result, result
        # The extension's methods are served: an id no task has is -32602.
        for rid, method in enumerate(("tasks/get", "tasks/update", "tasks/cancel"), 3):
            params = {"taskId": "t-1", "_meta": _meta(declaring)}
            if method == "tasks/update":
                params["inputResponses"] = {}
            error = _modern_post(mcp, method, params, rid)["error"]
            assert error["code"] == -32602, (method, error)
        # Core tasks' own methods are not the extension's.
        for rid, method in enumerate(("tasks/result", "tasks/list"), 6):
            params = {"taskId": "t-1", "_meta": _meta(declaring)}
            error = _modern_post(mcp, method, params, rid)["error"]
            assert error["code"] == -32601, (method, error)
    # Nothing mcpx answered any host in this module says resultType "task".
    for line in daemon.sent_frames():
        assert line["frame"].get("result", {}).get("resultType") != "task", line


@pytest.fixture(scope="module")
def tasky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon passing through a task-capable upstream (tests/fixtures/task_server.py)."""
    tmp = tmp_path_factory.mktemp("obligations-d-tasky")
    servers = {"tasky": _task_server()}
    with running_daemon(tmp, servers, {"mcp.passthrough": ["tasky"]}) as d:
        yield d


def _task_server() -> dict[str, Any]:
    return {"command": str(peer_python("1.23.3")), "args": [str(FIXTURES / "task_server.py")]}


def _text_of(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.mark.obligation("S-TASK-2", "S-TASKX-2", "S-TASKX-4")
def test_task_metadata_never_reaches_a_pass_through_upstream(
    tasky: Daemon, sent_frames: FrameLog
) -> None:
    task = {"ttl": 60000}
    work = {"name": "work", "arguments": {}, "task": task}
    # The upstream, asked directly, makes a task of such a request (a CreateTaskResult):
    # so a plain answer through mcpx shows `task` never reached it.
    entry = _task_server()
    with stdio_peer([entry["command"], *entry["args"]]) as upstream:
        upstream.initialize(LEGACY)
        direct = upstream.request(1, "tools/call", work, timeout=120)
    assert set(direct["result"]) == {"task"}, direct
    with httpx.Client(base_url=tasky.info["url"], timeout=120) as mcp:
        # A 2025-11-25 host: the pass-through tool's execution (optional) makes the call
        # a task of mcpx's own, whose result is the upstream's plain answer.
        headers, initialized = _legacy_session(mcp, LEGACY, {})
        assert initialized["capabilities"]["tasks"] == CORE_TASKS, initialized
        frame = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": work}
        reply = _post(mcp, frame, headers)
        sent_frames.sent(reply, LEGACY, answering="tools/call")
        task_id = reply["result"]["task"]["taskId"]
        frame = {"jsonrpc": "2.0", "id": 5, "method": "tasks/result"}
        reply = _post(mcp, {**frame, "params": {"taskId": task_id}}, headers)
        sent_frames.sent(reply, LEGACY, answering="tasks/result")
        assert reply["result"] == {
            "content": [{"type": "text", "text": "done plainly"}],
            "isError": False,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}},
        }, reply
        # S-TASK-2: a request mcpx declared no task augmentation for is processed
        # normally, its task metadata ignored.
        frame = {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"task": task}}
        reply = _post(mcp, frame, headers)
        sent_frames.sent(reply, LEGACY, answering="tools/list")
        assert "task" not in reply["result"] and reply["result"]["tools"][0]["name"] == "work"
        # S-TASKX-2, S-TASKX-4: a 2026-07-28 host, whether or not it declared the tasks
        # extension (mcpx offers none): a complete CallToolResult, never a task.
        for rid, caps in enumerate(({}, {"extensions": {TASKS_EXTENSION: {}}}), 3):
            reply = _modern_post(mcp, "tools/call", {**work, "_meta": _meta(caps)}, rid)
            sent_frames.sent(reply, MODERN, answering="tools/call")
            result = reply["result"]
            assert result["resultType"] == "complete" and "task" not in result, reply
            assert _text_of(result) == "done plainly", reply


# -- S-AUTH: no authorization ------------------------------------------------------------


# S-AUTH-1, S-AUTH-2, S-AUTH-7, S-AUTH-9 (not offered: /mcp implements no authorization)
@pytest.mark.obligation("S-AUTH-1", "S-AUTH-2", "S-AUTH-7", "S-AUTH-9")
def test_mcp_is_served_on_loopback_without_authorization(daemon: Daemon) -> None:
    url = httpx.URL(daemon.info["url"])
    assert url.host == "127.0.0.1", url
    assert Path(daemon.info["socket"]).is_socket()
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        # No credentials asked for: no 401, no challenge; a bearer token changes nothing.
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            frame = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "server/discover",
                "params": {"_meta": _meta({})},
            }
            sent = {**_modern_headers("server/discover", {}), **headers}
            r = mcp.post("/mcp", json=frame, headers=sent)
            assert r.status_code == 200 and "result" in r.json(), r.text
            assert "www-authenticate" not in r.headers
        # No protected resource metadata is published.
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            assert mcp.get(path).status_code == 404, path
