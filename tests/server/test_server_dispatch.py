"""``dispatch`` in-process, against the real demo server through a real pool, per revision.

Every response frame is validated strictly against the revision it answers
(``sent_frames``).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from mcpx import spec
from mcpx.config import ServerConfig, Settings
from mcpx.ops import Catalogue, OpContext
from mcpx.pool import open_pool
from mcpx.server import META_CAPABILITIES, META_VERSION, Conn, dispatch
from support.schemas import FrameLog
from support.upstream import settings

pytestmark = pytest.mark.anyio

DEMO = ServerConfig(
    name="demo", transport="stdio", command=sys.executable, args=("-m", "mcpx", "demo-server")
)
README = "mcpx://demo/demo%3A%2F%2Freadme"
GREETING = "mcpx://demo/demo%3A%2F%2Fgreeting%2F{name}"


@dataclass
class Host:
    """An MCP host talking to ``dispatch`` in one revision; every answer is validated."""

    ctx: OpContext
    config: Settings
    rev: str
    log: FrameLog
    conn: Conn = field(default_factory=lambda: Conn("stdio"))
    next_id: int = 0

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        body = dict(params or {})
        if self.rev in spec.MODERN:
            body["_meta"] = {META_VERSION: self.rev, META_CAPABILITIES: {}}
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": body}
        answer = await dispatch(frame, self.conn, self.ctx, settings=self.config)
        assert answer is not None
        self.log.sent(answer, self.rev, sender="server", answering=method)
        return answer

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await self.ask(method, params)
        assert "result" in answer, answer
        out: dict[str, Any] = answer["result"]
        return out

    async def start(self) -> None:
        if self.rev in spec.MODERN:
            found = await self.result("server/discover")
            assert found["supportedVersions"] == ["2026-07-28"]
            return
        params = {
            "protocolVersion": self.rev,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }
        found = await self.result("initialize", params)
        assert found["protocolVersion"] == self.rev
        assert self.conn.revision == self.rev


@asynccontextmanager
async def host(rev: str, log: FrameLog, **flags: str) -> AsyncIterator[Host]:
    config = settings(**flags)
    with anyio.fail_after(60):
        async with open_pool({"demo": DEMO}, config) as pool:
            ctx = OpContext(pool, Catalogue(None, pool), config)
            peer = Host(ctx, config, rev, log)
            await peer.start()
            yield peer


@pytest.fixture(params=spec.REVISIONS)
def rev(request: pytest.FixtureRequest) -> str:
    revision: str = request.param
    return revision


def _text(result: dict[str, Any]) -> str:
    return "".join(b["text"] for b in result["content"] if b["type"] == "text")


@pytest.mark.obligation("S-TOOL-5", "S-TOOL-6")
async def test_tools_are_mcpx_own_in_a_fixed_order(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        tools = (await peer.result("tools/list"))["tools"]
        assert [t["name"] for t in tools] == [
            "mcpx_call",
            "mcpx_exec",
            "mcpx_servers",
            "mcpx_search_tools",
        ]
        assert all(t["inputSchema"]["type"] == "object" for t in tools)
        call = tools[0]["inputSchema"]
        assert set(call["required"]) == {"server", "tool"}
        # What /v1/call reads from HTTP headers is no tool argument.
        assert set(call["properties"]) == {"server", "tool", "arguments", "timeout"}


@pytest.mark.obligation("S-TOOL-13")
async def test_mcpx_call_carries_the_upstream_result(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        args = {"server": "demo", "tool": "echo", "arguments": {"text": "hi there"}}
        result = await peer.result("tools/call", {"name": "mcpx_call", "arguments": args})
        assert not result.get("isError")
        assert "hi there" in _text(result)


async def test_search_tools_returns_a_handful(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        params = {"name": "mcpx_search_tools", "arguments": {"search": "echo"}}
        result = await peer.result("tools/call", params)
        found = json.loads(result["content"][0]["text"])
        assert found["tools"][0]["name"] == "echo"
        assert set(found["tools"][0]) <= {"server", "name", "description", "inputSchema"}
        # structuredContent only where the revision defines it.
        has_structured = spec.defined("field", "CallToolResult.structuredContent", rev)
        assert ("structuredContent" in result) == has_structured


@pytest.mark.obligation("S-TOOL-13", "S-TOOL-15")
async def test_servers_and_op_errors(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        result = await peer.result("tools/call", {"name": "mcpx_servers", "arguments": {}})
        assert json.loads(_text(result))["servers"][0]["name"] == "demo"
        args = {"server": "nope", "tool": "echo"}
        failed = await peer.result("tools/call", {"name": "mcpx_call", "arguments": args})
        assert failed["isError"] is True
        assert "unknown_server" in _text(failed)
        bad = await peer.result("tools/call", {"name": "mcpx_call", "arguments": {}})
        assert bad["isError"] is True


@pytest.mark.obligation("S-TOOL-15")
async def test_unknown_tool_is_invalid_params(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        answer = await peer.ask("tools/call", {"name": "nope", "arguments": {}})
        assert answer["error"]["code"] == -32602
        assert "no tool named" in answer["error"]["message"]


async def test_prompts_are_renamed_and_forwarded(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        prompts = (await peer.result("prompts/list"))["prompts"]
        assert [p["name"] for p in prompts] == ["demo_hello"]
        params = {"name": "demo_hello", "arguments": {"name": "Ada"}}
        got = await peer.result("prompts/get", params)
        assert "Ada" in got["messages"][0]["content"]["text"]
        missing = await peer.ask("prompts/get", {"name": "nodemo_hello"})
        assert missing["error"]["code"] == -32602


@pytest.mark.obligation("C-ERR-4")
async def test_resources_read_back_through_mcpx_uris(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        resources = (await peer.result("resources/list"))["resources"]
        assert [r["uri"] for r in resources] == [README]
        read = await peer.result("resources/read", {"uri": README})
        assert read["contents"][0]["uri"] == README
        assert "mcpx demo server" in read["contents"][0]["text"]
        gone = await peer.ask("resources/read", {"uri": "demo://readme"})
        assert gone["error"]["code"] == (-32602 if rev in spec.MODERN else -32002)


async def test_templates_still_expand(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        templates = (await peer.result("resources/templates/list"))["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == [GREETING]
        # A client's RFC 6570 expansion of "a/b" is "a%2Fb": read back exactly.
        for value, text in (("Ada", "Hello, Ada!"), ("a%2Fb", "Hello, a/b!")):
            read = await peer.result("resources/read", {"uri": GREETING.format(name=value)})
            assert read["contents"][0]["text"] == text


async def test_completion_is_forwarded(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        for ref in (
            {"type": "ref/prompt", "name": "demo_hello"},
            {"type": "ref/resource", "uri": GREETING},
        ):
            params = {"ref": ref, "argument": {"name": "name", "value": "a"}}
            done = await peer.result("completion/complete", params)
            assert done["completion"]["values"] == ["Ada", "Alan"]


@pytest.mark.obligation("S-PAGE-2", "S-PAGE-3", "S-PAGE-4")
async def test_pagination_and_cursors(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames, mcp__pageSize="2") as peer:
        first = await peer.result("tools/list")
        assert len(first["tools"]) == 2
        rest = await peer.result("tools/list", {"cursor": first["nextCursor"]})
        assert [t["name"] for t in rest["tools"]] == ["mcpx_servers", "mcpx_search_tools"]
        assert "nextCursor" not in rest
        junk = base64.urlsafe_b64encode(b"99").decode()
        for cursor in ("not a cursor", junk):
            bad = await peer.ask("tools/list", {"cursor": cursor})
            assert bad["error"]["code"] == -32602


async def test_modern_refuses_removed_methods(sent_frames: FrameLog) -> None:
    async with host("2026-07-28", sent_frames) as peer:
        for method in ("ping", "logging/setLevel", "resources/subscribe", "initialize"):
            answer = await peer.ask(method, {"level": "info", "uri": README})
            assert answer["error"]["code"] == -32601, method
        unknown = await peer.ask("nope/nothing")
        assert unknown["error"]["code"] == -32601


async def test_modern_results_carry_the_envelope(sent_frames: FrameLog) -> None:
    async with host("2026-07-28", sent_frames) as peer:
        listed = await peer.result("tools/list")
        assert listed["resultType"] == "complete"
        assert listed["cacheScope"] == "public" and listed["ttlMs"] == 60_000
        assert listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpx"
        # Over HTTP a modern header with no _meta in the body is malformed, not legacy.
        frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
        missing = await dispatch(
            frame,
            Conn("http"),
            peer.ctx,
            settings=peer.config,
            headers={"MCP-Protocol-Version": "2026-07-28"},
        )
        assert missing is not None and missing["error"]["code"] == -32602
        peer.log.sent(missing, "2026-07-28", sender="server", answering="tools/list")


@pytest.mark.parametrize("legacy", spec.LEGACY)
async def test_legacy_utilities(legacy: str, sent_frames: FrameLog) -> None:
    async with host(legacy, sent_frames) as peer:
        assert await peer.result("ping") == {}
        assert await peer.result("logging/setLevel", {"level": "debug"}) == {}
        assert peer.conn.log_level == "debug"
        assert await peer.result("resources/subscribe", {"uri": README}) == {}
        assert peer.conn.subscriptions.uris == {README}
        assert await peer.result("resources/unsubscribe", {"uri": README}) == {}
        assert peer.conn.subscriptions.uris == set()
        discover = await peer.ask("server/discover")
        assert discover["error"]["code"] == -32601
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert await dispatch(note, peer.conn, peer.ctx, settings=peer.config) is None


@pytest.mark.obligation("C-LC-10", "C-LC-11")
async def test_completion_from_the_catalogue_when_undeclared(sent_frames: FrameLog) -> None:
    # mcp 1.2.1 predates completions: it declares none and would answer -32601 if asked.
    from support.peers import sdk_server_command

    argv = sdk_server_command("1.2.1", "stdio")
    old = ServerConfig(name="old", transport="stdio", command=argv[0], args=tuple(argv[1:]))
    config = settings()
    async with open_pool({"demo": DEMO, "old": old}, config) as pool:
        ctx = OpContext(pool, Catalogue(None, pool), config)
        peer = Host(ctx, config, "2025-11-25", sent_frames)
        await peer.start()
        template = "mcpx://old/fixture%3A%2F%2Fitem%2F{id}"
        params = {"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": "id"}}
        params["argument"]["value"] = ""
        done = await peer.result("completion/complete", params)
        assert done["completion"] == {"values": [], "total": 0, "hasMore": False}
        assert done["_meta"]["dev.mcpx/source"] == "cache"
        assert "old did not declare completions" in done["_meta"]["dev.mcpx/reason"]
        # The demo declares completions: asked, and its answer carries no cache tag.
        ref = {"type": "ref/prompt", "name": "demo_hello"}
        done = await peer.result(
            "completion/complete", {"ref": ref, "argument": {"name": "name", "value": "A"}}
        )
        assert done["completion"]["values"] == ["Ada", "Alan"]
        assert "_meta" not in done


async def test_resource_uris_in_call_results_read_back(rev: str, sent_frames: FrameLog) -> None:
    async with host(rev, sent_frames) as peer:
        args = {"server": "demo", "tool": "readme", "arguments": {}}
        done = await peer.result("tools/call", {"name": "mcpx_call", "arguments": args})
        embedded = [b for b in done["content"] if b["type"] == "resource"]
        assert {b["resource"]["uri"] for b in embedded} == {README}
        links = [b for b in done["content"] if b["type"] == "resource_link"]
        if spec.at_or_after(rev, "2025-06-18"):
            assert [b["uri"] for b in links] == [README]
        else:  # spelled down to an embedded resource naming the link, still readable
            assert not links
        read = await peer.result("resources/read", {"uri": README})
        assert read["contents"][0]["text"] == embedded[-1]["resource"]["text"]
