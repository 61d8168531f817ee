"""Server obligations on messages, errors, tools and pagination (S-MSG, S-ERR, S-TOOL, S-PAGE).

One real daemon for the module, with real upstreams: the bundled demo server, the
misbehaving stdlib server (``bad_server.py --mode legacy``), the official SDK's fixture
server on 1.23.3 (it asks ``roots/list`` mid-call), and ``craft``, a stdlib legacy server
written by this module (below): it declares no completions, offers a prompt, a resource,
a tool ``echo`` whose name the other upstreams share, a tool with an integer argument, a
tool that fails with a JSON-RPC error, and one whose ``structuredContent`` is a number.
``mcp.pageSize`` is 1, so every list is paged. Hosts are raw JSON-RPC clients: ``mcpx
serve`` (stdio) and the daemon's ``/mcp`` (Streamable HTTP, legacy sessions and
2026-07-28 requests). Every frame the daemon sends is traced and held strictly to its
revision's schema when the module ends; the frames a test reads are validated too
(``sent_frames``).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import validators

from support.daemon import Daemon, bad_entry, running_daemon, sdk_entry
from support.modern import MODERN, PROTOCOL_VERSION, modern_headers, modern_meta
from support.peers import stdio_peer
from support.schemas import FrameLog

LEGACY_HTTP = ("2025-03-26", "2025-06-18", "2025-11-25")
META = modern_meta(client=None)
SERVE = [sys.executable, "-m", "mcpx", "serve"]
GATEWAY_TOOLS = ["mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"]
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
TRACE = {
    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    "baggage": "userId=alice,serverNode=DF%2028",
}
W3C_TRACEPARENT = re.compile(
    r"^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$"
)

CRAFT = r"""
import json, sys

OBJ = {"type": "object"}
TOOLS = [
    {"name": "echo", "description": "Echo (craft).", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "typed", "description": "Needs an integer n.", "inputSchema": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "fail", "description": "Fails with a JSON-RPC error.", "inputSchema": OBJ},
    {"name": "scalar", "description": "structuredContent is a number.", "inputSchema": OBJ},
]
PROMPTS = [{"name": "p", "description": "A prompt.", "arguments": [{"name": "x"}]}]
RESOURCES = [{"uri": "craft://ok", "name": "ok"}]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(message):
    rid, method = message["id"], message["method"]
    params = message.get("params") or {}

    def ok(value):
        send({"jsonrpc": "2.0", "id": rid, "result": value})

    def err(code, text):
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}})

    if method == "initialize":
        asked = params.get("protocolVersion")
        legacy = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
        caps = {"tools": {}, "prompts": {}, "resources": {}}
        info = {"name": "craft", "version": "1"}
        version = asked if asked in legacy else "2025-11-25"
        ok({"protocolVersion": version, "capabilities": caps, "serverInfo": info})
    elif method == "ping":
        ok({})
    elif method == "tools/list":
        ok({"tools": TOOLS})
    elif method == "prompts/list":
        ok({"prompts": PROMPTS})
    elif method == "prompts/get":
        ok({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]})
    elif method == "resources/list":
        ok({"resources": RESOURCES})
    elif method == "resources/templates/list":
        ok({"resourceTemplates": []})
    elif method == "resources/read":
        ok({"contents": [{"uri": "craft://ok", "text": "fine"}]})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "fail":
            err(-32603, "craft broke")
        elif name == "scalar":
            ok({"content": [{"type": "text", "text": "42"}], "structuredContent": 42})
        else:
            text = "craft " + name + ": " + json.dumps(args, ensure_ascii=False)
            ok({"content": [{"type": "text", "text": text}]})
    else:
        err(-32601, "Method not found: " + str(method))


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if isinstance(message, dict) and "id" in message and "method" in message:
        handle(message)
"""


# -- the daemon and its hosts ----------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("c1")
    craft = tmp / "craft_server.py"
    craft.write_text(CRAFT)
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "craft": {"command": sys.executable, "args": [str(craft)]},
        "bad": bad_entry("legacy"),
        "fixture": sdk_entry("1.23.3"),
        "broken": bad_entry("exit-at-start"),
    }
    with running_daemon(tmp, servers, {"mcp.pageSize": 1}) as d:
        yield d


class Http:
    """A raw host on the daemon's /mcp: a legacy session (``rev``) or 2026-07-28 requests."""

    def __init__(self, daemon: Daemon, rev: str, log: FrameLog, caps: Any = None) -> None:
        self.client = httpx.Client(base_url=daemon.info["url"], timeout=120)
        self.rev, self.log = rev, log
        self.caps = {} if caps is None else caps
        self.headers: dict[str, str] = {}
        self.next_id = 100
        if rev != MODERN:
            init = {
                "protocolVersion": rev,
                "capabilities": self.caps,
                "clientInfo": {"name": "c1", "version": "1"},
            }
            self.initialized = self.result("initialize", init)
            self.headers = {"Mcp-Session-Id": self.last.headers["mcp-session-id"]}
            if rev != "2025-03-26":
                self.headers["MCP-Protocol-Version"] = rev
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert self.client.post("/mcp", json=note, headers=self.headers).status_code == 202

    def post(self, frame: Any, **headers: str) -> httpx.Response:
        self.last = self.client.post("/mcp", json=frame, headers={**self.headers, **headers})
        return self.last

    def ask(
        self, method: str, params: dict[str, Any] | None = None, *, rid: Any = None
    ) -> dict[str, Any]:
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        body = dict(params or {})
        headers: dict[str, str] = {}
        if self.rev == MODERN:
            body["_meta"] = {**modern_meta(self.caps, client=None), **body.get("_meta", {})}
            headers = modern_headers(method, body)
        r = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": body}, **headers)
        assert r.headers["content-type"].startswith("application/json"), r.text
        answer: dict[str, Any] = r.json()
        self.log.sent(answer, self.rev, answering=method)
        return answer

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = self.ask(method, params)
        assert "result" in answer, answer
        out: dict[str, Any] = answer["result"]
        return out

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def http(daemon: Daemon, sent_frames: FrameLog) -> Iterator[Any]:
    opened: list[Http] = []

    def make(rev: str, caps: Any = None) -> Http:
        host = Http(daemon, rev, sent_frames, caps)
        opened.append(host)
        return host

    yield make
    for host in opened:
        host.close()


def _serve_lines(daemon: Daemon, lines: list[bytes], *args: str) -> list[bytes]:
    """``mcpx serve`` fed ``lines`` (then EOF): every line it wrote, raw."""
    done = subprocess.run(
        [*SERVE, *args],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        cwd=daemon.home,
        env=daemon.env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return [line for line in done.stdout.split(b"\n") if line.strip()]


def _frame(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        frame["params"] = params
    return json.dumps(frame, ensure_ascii=False).encode()


def _init(rev: str, caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "protocolVersion": rev,
        "capabilities": caps or {},
        "clientInfo": {"name": "c1", "version": "1"},
    }


def _call(server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }


def _text(result: dict[str, Any]) -> str:
    return "".join(b["text"] for b in result["content"] if b["type"] == "text")


def _walk(host: Http, method: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paged list, following nextCursor to the end."""
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for _ in range(100):
        page = host.result(method, params)
        items += page[key]
        if "nextCursor" not in page:
            return items
        params = {"cursor": page["nextCursor"]}
    raise AssertionError(f"{method} never ended")


def _metas(node: Any) -> Iterator[dict[str, Any]]:
    """Every ``_meta`` object inside a frame."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "_meta" and isinstance(value, dict):
                yield value
            yield from _metas(value)
    elif isinstance(node, list):
        for item in node:
            yield from _metas(item)


# -- S-MSG: messages ---------------------------------------------------------------------


@pytest.mark.obligation("S-MSG-1", "S-MSG-6")
def test_every_frame_is_json_rpc_2_0_and_a_response_has_result_or_error(
    daemon: Daemon, http: Any, sent_frames: FrameLog
) -> None:
    before = len(daemon.sent_frames())
    slow = _call("demo", "slow", {"seconds": 0.3, "steps": 3})
    slow["_meta"] = {"progressToken": "p-1"}
    with stdio_peer(SERVE, env=daemon.env()) as host:
        received = [host.request(1, "initialize", _init("2025-06-18"), timeout=60)]
        host.notify("notifications/initialized")
        received.append(host.request(2, "tools/call", slow, timeout=120))
        received.append(host.request(3, "no/such/method", timeout=60))
        received.append(host.request(4, "tools/call", {"name": "nope", "arguments": {}}))
        host.send_raw(b"{not json\n")
        received.append(host.recv(timeout=60))
        received += host.notifications
    modern = http(MODERN)
    modern.ask("tools/list")
    modern.ask("no/such/method")
    legacy = http("2025-11-25")
    legacy.ask("tools/call", _call("bad", "echo", {"text": "x"}))
    legacy.ask("tools/list", {"cursor": "garbage"})
    traced = [t["frame"] for t in daemon.sent_frames()[before:]]
    frames = received + traced + [s.frame for s in sent_frames.frames]
    assert any(f.get("method") == "notifications/progress" for f in received), received
    assert sum("error" in f for f in frames) >= 6 and sum("result" in f for f in frames) >= 4
    for frame in frames:
        assert frame["jsonrpc"] == "2.0", frame
        if "method" not in frame:
            # A response: exactly one of result and error.
            assert ("result" in frame) != ("error" in frame), frame
            assert set(frame) <= {"jsonrpc", "id", "result", "error"}, frame


@pytest.mark.obligation("S-MSG-2")
def test_messages_are_utf8_both_ways(daemon: Daemon, http: Any, sent_frames: FrameLog) -> None:
    text = "héllo, wörld: 日本語 ✓ 😀 ∑"
    # Raw UTF-8 in (no \\u escapes), and what comes out decodes as UTF-8 and carries it.
    raw = _serve_lines(
        daemon,
        [
            _frame(1, "initialize", _init("2025-11-25")),
            _frame(2, "tools/call", _call("demo", "echo", {"text": text})),
        ],
    )
    answers = {f["id"]: f for f in (json.loads(line.decode("utf-8", "strict")) for line in raw)}
    sent_frames.sent(answers[2], "2025-11-25", answering="tools/call")
    assert _text(answers[2]["result"]) == text
    for rev in ("2025-11-25", MODERN):
        host = http(rev)
        body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
        params = _call("demo", "echo", {"text": text})
        headers = {"Content-Type": "application/json"}
        if rev == MODERN:
            params["_meta"] = META
            headers |= modern_headers("tools/call", name="mcpx_call")
        content = json.dumps({**body, "params": params}, ensure_ascii=False).encode("utf-8")
        r = host.client.post("/mcp", content=content, headers={**host.headers, **headers})
        assert r.status_code == 200, r.text
        charset = r.headers["content-type"].partition("charset=")[2].strip().lower()
        assert charset in ("", "utf-8"), r.headers["content-type"]
        answer = json.loads(r.content.decode("utf-8", "strict"))
        sent_frames.sent(answer, rev, answering="tools/call")
        assert _text(answer["result"]) == text


@pytest.mark.obligation("S-MSG-5")
def test_responses_echo_the_request_id_exactly(
    daemon: Daemon, http: Any, sent_frames: FrameLog
) -> None:
    ids: list[Any] = [0, "abc", "", 2**53 - 1, -7, "42"]
    lines = [_frame(ids[0], "initialize", _init("2025-11-25"))]
    lines += [_frame(i, "tools/list") for i in ids[1:4]]
    lines += [_frame(ids[4], "no/such"), _frame(ids[5], "tools/list", {"cursor": "x"})]
    raw = _serve_lines(daemon, lines)
    got = [json.loads(line)["id"] for line in raw]
    assert sorted(map(repr, got)) == sorted(map(repr, ids)), got
    for line in raw:
        answer = json.loads(line)
        assert type(answer["id"]) is type(ids[ids.index(answer["id"])])
    assert b'"id":9007199254740991' in b"".join(raw).replace(b" ", b"")
    modern = http(MODERN)
    for rid in ids:
        answer = modern.ask("tools/list", rid=rid)
        assert answer["id"] == rid and type(answer["id"]) is type(rid), answer
        refused = modern.ask("tools/list", {"cursor": "nope"}, rid=rid)
        assert refused["id"] == rid and type(refused["id"]) is type(rid), refused


@pytest.mark.obligation("S-MSG-7", "S-ERR-1")
def test_generic_failures_use_the_standard_codes_with_integer_code_and_message(
    daemon: Daemon, http: Any
) -> None:
    raw = _serve_lines(
        daemon,
        [
            _frame(1, "initialize", _init("2025-11-25")),
            b"{not json",
            b'{"jsonrpc":"2.0","id":2}',
            _frame(3, "no/such/method"),
            _frame(4, "tools/call", {"name": "nope", "arguments": {}}),
            _frame(5, "tools/list", {"cursor": "garbage"}),
        ],
    )
    # A pass-through server that cannot be listed: mcpx's own fault, an internal error.
    raw += _serve_lines(
        daemon,
        [_frame(1, "initialize", _init("2025-11-25")), _frame(6, "tools/list")],
        "--passthrough",
        "broken",
    )
    errors = {f.get("id"): f["error"] for f in map(json.loads, raw) if "error" in f}
    codes = {rid: e["code"] for rid, e in errors.items()}
    assert codes == {None: -32700, 2: -32600, 3: -32601, 4: -32602, 5: -32602, 6: -32603}
    modern = http(MODERN)
    r = modern.client.post(
        "/mcp", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert (r.status_code, r.json()["error"]["code"]) == (400, -32700)
    unknown = modern.ask("no/such/method")
    assert (modern.last.status_code, unknown["error"]["code"]) == (404, -32601)
    bad = modern.ask("tools/list", {"cursor": "garbage"})
    assert (modern.last.status_code, bad["error"]["code"]) == (400, -32602)
    for error in [*errors.values(), r.json()["error"], unknown["error"], bad["error"]]:
        assert type(error["code"]) is int, error
        assert isinstance(error["message"], str) and error["message"], error
        assert set(error) <= {"code", "message", "data"}, error


@pytest.mark.obligation("S-MSG-8")
def test_notifications_are_never_answered(daemon: Daemon, http: Any) -> None:
    raw = _serve_lines(
        daemon,
        [
            _frame(1, "initialize", _init("2025-06-18")),
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}',
            b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}',
            b'{"jsonrpc":"2.0","method":"notifications/no-such-thing","params":{"x":1}}',
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"x"}}',
            _frame(2, "ping"),
        ],
    )
    assert [json.loads(line).get("id") for line in raw] == [1, 2], raw
    for rev in ("2025-03-26", "2025-11-25"):
        host = http(rev)
        for note in ("notifications/initialized", "notifications/no-such-thing"):
            r = host.post({"jsonrpc": "2.0", "method": note})
            assert (r.status_code, r.content) == (202, b""), r.text
    modern = http(MODERN)
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 5, "_meta": META},
    }
    headers = modern_headers("notifications/cancelled")
    r = modern.post(note, **headers)
    assert (r.status_code, r.content) == (202, b""), r.text


@pytest.mark.obligation("S-MSG-8", "S-MSG-3", "S-MSG-4")
def test_requests_to_the_host_have_fresh_ids_and_notifications_none(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    rev = "2025-11-25"
    with stdio_peer(SERVE, env=daemon.env()) as host:
        host.initialize(rev, {"roots": {}})
        answered: list[Any] = []

        def roots(request: dict[str, Any]) -> dict[str, Any]:
            assert request["method"] == "roots/list"
            answered.append(request["id"])
            return {"roots": [{"uri": f"file:///work/{len(answered)}", "name": "w"}]}

        for i in range(3):
            reply = host.request(
                10 + i, "tools/call", _call("fixture", "roots", {}), timeout=120, on_request=roots
            )
            sent_frames.sent(reply, rev, answering="tools/call")
            assert f"file:///work/{i + 1}" in _text(reply["result"]), reply
        slow = {
            **_call("demo", "slow", {"seconds": 0.2, "steps": 2}),
            "_meta": {"progressToken": 9},
        }
        sent_frames.sent(
            host.request(20, "tools/call", slow, timeout=120), rev, answering="tools/call"
        )
    for request in host.server_requests:
        sent_frames.sent(request, rev)
    ids = [r["id"] for r in host.server_requests]
    assert len(ids) == 3 and ids == answered
    assert all(type(i) in (int, str) for i in ids), ids  # never null (nor float, nor bool)
    assert len(set(ids)) == len(ids), ids
    assert host.notifications and all("id" not in n for n in host.notifications)
    for note in host.notifications:
        sent_frames.sent(note, rev)


@pytest.mark.obligation("S-MSG-11")
def test_a_2026_host_only_ever_sees_core_result_types(http: Any) -> None:
    # Even a host that declares the tasks extension (advertised: resultType "task" may
    # be sent to it, for a call that runs long) gets core types for these quick calls.
    host = http(MODERN, {"extensions": {"io.modelcontextprotocol/tasks": {}}})
    found = host.result("server/discover")
    assert found["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert "tasks" not in found["capabilities"]
    results = [found]
    results.append(host.result("tools/list"))
    results.append(host.result("tools/call", _call("demo", "echo", {"text": "x"})))
    results.append(host.result("tools/call", {"name": "mcpx_servers", "arguments": {}}))
    results.append(host.result("prompts/list"))
    results.append(host.result("prompts/get", {"name": "demo_hello", "arguments": {"name": "A"}}))
    results.append(host.result("resources/list"))
    results.append(host.result("resources/templates/list"))
    results.append(host.result("resources/read", {"uri": "mcpx://demo/demo%3A%2F%2Freadme"}))
    ref = {"type": "ref/prompt", "name": "demo_hello"}
    results.append(
        host.result("completion/complete", {"ref": ref, "argument": {"name": "name", "value": "A"}})
    )
    assert [r["resultType"] for r in results] == ["complete"] * len(results)


@pytest.mark.obligation("S-MSG-12")
def test_unknown_reserved_meta_keys_change_nothing(http: Any) -> None:
    odd = {"io.modelcontextprotocol/foo": {"bar": [1]}, "io.modelcontextprotocol/x-y": "z"}
    modern = http(MODERN)
    plain = modern.result("tools/call", _call("demo", "echo", {"text": "m"}))
    params = {**_call("demo", "echo", {"text": "m"}), "_meta": odd}
    assert _text(modern.result("tools/call", params)) == _text(plain) == "m"
    assert (
        modern.result("tools/list", {"_meta": odd})["tools"] == modern.result("tools/list")["tools"]
    )
    legacy = http("2025-11-25")
    done = legacy.result("tools/call", {**_call("demo", "echo", {"text": "l"}), "_meta": odd})
    assert _text(done) == "l"


@pytest.mark.obligation("S-MSG-13")
def test_meta_keys_mcpx_writes_are_well_formed(daemon: Daemon, http: Any) -> None:
    host = http("2025-11-25")
    # craft declares no completions: answered from mcpx's catalogue, tagged in _meta.
    ref = {"type": "ref/prompt", "name": "craft_p"}
    done = host.result("completion/complete", {"ref": ref, "argument": {"name": "x", "value": ""}})
    assert done["_meta"]["dev.mcpx/source"] == "cache", done
    http(MODERN).result("tools/list")
    label = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    prefix = rf"(?:{label}(?:\.{label})*/)?"
    name = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])"
    key_format = re.compile(rf"^{prefix}{name}$")
    spec_keys = {"progressToken", *TRACE}
    spec_keys |= {
        f"io.modelcontextprotocol/{k}"
        for k in (
            "protocolVersion",
            "clientCapabilities",
            "clientInfo",
            "logLevel",
            "serverInfo",
            "subscriptionId",
            "related-task",
        )
    }
    seen: set[str] = set()
    for traced in daemon.sent_frames():
        for meta in _metas(traced["frame"]):
            seen |= set(meta)
    assert {"dev.mcpx/source", "dev.mcpx/reason", "io.modelcontextprotocol/serverInfo"} <= seen
    for key in seen:
        if key in spec_keys:
            continue
        assert key_format.match(key), key
        first = key.split("/")[0].split(".")
        reserved = len(first) > 1 and first[1] in ("modelcontextprotocol", "mcp")
        assert "/" not in key or not reserved, f"{key} uses a reserved prefix"


@pytest.mark.obligation("S-MSG-14")
def test_trace_context_reaches_the_upstream_unchanged_and_valid(daemon: Daemon, http: Any) -> None:
    modern = http(MODERN)
    params = {**_call("bad", "echo", {"text": "t"}), "_meta": TRACE}
    done = modern.result("tools/call", params)
    assert done["_meta"]["bad/received"] == TRACE
    for traced in daemon.sent_frames():
        for meta in _metas(traced["frame"]):
            if "traceparent" in meta:
                assert W3C_TRACEPARENT.match(meta["traceparent"]), meta


# -- S-TOOL: tools -----------------------------------------------------------------------


def _tools_by_revision(daemon: Daemon, http: Any) -> dict[str, list[dict[str, Any]]]:
    out = {rev: _walk(http(rev), "tools/list", "tools") for rev in (*LEGACY_HTTP, MODERN)}
    # 2024-11-05 over stdio (its transport has no Streamable HTTP), paged the same way.
    with stdio_peer(SERVE, env=daemon.env()) as host:
        host.initialize("2024-11-05")
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        for i in range(10):
            page = host.request(i + 1, "tools/list", params, timeout=60)["result"]
            tools += page["tools"]
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
        out["2024-11-05"] = tools
    return out


# S-TOOL-10 (not offered: mcpx's own tools declare no outputSchema)
# S-TOOL-20, S-TOOL-21 (not offered: mcpx's own tools mark no parameter x-mcp-header)
@pytest.mark.obligation(
    "S-TOOL-6", "S-TOOL-7", "S-MSG-16", "S-TOOL-8", "S-TOOL-10", "S-TOOL-20", "S-TOOL-21"
)
def test_published_tools_have_valid_schemas_and_names(daemon: Daemon, http: Any) -> None:
    for rev, tools in _tools_by_revision(daemon, http).items():
        names = [t["name"] for t in tools]
        assert names == GATEWAY_TOOLS, (rev, names)
        assert len(set(names)) == len(names)
        for tool in tools:
            assert TOOL_NAME.match(tool["name"]), tool["name"]
            schema = tool["inputSchema"]
            assert isinstance(schema, dict) and schema["type"] == "object", tool
            # Valid for its dialect (no $schema: 2020-12).
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            assert "$schema" not in schema and cls is validators.Draft202012Validator
            cls.check_schema(schema)
            assert "outputSchema" not in tool
            assert "x-mcp-header" not in json.dumps(schema), tool


@pytest.mark.obligation("S-TOOL-4", "S-TOOL-5")
def test_tools_list_is_the_same_for_every_connection_and_in_a_fixed_order(
    daemon: Daemon, http: Any
) -> None:
    first = http(MODERN)
    lists = [first.result("tools/list")["tools"] for _ in range(10)]
    # Other requests in between, and other connections: no side effects on the listing.
    first.result("tools/call", _call("demo", "echo", {"text": "x"}))
    first.result("tools/call", {"name": "mcpx_search_tools", "arguments": {"search": "echo"}})
    lists.append(first.result("tools/list")["tools"])
    lists.append(http(MODERN).result("tools/list")["tools"])
    with stdio_peer(SERVE, env=daemon.env()) as host:
        reply = host.request(1, "tools/list", {"_meta": META}, timeout=60)
        lists.append(reply["result"]["tools"])
    assert all(tools == lists[0] for tools in lists), lists
    assert [t["name"] for t in _walk(first, "tools/list", "tools")] == GATEWAY_TOOLS


@pytest.mark.obligation("S-TOOL-9")
def test_tools_of_several_upstreams_sharing_a_name_stay_apart(http: Any) -> None:
    host = http(MODERN)
    params = {"name": "mcpx_search_tools", "arguments": {"search": "echo", "refresh": True}}
    found = host.result("tools/call", params)["structuredContent"]["tools"]
    echoes = {(t["server"], t["name"]) for t in found if t["name"] == "echo"}
    assert {("demo", "echo"), ("craft", "echo"), ("bad", "echo")} <= echoes, found
    texts = {
        s: _text(host.result("tools/call", _call(s, "echo", {"text": "v"})))
        for s in ("demo", "craft", "bad")
    }
    assert texts == {"demo": "v", "craft": 'craft echo: {"text": "v"}', "bad": "v"}
    # What is exposed by name is mcpx's own tools only, each once.
    names = [t["name"] for t in _walk(host, "tools/list", "tools")]
    assert names == GATEWAY_TOOLS


@pytest.mark.obligation("S-TOOL-11", "S-TOOL-12")
def test_structured_content_is_an_object_mirrored_in_text(http: Any) -> None:
    for rev in ("2025-06-18", "2025-11-25", MODERN):
        host = http(rev)
        for name, args in (("mcpx_servers", {}), ("mcpx_search_tools", {"search": "echo"})):
            done = host.result("tools/call", {"name": name, "arguments": args})
            assert isinstance(done["structuredContent"], dict), done
            texts = [b["text"] for b in done["content"] if b["type"] == "text"]
            assert json.loads(texts[0]) == done["structuredContent"], (rev, done)
        # An upstream's non-object structuredContent never reaches a host whose revision
        # wants an object; a 2026-07-28 host may get any JSON value.
        scalar = host.result("tools/call", _call("craft", "scalar", {}))
        if rev == MODERN:
            assert scalar.get("structuredContent", 42) == 42, scalar
        else:
            assert isinstance(scalar.get("structuredContent", {}), dict), scalar
        assert "42" in _text(scalar)


@pytest.mark.obligation("S-TOOL-14")
def test_a_server_embedding_resources_declares_resources(http: Any) -> None:
    for rev in ("2025-06-18", "2025-11-25", MODERN):
        host = http(rev)
        caps = (
            host.result("server/discover")["capabilities"]
            if rev == MODERN
            else host.initialized["capabilities"]
        )
        done = host.result("tools/call", _call("demo", "readme", {}))
        assert any(b["type"] == "resource" for b in done["content"]), done
        assert "resources" in caps, caps
        embedded = next(b for b in done["content"] if b["type"] == "resource")
        read = host.result("resources/read", {"uri": embedded["resource"]["uri"]})
        assert read["contents"], read


# S-TOOL-16 (reading: invalid arguments are a tool execution error in every revision)
@pytest.mark.obligation("S-TOOL-15", "S-TOOL-17", "S-TOOL-16")
def test_unknown_tools_are_protocol_errors_and_bad_input_is_a_tool_error(http: Any) -> None:
    for rev in (*LEGACY_HTTP, MODERN):
        host = http(rev)
        unknown = host.ask("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert unknown["error"]["code"] == -32602, unknown
        # mcpx's own argument of the wrong type: isError, naming the field.
        bad = host.result(
            "tools/call", {"name": "mcpx_call", "arguments": {"server": 5, "tool": "echo"}}
        )
        assert bad["isError"] is True and "server" in _text(bad), bad
        # An upstream tool's argument of the wrong type: checked against its schema first.
        typed = host.result("tools/call", _call("craft", "typed", {"n": "seven"}))
        assert typed["isError"] is True, typed
        assert "n" in _text(typed) and "integer" in _text(typed), typed
        # A business failure upstream (its JSON-RPC error): a tool error, not a protocol one.
        failed = host.result("tools/call", _call("craft", "fail", {}))
        assert failed["isError"] is True and "craft broke" in _text(failed), failed
        nowhere = host.result("tools/call", _call("nosuchserver", "echo", {}))
        assert nowhere["isError"] is True, nowhere


# -- S-ERR: error codes at 2026-07-28 ----------------------------------------------------


@pytest.mark.obligation("S-ERR-2", "S-ERR-5", "S-ERR-7", "S-RES-10", "C-ERR-1")
def test_mcpx_own_errors_at_2026_use_only_the_defined_codes(http: Any) -> None:
    host = http(MODERN)
    codes: list[int] = []

    def refused(answer: dict[str, Any]) -> dict[str, Any]:
        error: dict[str, Any] = answer["error"]
        codes.append(error["code"])
        return error

    refused(host.ask("no/such/method"))
    refused(host.ask("tools/list", {"cursor": "garbage"}))
    refused(host.ask("tools/call", {"name": "no_such_tool", "arguments": {}}))
    missing = refused(host.ask("resources/read", {"uri": "mcpx://nosuchserver/x"}))
    assert missing["code"] == -32602  # never -32002 at 2026-07-28
    # HeaderMismatch: the header names another method than the body.
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    r = host.post(frame, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/list"})
    assert (r.status_code, refused(r.json())["code"]) == (400, -32020)
    # UnsupportedProtocolVersion, with what is supported and what was asked.
    frame["params"] = {"_meta": {**META, PROTOCOL_VERSION: "2099-01-01"}}
    r = host.post(frame, **{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"})
    error = refused(r.json())
    assert (r.status_code, error["code"]) == (400, -32022), r.text
    assert error["data"]["requested"] == "2099-01-01" and MODERN in error["data"]["supported"]
    for code in codes:
        assert not -32019 <= code <= -32000, codes
        assert not -32099 <= code <= -32020 or code in (-32020, -32021, -32022), codes
        assert code not in (-32002, -32042), codes
        assert code in (-32700, -32600, -32601, -32602, -32603, -32020, -32022), codes


# -- S-PAGE: pagination ------------------------------------------------------------------


LISTS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


@pytest.mark.obligation("S-PAGE-1", "S-PAGE-2", "S-PAGE-3", "S-PAGE-4")
@pytest.mark.parametrize("rev", ["2025-03-26", "2025-11-25", MODERN])
def test_every_list_is_paged_with_stable_opaque_cursors(
    daemon: Daemon, http: Any, rev: str
) -> None:
    host = http(rev)
    for method, key in LISTS.items():
        walks = []
        for _ in range(2):
            pages: list[tuple[list[dict[str, Any]], Any]] = []
            params: dict[str, Any] = {}
            while True:
                page = host.result(method, params)
                assert len(page[key]) <= 1, page  # mcp.pageSize is the server's choice
                pages.append((page[key], page.get("nextCursor")))
                if "nextCursor" not in page:
                    break
                cursor = page["nextCursor"]
                assert isinstance(cursor, str) and cursor != "", page
                params = {"cursor": cursor}
            walks.append(pages)
        assert walks[0] == walks[1], method  # the same cursors, the same pages
        items = [i for page, _ in walks[0] for i in page]
        assert len(items) == len(walks[0]) or not items  # one item a page, empty only at the end
        if key != "resourceTemplates":
            assert len(walks[0]) >= 2, (method, walks[0])  # paged for real
        for cursor in ("garbage", "", base64.urlsafe_b64encode(b"99").decode(), 7):
            refused = host.ask(method, {"cursor": cursor})
            assert refused["error"]["code"] == -32602, (method, cursor, refused)
