"""Streamable HTTP obligations of the daemon's /mcp endpoint, over real HTTP, against a
second daemon (``fixes``, this module's own module-scoped fixture, defined below): 2025-03-26
batches of notifications and responses (S-HTTP-6), a legacy session's cancellation (S-CANC-1),
and questions put to a legacy session only once it is initialized (S-LIFE-6).

``fixes`` adds the official SDK's fixture server (it asks ``roots/list`` and elicits
mid-call) and ``tape``, a stdlib upstream that logs every line mcpx writes to it, to the demo
upstream. Every frame a test reads is checked strictly against the host's revision
(``sent_frames``); the daemon's own trace of every frame it sent is checked at teardown.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from obligations.streamable_http.helpers import BOTH, JSON_ONLY, LEGACY_HTTP, _echo, _slow, _text
from support.daemon import Daemon, running_daemon, sdk_entry
from support.schemas import FrameLog
from support.waiting import wait_until

# -- 2025-03-26 batches, cancellation, initialized --------------------------------------

# A legacy stdio upstream (standard library only) that appends every line it reads to the
# log its first argument names; its tool ``wait`` is never answered (only a cancel ends it).
TAPE = """
import json, sys

LOG = sys.argv[1]
WAIT = {"name": "wait", "inputSchema": {"type": "object"}}


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\\n")
    sys.stdout.flush()


for line in sys.stdin:
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(line)
    frame = json.loads(line)
    method, rid = frame.get("method"), frame.get("id")
    if method is None or rid is None or method == "tools/call":
        continue
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tape", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [WAIT]}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": "Method not found: " + method}
        send({"jsonrpc": "2.0", "id": rid, "error": error})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
"""


@pytest.fixture(scope="module")
def fixes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The demo, the official SDK's fixture server (it asks questions mid-call) and the
    recording ``tape`` upstream. A question waits in the broker at most 60 s."""
    tmp = tmp_path_factory.mktemp("obl-http-fixes")
    script = tmp / "tape.py"
    script.write_text(TAPE)
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "sdk": sdk_entry("1.23.3"),
        "tape": {"command": sys.executable, "args": [str(script), str(tmp / "tape.jsonl")]},
    }
    settings = {"transport.sseKeepAlive": "200ms", "proto.askTimeout": "60s"}
    with running_daemon(tmp, servers, settings) as d:
        yield d


def _tape(daemon: Daemon) -> list[dict[str, Any]]:
    """Every frame the tape upstream has read, in order."""
    log = daemon.home.parent / "tape.jsonl"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _in_flight(daemon: Daemon, server: str) -> int:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return sum(i["inFlight"] for s in servers if s["name"] == server for i in s["instances"])


def _call(server: str, tool: str, **arguments: Any) -> dict[str, Any]:
    args = {"server": server, "tool": tool, "arguments": arguments}
    return {"name": "mcpx_call", "arguments": args}


def _legacy(mcp: httpx.Client, rev: str, caps: dict[str, Any], initialized: bool) -> dict[str, str]:
    """A legacy session at ``rev`` that declared ``caps``; initialized only if asked to."""
    params = {"protocolVersion": rev, "capabilities": caps}
    params["clientInfo"] = {"name": "t", "version": "1"}
    frame = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    r = mcp.post("/mcp", json=frame, headers=JSON_ONLY)
    assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == rev, r.text
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if rev != "2025-03-26":
        headers["MCP-Protocol-Version"] = rev
    if initialized:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


class _Streamed(threading.Thread):
    """A POST whose answer may become an event stream, read on a thread of its own: each
    frame as it comes (``frames``); a request from mcpx on it is handed to ``answer``."""

    def __init__(self, url: str, frame: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.frame = url, frame
        self.headers = {**headers, "Accept": BOTH}
        self.frames: list[dict[str, Any]] = []
        self.status, self.content_type, self.body = 0, "", b""

    def run(self) -> None:
        with (
            httpx.Client(base_url=self.url, timeout=120) as client,
            client.stream("POST", "/mcp", json=self.frame, headers=self.headers) as r,
        ):
            self.status, self.content_type = r.status_code, r.headers.get("content-type", "")
            if not self.content_type.startswith("text/event-stream"):
                self.body = r.read()
                if self.body:
                    self.frames.append(json.loads(self.body))
                return
            for line in r.iter_lines():
                if line.startswith("data: "):
                    self.frames.append(json.loads(line[len("data: ") :]))

    def requests(self) -> list[dict[str, Any]]:
        return [f for f in self.frames if "method" in f and "id" in f]


def _answered(call: _Streamed, rid: Any) -> dict[str, Any]:
    """The call's response, once its POST has ended."""
    call.join(timeout=60)
    assert not call.is_alive(), f"no answer to {rid} yet: {call.frames}"
    [answer] = [f for f in call.frames if f.get("id") == rid and "method" not in f]
    return answer


# S-HTTP-6 (2025-03-26: a batch of notifications, and batches of responses)
@pytest.mark.obligation("S-HTTP-6", "S-LIFE-6")
def test_a_2025_03_26_batch_of_notifications_or_responses_is_acted_on(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-03-26"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120) as mcp:
        headers = _legacy(mcp, rev, {"roots": {}}, initialized=False)
        # notifications/initialized in a batch: accepted, and dispatched (the host is put
        # the upstream's roots/list below only because it was: S-LIFE-6).
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        r = mcp.post("/mcp", json=[note], headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        # The host answers mcpx's roots/list with a batch: first a result, then an error.
        roots = {"roots": [{"uri": "file:///batched", "name": "b"}]}
        refusal = {"code": -32603, "message": "no roots today"}
        for rid, reply in ((5, {"result": roots}), (6, {"error": refusal})):
            frame = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
            call = _Streamed(url, {**frame, "params": _call("sdk", "roots")}, headers)
            call.start()
            wait_until(lambda c=call: bool(c.requests()) or not c.is_alive(), timeout=60)
            [asked] = call.requests()
            sent_frames.sent(asked, rev)
            assert asked["method"] == "roots/list", asked
            batch = [{"jsonrpc": "2.0", "id": asked["id"], **reply}]
            r = mcp.post("/mcp", json=batch, headers=headers)
            assert (r.status_code, r.content) == (202, b"")
            answer = _answered(call, rid)
            sent_frames.sent(answer, rev, answering="tools/call")
            text = answer["result"]["content"][0]["text"]
            if "result" in reply:
                assert json.loads(text) == [{"uri": "file:///batched", "name": "b"}], answer
            else:  # the upstream got the host's error (its tool failed on it)
                assert answer["result"]["isError"] is True and "no roots today" in text, answer
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-CANC-1 (a legacy /mcp session's notifications/cancelled; 2025-03-26: in a batch,
# S-HTTP-6)
@pytest.mark.obligation("S-CANC-1", "S-HTTP-6")
@pytest.mark.parametrize("rev", LEGACY_HTTP)
def test_a_legacy_sessions_cancel_stops_its_request_and_its_post_gets_an_empty_202(
    fixes: Daemon, rev: str, sent_frames: FrameLog
) -> None:
    url = fixes.info["url"]
    got: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {}, initialized=True)
        frame = {"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": _slow(60, 1)}

        def post() -> None:
            with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as client:
                got.append(client.post("/mcp", json=frame, headers=headers))

        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        wait_until(lambda: _in_flight(fixes, "demo") == 1, timeout=60)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "slow-1", "reason": "no longer needed"},
        }
        r = mcp.post("/mcp", json=[cancel] if rev == "2025-03-26" else cancel, headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        # The withdrawn request's POST ends at once, with no answer: an empty 202.
        caller.join(timeout=30)
        assert not caller.is_alive(), "the cancelled request is still being served"
        [answer] = got
        assert (answer.status_code, answer.content) == (202, b""), answer.text
        # Its upstream call stopped too, long before its 60 s.
        wait_until(lambda: _in_flight(fixes, "demo") == 0, timeout=30)
        # The session goes on.
        echo = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _echo("after")}
        r = mcp.post("/mcp", json=echo, headers=headers)
        sent_frames.sent(r.json(), rev, answering="tools/call")
        assert _text(r.json()["result"]) == "after"
        assert mcp.delete("/mcp", headers=headers).status_code == 200


@pytest.mark.obligation("S-CANC-1")
def test_a_cancelled_legacy_request_stream_ends_without_a_response(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {}, initialized=True)
        params = _slow(60, 120, {"progressToken": "going"})
        frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        call = _Streamed(url, frame, headers)
        call.start()
        wait_until(lambda: bool(call.frames) or not call.is_alive(), timeout=60)
        assert call.content_type.startswith("text/event-stream"), call.content_type
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        r = mcp.post("/mcp", json=cancel, headers=headers)
        assert (r.status_code, r.content) == (202, b"")
        call.join(timeout=30)
        assert not call.is_alive(), "the cancelled request's stream did not end"
        # Only progress came on it: no response (neither result nor error) for request 7.
        assert call.frames and all(
            f.get("method") == "notifications/progress" for f in call.frames
        ), call.frames
        for f in call.frames:
            sent_frames.sent(f, rev)
        wait_until(lambda: _in_flight(fixes, "demo") == 0, timeout=30)
        assert mcp.delete("/mcp", headers=headers).status_code == 200


# S-CANC-1 (the upstream call is withdrawn as well: the upstream is told)
@pytest.mark.obligation("S-CANC-1")
def test_a_legacy_sessions_cancel_reaches_the_upstream(fixes: Daemon) -> None:
    url = fixes.info["url"]
    got: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, "2025-06-18", {}, initialized=True)
        frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _call("tape", "wait")}

        def post() -> None:
            with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as client:
                got.append(client.post("/mcp", json=frame, headers=headers))

        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        calls: list[dict[str, Any]] = []

        def called() -> bool:
            calls[:] = [f for f in _tape(fixes) if f.get("method") == "tools/call"]
            return bool(calls)

        wait_until(called, timeout=60)
        [upstream_call] = calls
        assert upstream_call["params"]["name"] == "wait", upstream_call
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
        assert mcp.post("/mcp", json=cancel, headers=headers).status_code == 202
        caller.join(timeout=30)
        assert not caller.is_alive(), "the cancelled request is still being served"
        assert (got[0].status_code, got[0].content) == (202, b"")
        assert mcp.delete("/mcp", headers=headers).status_code == 200

    def told() -> bool:
        return any(
            f.get("method") == "notifications/cancelled"
            and f["params"]["requestId"] == upstream_call["id"]
            for f in _tape(fixes)
        )

    wait_until(told, timeout=30, message=lambda: _tape(fixes))


@pytest.mark.obligation("S-LIFE-6")
def test_a_legacy_http_session_is_put_questions_only_once_initialized(
    fixes: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    url = fixes.info["url"]
    with httpx.Client(base_url=url, timeout=120, headers=JSON_ONLY) as mcp:
        headers = _legacy(mcp, rev, {"elicitation": {}}, initialized=False)
        # Initialized withheld: the question goes to the broker, none on the host's stream.
        frame = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        call = _Streamed(url, {**frame, "params": _call("sdk", "ask", question="b4?")}, headers)
        call.start()
        question = fixes.open_question("sdk (via mcpx) asks: b4?")
        assert question["method"] == "elicitation/create", question
        with fixes.http() as api:
            assert api.post(f"/v1/questions/{question['id']}/cancel").status_code == 200
        answer = _answered(call, 3)
        sent_frames.sent(answer, rev, answering="tools/call")
        assert call.requests() == [], call.frames
        assert _text(answer["result"]) == "(cancel)", answer
        # Initialized: the same question is put to the host, on its POST's stream.
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
        frame = {"jsonrpc": "2.0", "id": 4, "method": "tools/call"}
        call = _Streamed(url, {**frame, "params": _call("sdk", "ask", question="now?")}, headers)
        call.start()
        wait_until(lambda: bool(call.requests()) or not call.is_alive(), timeout=60)
        [asked] = call.requests()
        sent_frames.sent(asked, rev)
        assert asked["method"] == "elicitation/create", asked
        assert asked["params"]["message"] == "sdk (via mcpx) asks: now?", asked
        reply = {"action": "accept", "content": {"answer": "host"}}
        r = mcp.post(
            "/mcp", json={"jsonrpc": "2.0", "id": asked["id"], "result": reply}, headers=headers
        )
        assert r.status_code == 202
        answer = _answered(call, 4)
        sent_frames.sent(answer, rev, answering="tools/call")
        assert _text(answer["result"]) == "host", answer
        assert mcp.delete("/mcp", headers=headers).status_code == 200
