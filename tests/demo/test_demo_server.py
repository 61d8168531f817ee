"""The demo server as a real process, in each of the five revisions.

Each test runs once per revision against ``python -m mcpx.demo``, over raw JSON-RPC on its
pipes. The handshake is the era's own (initialize + initialized, or server/discover), and
every frame the server sends is validated strictly against the revision in force. What a
revision defines is asked of the matrix (``spec.defined``), never hard-coded here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import mcpx
from demo.peer import SERVER_INFO, DemoPeer, Start, is_modern
from mcpx import spec
from support.schemas import definitions


def envelope(result: dict[str, Any], rev: str, cache: tuple[int, str] | None = None) -> None:
    """The 2026-07-28 envelope is on a modern result, and only there."""
    if is_modern(rev):
        assert result["resultType"] == "complete"
        assert result["_meta"][SERVER_INFO] == {
            "name": "mcpx-demo",
            "version": mcpx.__version__,
            "title": "mcpx demo server",
        }
        if cache is not None:
            assert (result["ttlMs"], result["cacheScope"]) == cache
    else:
        assert not {"resultType", "ttlMs", "cacheScope"} & result.keys()
        assert SERVER_INFO not in result.get("_meta", {})


def text(result: dict[str, Any]) -> str:
    assert [block["type"] for block in result["content"]] == ["text"]
    value: str = result["content"][0]["text"]
    return value


def test_handshake(start: Start, rev: str) -> None:
    peer = start()
    result = peer.handshake(rev)
    declared = {"tools", "prompts", "resources", "logging"}
    if spec.defined("capability", "completions", rev, "server"):
        declared.add("completions")
    assert set(result["capabilities"]) == declared
    assert "echo" in result["instructions"]
    info = {"name": "mcpx-demo", "version": mcpx.__version__}
    if spec.defined("field", "Implementation.title", rev):
        info["title"] = "mcpx demo server"
    if is_modern(rev):
        assert result["supportedVersions"] == ["2026-07-28"]
        assert not {"protocolVersion", "serverInfo"} & result.keys()
        envelope(result, rev, (60_000, "public"))
    else:
        assert result["protocolVersion"] == rev
        assert result["serverInfo"] == info
        envelope(result, rev)
        assert peer.result("ping") == {}


def test_tools_list(peer: DemoPeer, rev: str) -> None:
    result = peer.result("tools/list")
    envelope(result, rev, (60_000, "public"))
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert list(tools) == ["echo", "add", "slow", "readme", "now"]
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert ("title" in tool) == spec.defined("field", "Tool.title", rev)
        assert ("annotations" in tool) == spec.defined("field", "Tool.annotations", rev)
    assert tools["slow"]["inputSchema"]["required"] == ["seconds"]
    assert "required" not in tools["now"]["inputSchema"]  # never an empty list
    has_output = spec.defined("field", "Tool.outputSchema", rev)
    assert ("outputSchema" in tools["add"]) == has_output
    assert not any("outputSchema" in t for name, t in tools.items() if name != "add")
    if spec.defined("field", "Tool.annotations", rev):
        assert tools["now"]["annotations"]["readOnlyHint"] is True


def test_tool_calls(peer: DemoPeer, rev: str) -> None:
    echoed = peer.tool("echo", {"text": "héllo, wörld ✓"})
    assert text(echoed) == "héllo, wörld ✓"
    assert "isError" not in echoed
    envelope(echoed, rev)

    summed = peer.tool("add", {"a": 2, "b": 3})
    assert text(summed) == "5"
    structured = spec.defined("field", "CallToolResult.structuredContent", rev)
    assert summed.get("structuredContent") == ({"sum": 5} if structured else None)
    assert text(peer.tool("add", {"a": 0.5, "b": -0.25})) == "0.25"

    stamp = datetime.fromisoformat(text(peer.tool("now")))
    assert stamp.tzinfo is not None and stamp.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - stamp) < timedelta(minutes=1)

    unknown = peer.error("tools/call", {"name": "nope", "arguments": {}})
    assert unknown["code"] == -32602
    assert unknown["message"].startswith("no tool named")
    shapeless = peer.error("tools/call", {"name": "echo", "arguments": ["x"]})
    assert shapeless["code"] == -32602


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("add", {"a": "1", "b": 2}, "argument 'a' must be a number (got string)"),
    ("add", {"a": True, "b": 2}, "argument 'a' must be a number (got boolean)"),
    ("add", {"a": 1}, "missing required argument 'b'"),
    ("add", {"a": 1, "b": 2, "c": 3}, "unknown argument 'c'"),
    ("echo", {"text": None}, "argument 'text' must be a string (got null)"),
    ("slow", {"seconds": -1}, "argument 'seconds' must be at least 0"),
    ("slow", {"seconds": 1, "steps": 1.5}, "argument 'steps' must be an integer (got number)"),
    ("now", {"zone": "UTC"}, "unknown argument 'zone' (arguments: none)"),
]


def test_bad_arguments_are_tool_errors(peer: DemoPeer, rev: str) -> None:
    for name, arguments, problem in BAD_ARGUMENTS:
        result = peer.tool(name, arguments)
        assert result["isError"] is True
        assert text(result).startswith(f"{name}: {problem}")
        assert "structuredContent" not in result
        envelope(result, rev)


def test_slow_reports_progress(peer: DemoPeer, rev: str) -> None:
    rid = peer.request(
        "tools/call", {"name": "slow", "arguments": {"seconds": 0.3, "steps": 3}}, token="p1"
    )
    answer = peer.response(rid)
    assert text(answer["result"]) == "slept 0.3 s in 3 steps"
    reports = [f["params"] for f in peer.stashed("notifications/progress")]
    assert [r["progress"] for r in reports] == [1, 2, 3]
    assert all(r["progressToken"] == "p1" and r["total"] == 3 for r in reports)
    with_message = spec.defined("field", "ProgressNotification.params.message", rev)
    assert [r.get("message") for r in reports] == (
        ["step 1 of 3", "step 2 of 3", "step 3 of 3"] if with_message else [None] * 3
    )
    # Every report precedes the response on the wire.
    order = [f.get("method", "response") for f in peer.received[-4:]]
    assert order == ["notifications/progress"] * 3 + ["response"]

    # Without a progress token, no progress.
    quiet = peer.tool("slow", {"seconds": 0, "steps": 2})
    assert text(quiet) == "slept 0 s in 2 steps"
    assert peer.received[-1]["id"] == peer._next_id


def test_cancel_stops_slow_and_suppresses_its_response(peer: DemoPeer, rev: str) -> None:
    arguments = {"seconds": 30, "steps": 300}
    rid = peer.request("tools/call", {"name": "slow", "arguments": arguments}, token=7)
    assert peer.notification("notifications/progress")["params"]["progressToken"] == 7
    peer.notify("notifications/cancelled", {"requestId": rid, "reason": "changed my mind"})
    # Read in order after the cancel, so nothing of the cancelled call may follow it.
    assert text(peer.tool("echo", {"text": "still here"})) == "still here"
    mark = len(peer.received)
    peer.close_stdin()
    after = peer.rest()
    assert peer.wait() == 0
    assert not [f for f in after if f.get("id") == rid or "method" in f]
    assert not [f for f in peer.received if f.get("id") == rid]
    assert len(peer.received) == mark
    assert "still running" not in peer.stderr()  # the drain found nothing in flight


def test_answers_while_slow_runs(peer: DemoPeer, rev: str) -> None:
    slow = {"name": "slow", "arguments": {"seconds": 30, "steps": 300}}
    rid = peer.request("tools/call", slow, token="busy")
    peer.notification("notifications/progress")
    if is_modern(rev):  # 2026-07-28 has no ping: any request shows the same
        assert peer.result("tools/list")["tools"]
    else:
        assert peer.result("ping") == {}
    assert text(peer.tool("add", {"a": 1, "b": 1})) == "2"
    assert not [f for f in peer.received if f.get("id") == rid]  # slow is still running
    peer.notify("notifications/cancelled", {"requestId": rid})


def test_prompts(peer: DemoPeer, rev: str) -> None:
    listed = peer.result("prompts/list")
    envelope(listed, rev, (60_000, "public"))
    (hello,) = listed["prompts"]
    assert hello["name"] == "hello"
    assert ("title" in hello) == spec.defined("field", "Prompt.title", rev)
    (argument,) = hello["arguments"]
    assert (argument["name"], argument["required"]) == ("name", True)
    assert ("title" in argument) == spec.defined("field", "PromptArgument.title", rev)

    got = peer.result("prompts/get", {"name": "hello", "arguments": {"name": "Ada"}})
    envelope(got, rev)
    (message,) = got["messages"]
    assert message["role"] == "user"
    assert "Ada" in message["content"]["text"]

    assert peer.error("prompts/get", {"name": "hello"})["code"] == -32602
    missing = peer.error("prompts/get", {"name": "goodbye", "arguments": {"name": "x"}})
    assert (missing["code"], missing["message"]) == (-32602, "no prompt named 'goodbye'")


def test_resources(peer: DemoPeer, rev: str) -> None:
    listed = peer.result("resources/list")
    envelope(listed, rev, (60_000, "private"))
    (readme,) = listed["resources"]
    assert (readme["uri"], readme["mimeType"]) == ("demo://readme", "text/markdown")
    assert ("title" in readme) == spec.defined("field", "Resource.title", rev)

    read = peer.result("resources/read", {"uri": "demo://readme"})
    envelope(read, rev, (0, "private"))
    (contents,) = read["contents"]
    assert contents["uri"] == "demo://readme" and contents["mimeType"] == "text/markdown"
    assert "mcpx" in contents["text"]

    templates = peer.result("resources/templates/list")
    envelope(templates, rev, (60_000, "public"))
    (template,) = templates["resourceTemplates"]
    assert template["uriTemplate"] == "demo://greeting/{name}"
    assert ("title" in template) == spec.defined("field", "ResourceTemplate.title", rev)

    for uri, greeting in [
        ("demo://greeting/Ada", "Hello, Ada!"),
        ("demo://greeting/Ada%20Lovelace", "Hello, Ada Lovelace!"),
        ("demo://greeting/AC%2FDC", "Hello, AC/DC!"),
    ]:
        (greeted,) = peer.result("resources/read", {"uri": uri})["contents"]
        assert (greeted["uri"], greeted["text"]) == (uri, greeting)

    for uri in ("demo://nothing", "demo://greeting/", "demo://greeting/a/b", "file:///x"):
        missing = peer.error("resources/read", {"uri": uri})
        # "Resource not found": -32002 until 2026-07-28 retired it for -32602 (SEP-2164).
        assert missing["code"] == (-32602 if is_modern(rev) else -32002)
        assert missing["data"] == {"uri": uri}
    assert peer.error("resources/list", {"cursor": "next"})["code"] == -32602


def test_completion(peer: DemoPeer, rev: str) -> None:
    prompt_ref = {"type": "ref/prompt", "name": "hello"}
    done = peer.result("completion/complete", {"ref": prompt_ref, "argument": _arg("a")})
    envelope(done, rev)
    assert done["completion"] == {"values": ["Ada", "Alan"], "total": 2, "hasMore": False}

    template_ref = {"type": "ref/resource", "uri": "demo://greeting/{name}"}
    done = peer.result("completion/complete", {"ref": template_ref, "argument": _arg("GR")})
    assert done["completion"]["values"] == ["Grace"]
    other = peer.result(
        "completion/complete", {"ref": template_ref, "argument": {"name": "x", "value": ""}}
    )
    assert other["completion"]["values"] == []

    unknown = {"type": "ref/prompt", "name": "goodbye"}
    refused = peer.error("completion/complete", {"ref": unknown, "argument": _arg("")})
    assert refused["code"] == -32602


def _arg(value: str) -> dict[str, str]:
    return {"name": "name", "value": value}


def idless_errors(rev: str) -> bool:
    """Whether ``rev``'s schema lets an error response go without an id."""
    defs = definitions(rev)
    envelope = defs.get("JSONRPCErrorResponse") or defs["JSONRPCError"]
    return "id" not in envelope.get("required", [])


UNREADABLE = [
    (b"{not json", -32700),
    (b"\xff\xfe", -32700),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600),
    (b'"just a string"', -32600),
    (b"[]", -32600),
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}', -32700),
]

SHAPELESS_WITH_ID = [
    b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}',
    b'{"jsonrpc":"1.0","id":8,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":"nine","method":42}',
    b'{"id":10,"method":"tools/list"}',
]


def test_invalid_input_never_crashes(peer: DemoPeer, rev: str) -> None:
    for line, code in UNREADABLE:
        before = len(peer.received)
        peer.send_raw(line + b"\n")
        if idless_errors(rev):
            error = peer.next_frame()
            assert error is not None and "id" not in error
            assert error["error"]["code"] == code
        else:  # an error must echo an id before 2025-11-25, and there is none to echo
            assert_quiet(peer, before)
    for line in SHAPELESS_WITH_ID:
        peer.send_raw(line + b"\n")
        error = peer.next_frame()
        assert error is not None and error["error"]["code"] == -32600
        assert error["id"] in (7, 8, "nine", 10)

    assert peer.error("no/such/method")["code"] == -32601
    before = len(peer.received)
    peer.send_raw(b"\n  \r\n")  # blank lines carry nothing
    peer.send({"jsonrpc": "2.0", "id": 99, "result": {}})  # a response: nobody asked
    peer.notify("notifications/made/up", {"x": 1})
    assert_quiet(peer, before)
    assert text(peer.tool("echo", {"text": "alive"})) == "alive"


def assert_quiet(peer: DemoPeer, before: int) -> None:
    """Nothing was sent since ``before``: the next frame is the answer to a fresh request."""
    rid = peer.request("tools/list")
    peer.response(rid)
    assert [f.get("id") for f in peer.received[before:]] == [rid]
