"""Issue 27 on the ways the fuzz tests did not take: what an upstream answers that cannot be
relayed, and arguments too deep to send, through pass-through, event streams, batches and
ndjson; and the pieces that answer them, alone.

- Arguments nested over ``MAX_DEPTH`` levels are the host's error (-32602) on a
  pass-through call too, never an error blamed on the upstream (C-ERR-6).
- A malformed ``CallToolResult`` from a pass-through server is mcpx's -32603 naming the
  server (``data.origin`` "mcpx"), not relayed.
- An upstream's answer nested past what the encoder writes is the error -32603 for its id
  wherever it would have gone: the last event of a legacy session's stream, its place in a
  2025-03-26 batch's array, the last line of a /v1 ndjson stream (502 ``upstream_error``);
  a relayed notification that deep is dropped, and the call still answered.
- A structuredContent too deep to say as text (for revisions without it) is said to be.
- ``log.frames`` never raises; every frame traced is valid (``running_daemon`` checks).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import jsonschema
import pytest

from fuzz.helpers import (
    DAEMON_SETTINGS,
    Watch,
    crashes,
    documented_upstream_failure,
    frame_problems,
    stream_frames,
)
from mcpx import wire
from mcpx.ops._errors import ERROR_SCHEMA
from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request

FIXTURE: Final = Path(__file__).resolve().parents[1] / "fixtures" / "fuzz_upstream.py"
SERVERS: Final = {"fl": {"command": sys.executable, "args": [str(FIXTURE)]}}
SETTINGS: Final = {
    **DAEMON_SETTINGS,
    "pool.restartBackoff": "0s",
    "mcp.passthrough": ["fl"],
}
TOO_DEEP_TO_WRITE: Final = 300  # levels: past what the encoder writes (254)
ID: Final = "@@ID@@"  # the fixture puts the call's id in its place
STREAMS: Final = "application/json, text/event-stream"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_result_line() -> str:
    """A valid CallToolResult, too deep to be written again (in ``_meta``, which every
    revision carries as it came: structuredContent becomes text for older ones)."""
    result = {"content": [], "_meta": {"x.example/deep": "@@deep@@"}}
    line = json.dumps({"jsonrpc": "2.0", "id": ID, "result": result})
    return line.replace('"@@deep@@"', nested(TOO_DEEP_TO_WRITE))


def deep_log_line() -> str:
    """A log notification whose data is too deep to be written again."""
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
    note["params"] = {"level": "info", "data": "@@deep@@"}
    return json.dumps(note).replace('"@@deep@@"', nested(TOO_DEEP_TO_WRITE))


def log_line(text: str) -> str:
    params = {"level": "info", "data": text}
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


def emit(lines: list[str]) -> dict[str, Any]:
    return {"name": "emit", "arguments": {"lines": lines}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("fuzz-unsendable"), SERVERS, SETTINGS) as d:
        yield d


@pytest.fixture(scope="module")
def mcp(daemon: Daemon) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as client:
        yield client


def _modern(mcp: httpx.Client, params: dict[str, Any], body: str | None = None) -> httpx.Response:
    frame = modern_request(1, "tools/call", params, modern_meta(client="fuzz"))
    headers = {"Content-Type": "application/json", **modern_headers("tools/call", params)}
    return mcp.post("/mcp", content=body or json.dumps(frame), headers=headers)


def _session(mcp: httpx.Client, rev: str, *, logs: bool = False) -> dict[str, str]:
    info = {"name": "fuzz", "version": "1"}
    init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": info}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert r.status_code == 200, r.text
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if rev != "2025-03-26":
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    if logs:  # the upstream's log lines are relayed to it
        level = {"jsonrpc": "2.0", "id": 0, "method": "logging/setLevel"}
        level["params"] = {"level": "debug"}
        assert mcp.post("/mcp", json=level, headers=headers).status_code == 200
    return headers


def _judged(daemon: Daemon, watch: Watch, answers: list[dict[str, Any]]) -> None:
    traced = watch.frames()
    problems = frame_problems(traced)
    assert not problems, "invalid frames:\n" + "\n".join(problems)
    sent = [line["frame"] for line in traced]
    for answer in answers:
        assert answer in sent, f"not traced: {answer}"
    assert not crashes(watch.log(), told="mcpx.client")


def test_passthrough_arguments_too_deep_are_the_hosts_error(
    daemon: Daemon, mcp: httpx.Client
) -> None:
    watch = Watch(daemon)
    params = {"name": "emit", "arguments": {"lines": [], "x": "@@deep@@"}}
    frame = modern_request(1, "tools/call", params, modern_meta(client="fuzz"))
    body = json.dumps(frame).replace('"@@deep@@"', nested(TOO_DEEP_TO_WRITE))
    r = _modern(mcp, params, body)
    answer = r.json()
    assert answer["error"]["code"] == -32602, answer
    assert "nested over 64 levels" in answer["error"]["message"], answer  # the bound
    _judged(daemon, watch, [answer])


def test_a_passthrough_servers_malformed_result_is_mcpxs_error(
    daemon: Daemon, mcp: httpx.Client
) -> None:
    watch = Watch(daemon)
    malformed = json.dumps({"jsonrpc": "2.0", "id": ID, "result": {"content": [{"type": "x"}]}})
    answer = _modern(mcp, emit([malformed])).json()
    error = answer["error"]
    assert error["code"] == -32603, answer
    assert error["data"] == {"origin": "mcpx", "server": "fl"}, answer  # C-ERR-6
    assert "malformed" in error["message"] and "content[0]" in error["message"], answer
    _judged(daemon, watch, [answer])


def test_a_result_too_deep_ends_a_legacy_stream_as_an_error(
    daemon: Daemon, mcp: httpx.Client
) -> None:
    watch = Watch(daemon)
    headers = {**_session(mcp, "2025-06-18", logs=True), "Accept": STREAMS}
    # The log line first: the answer goes out as the stream's last event.
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    frame["params"] = emit([log_line("first"), deep_log_line(), deep_result_line()])
    with mcp.stream("POST", "/mcp", json=frame, headers=headers) as r:
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        found = stream_frames(r)
    answer = found[-1]
    assert answer["id"] == 1 and documented_upstream_failure(answer), found
    # Not the upstream's connection lost over the deep log line: the answer's own fault.
    assert "answer could not be sent" in answer["error"]["message"], answer
    # The deep log line could not be written: dropped; the shallow one came.
    logged = [f["params"]["data"] for f in found if f.get("method") == "notifications/message"]
    assert logged == ["first"], found
    _judged(daemon, watch, found)


def test_a_result_too_deep_takes_its_place_in_a_batch(daemon: Daemon, mcp: httpx.Client) -> None:
    watch = Watch(daemon)
    headers = _session(mcp, "2025-03-26")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = emit([deep_result_line()])
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    r = mcp.post("/mcp", json=[call, ping], headers=headers)
    assert r.status_code == 200, r.text[:300]
    first, second = r.json()
    assert first["id"] == 1 and documented_upstream_failure(first), first
    assert second == {"jsonrpc": "2.0", "id": 2, "result": {}}, second
    _judged(daemon, watch, [first])


def test_structured_content_too_deep_for_text_is_said_so(daemon: Daemon, mcp: httpx.Client) -> None:
    # 2025-03-26 has no structuredContent: it is sent as text, which for a value nested
    # ~1000 deep (the parser takes 1024) ran the text encoder out of stack.
    watch = Watch(daemon)
    headers = _session(mcp, "2025-03-26")
    result = {"content": [], "structuredContent": {"x": "@@deep@@"}}
    line = json.dumps({"jsonrpc": "2.0", "id": ID, "result": result})
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = emit([line.replace('"@@deep@@"', nested(1000))])
    answer = mcp.post("/mcp", json=call, headers=headers).json()
    [text] = [b["text"] for b in answer["result"]["content"]]
    assert "nested too deep" in text, answer
    _judged(daemon, watch, [answer])


def test_a_result_too_deep_ends_a_v1_ndjson_stream_as_a_502(
    daemon: Daemon, mcp: httpx.Client
) -> None:
    watch = Watch(daemon)
    lines = [log_line("first"), deep_result_line()]
    call = {"server": "fl", "tool": "emit", "arguments": {"lines": lines}}
    headers = {"Accept": "application/x-ndjson"}
    r = mcp.post("/v1/call", json=call, headers=headers)
    assert r.status_code == 200, r.text[:300]  # a stream: its last line says the status
    *_, last = [json.loads(line) for line in r.text.splitlines()]
    assert last.pop("status") == 502, last
    jsonschema.validate(last, ERROR_SCHEMA)
    assert last["error"]["code"] == "upstream_error", last
    assert not crashes(watch.log(), told="mcpx.client")


# -- the pieces, alone ------------------------------------------------------------


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_the_depth_bound_counts_containers_only() -> None:
    from mcpx.ops._tool_input import MAX_DEPTH, too_deep  # (not in the code before it)

    assert not too_deep({"a": _deep(MAX_DEPTH - 1), "b": "x" * 10})
    assert too_deep({"a": _deep(MAX_DEPTH)})
    assert not too_deep("not a container")


def test_an_answer_that_cannot_be_encoded_is_replaced_for_its_id() -> None:
    deep = {"jsonrpc": "2.0", "id": "r", "result": {"x": _deep(TOO_DEEP_TO_WRITE)}}
    fine = {"jsonrpc": "2.0", "id": 2, "result": {}}
    data, sent = wire.dumps_answer([deep, fine])
    assert isinstance(sent, list) and sent[1] is fine, sent
    assert json.loads(data) == sent
    assert sent[0]["id"] == "r" and sent[0]["error"]["code"] == -32603, sent
    assert wire.stand_ins([deep, fine], sent) == [sent[0]]
    assert wire.dumps_answer(fine) == (wire.dumps(fine), fine)
    with pytest.raises(wire.InternalError):  # no answer: nothing stands in for it
        wire.dumps_answer(wire.notification("x", {"d": _deep(TOO_DEEP_TO_WRITE)}))


def test_the_frames_log_never_raises(tmp_path: Path) -> None:
    from mcpx.events import frames_log  # (not in the code before it)

    path = tmp_path / "frames.jsonl"
    trace = frames_log(str(path))
    assert trace is not None
    # A frame of 254 levels is sent; its line is one level deeper, and still written.
    trace(None, {"jsonrpc": "2.0", "id": 1, "result": {"x": _deep(252)}}, "tools/call")
    trace(None, {"jsonrpc": "2.0", "id": 2, "result": {"x": _deep(TOO_DEEP_TO_WRITE)}}, None)
    lines = path.read_text().splitlines()
    assert [json.loads(x)["frame"]["id"] for x in lines] == [1]
    # A write that fails (the file closed under it) is logged, not raised.
    for fd in os.listdir("/proc/self/fd"):
        if os.path.realpath(f"/proc/self/fd/{fd}") == str(path):
            os.close(int(fd))
    trace(None, {"jsonrpc": "2.0", "id": 3, "result": {}}, None)
