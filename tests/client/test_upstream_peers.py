"""mcpx's upstream client against real servers of every revision.

Each official Python SDK release runs our fixture server (tests/fixtures/sdk_server.py)
as a real process, over stdio and over HTTP; npm server-everything and PyPI
mcp-server-time run as they ship. Every frame mcpx sends is validated strictly against
the revision it was sent in (the ``sent_frames`` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpx import spec
from mcpx.client import QuestionOrigin
from support.peers import (
    PEER_VERSIONS,
    everything_server_command,
    everything_server_env,
    free_port,
    running_server,
    sdk_server_command,
    time_server_command,
)
from support.schemas import FrameLog
from support.upstream import Recorder, connected, http_server, stdio_server

pytestmark = pytest.mark.anyio

# What each release negotiates with mcpx: its newest revision, or modern for 2.3.0.
EXPECTED = {
    "1.2.1": ("legacy", "2024-11-05"),
    "1.9.4": ("legacy", "2025-03-26"),
    "1.12.4": ("legacy", "2025-06-18"),
    "1.23.3": ("legacy", "2025-11-25"),
    "2.3.0": ("modern", "2026-07-28"),
}


class Answers:
    """A host that answers every question, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def capabilities(self, revision: str) -> dict[str, Any]:
        caps: dict[str, Any] = {"roots": {}, "sampling": {}}
        if spec.at_or_after(revision, "2025-06-18"):
            caps["elicitation"] = {}
        return caps

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
        self.asked.append((method, asked.revision))
        if method == "elicitation/create":
            return {"action": "accept", "content": {"answer": "forty-two"}}
        if method == "sampling/createMessage":
            return {
                "role": "assistant",
                "content": {"type": "text", "text": "sampled!"},
                "model": "test-model",
            }
        if method == "roots/list":
            return {"roots": [{"uri": "file:///tmp/root", "name": "root"}]}
        return {}


def _text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def _exercise(session: Any) -> None:
    """The typed helpers, each against the fixture's surface."""
    tools = {t["name"] for t in await session.list_tools()}
    assert {"echo", "add", "slow", "fail", "sample", "roots", "log"} <= tools
    assert _text(await session.call_tool("add", {"a": 2, "b": 3})) == "5"
    assert _text(await session.call_tool("echo", {"text": "héllo"})) == "héllo"
    failed = await session.call_tool("fail", {})
    assert failed["isError"] is True
    prompts = await session.list_prompts()
    assert [p["name"] for p in prompts] == ["greet"]
    got = await session.get_prompt("greet", {"name": "Ada"})
    assert "Ada" in json.dumps(got["messages"])
    resources = await session.list_resources()
    assert "fixture://static" in {r["uri"] for r in resources}
    read = await session.read_resource("fixture://static")
    assert read["contents"][0]["text"] == "static content"
    templates = await session.list_resource_templates()
    assert templates[0]["uriTemplate"] == "fixture://item/{id}"
    item = await session.read_resource("fixture://item/7")
    assert item["contents"][0]["text"] == "item 7"


# C-LC-3 C-LC-5 C-LC-7 C-LC-22 C-LC-23: discover first on stdio, then the handshake.
@pytest.mark.obligation(
    "C-LC-3",
    "C-LC-5",
    "C-LC-7",
    "C-LC-22",
    "C-LC-23",
    "C-LC-1",
    "C-LC-17",
    "C-STDIO-6",
    "C-MSG-1",
    "C-ERR-7",
)
@pytest.mark.parametrize("version", PEER_VERSIONS)
async def test_stdio_every_release(version: str, sent_frames: FrameLog) -> None:
    recorder = Recorder()
    server = stdio_server(f"sdk-{version}", sdk_server_command(version, "stdio"))
    async with connected(server, recorder, sent_frames) as session:
        assert session.negotiated is not None
        era, revision = EXPECTED[version]
        assert (session.negotiated.era.value, session.negotiated.revision) == (era, revision)
        assert session.negotiated.server_info["name"] == "mcpx-fixture"
        await _exercise(session)
    # Probed modern first, as 2026-07-28 prescribes for a dual-era client.
    assert recorder.methods_sent()[0] == "server/discover"


HTTP_CASES = [
    ("2.3.0", "streamable-http", "/mcp", "http"),
    ("1.23.3", "streamable-http", "/mcp", "http"),
    ("1.12.4", "streamable-http", "/mcp", "http"),
    ("1.9.4", "streamable-http", "/mcp", "http"),
    # 1.2.1 has only HTTP+SSE: configured as plain http, mcpx falls back to it.
    ("1.2.1", "sse", "/sse", "sse"),
]


# C-SSE-3 C-SSE-4: a 4xx to both eras falls back to HTTP+SSE (1.2.1).
@pytest.mark.obligation("C-SSE-3", "C-SSE-4")
@pytest.mark.parametrize(("version", "transport", "path", "lands_on"), HTTP_CASES)
async def test_http_every_release(
    version: str, transport: str, path: str, lands_on: str, sent_frames: FrameLog
) -> None:
    port = free_port()
    recorder = Recorder()
    with running_server(sdk_server_command(version, transport, port), port=port):
        server = http_server(f"sdk-{version}", f"http://127.0.0.1:{port}{path}")
        async with connected(server, recorder, sent_frames) as session:
            assert session.negotiated is not None
            era, revision = EXPECTED[version]
            assert (session.negotiated.era.value, session.negotiated.revision) == (era, revision)
            assert session.negotiated.transport == lands_on
            await _exercise(session)


@pytest.mark.parametrize("version", ["2.3.0", "1.23.3"])
async def test_http_sse_configured_directly(version: str, sent_frames: FrameLog) -> None:
    port = free_port()
    with running_server(sdk_server_command(version, "sse", port), port=port):
        server = http_server(f"sdk-{version}", f"http://127.0.0.1:{port}/sse")
        server = type(server)(name=server.name, transport="sse", url=server.url)
        async with connected(server, Recorder(), sent_frames) as session:
            assert session.negotiated is not None
            assert session.negotiated.transport == "sse"
            assert _text(await session.call_tool("add", {"a": 1, "b": 1})) == "2"


QUESTION_CASES = [(v, "stdio") for v in PEER_VERSIONS] + [("2.3.0", "http"), ("1.23.3", "http")]


# C-LC-2 C-MRTR-1 C-MRTR-3: input_required rounds answered and retried (2.3.0).
@pytest.mark.obligation("C-LC-2", "C-MRTR-1", "C-MRTR-3", "C-HTTP-6", "C-SREQ-3")
@pytest.mark.parametrize(("version", "transport"), QUESTION_CASES)
async def test_questions_reach_the_one_handler(
    version: str, transport: str, sent_frames: FrameLog
) -> None:
    """Legacy server requests and modern input_required rounds both go to one handler."""
    answers = Answers()
    recorder = Recorder()
    if transport == "stdio":
        server = stdio_server(f"sdk-{version}", sdk_server_command(version, "stdio"))
        ctx = None
    else:
        port = free_port()
        ctx = running_server(sdk_server_command(version, "streamable-http", port), port=port)
        ctx.__enter__()
        server = http_server(f"sdk-{version}", f"http://127.0.0.1:{port}/mcp")
    try:
        async with connected(server, recorder, sent_frames, handler=answers) as session:
            assert _text(await session.call_tool("sample", {"prompt": "hi"})) == "sampled!"
            assert "file:///tmp/root" in _text(await session.call_tool("roots", {}))
            if spec.at_or_after(EXPECTED[version][1], "2025-06-18"):
                assert _text(await session.call_tool("ask", {"question": "?"})) == "forty-two"
            revision = session.revision
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    methods = [m for m, _ in answers.asked]
    assert "sampling/createMessage" in methods and "roots/list" in methods
    assert {rev for _, rev in answers.asked} == {revision}
    if revision == "2026-07-28":
        # Modern: no response frames from mcpx at all, only retried requests.
        assert not [f for f, _ in recorder.sent if "result" in f]
        assert any("inputResponses" in (f.get("params") or {}) for f, _ in recorder.sent)


async def test_mcp_server_time(sent_frames: FrameLog) -> None:
    server = stdio_server("time", time_server_command())
    async with connected(server, Recorder(), sent_frames) as session:
        tools = {t["name"] for t in await session.list_tools()}
        assert "get_current_time" in tools
        result = await session.call_tool("get_current_time", {"timezone": "UTC"})
        assert result.get("isError") is not True
        assert "UTC" in _text(result)


@pytest.mark.parametrize("transport", ["stdio", "streamableHttp"])
async def test_server_everything(transport: str, sent_frames: FrameLog) -> None:
    recorder = Recorder()
    if transport == "stdio":
        server = stdio_server("everything", everything_server_command("stdio"))
        async with connected(server, recorder, sent_frames) as session:
            await _everything(session)
        return
    port = free_port()
    argv = everything_server_command("streamableHttp")
    with running_server(argv, port=port, env=everything_server_env(port)):
        server = http_server("everything", f"http://127.0.0.1:{port}/mcp")
        async with connected(server, recorder, sent_frames) as session:
            await _everything(session)


async def _everything(session: Any) -> None:
    assert session.negotiated.era.value == "legacy"
    assert session.negotiated.revision == "2025-11-25"
    tools = {t["name"] for t in await session.list_tools()}
    assert "echo" in tools
    assert "ECHO_ME" in _text(await session.call_tool("echo", {"message": "ECHO_ME"}))
    resources = await session.list_resources()
    assert len(resources) >= 1
    prompts = await session.list_prompts()
    assert len(prompts) >= 1


# C-LC-22 (cached: one probe per configuration)
@pytest.mark.obligation("C-LC-22", "C-LC-30", "C-LC-31")
async def test_era_cache_skips_the_probe(tmp_path: Path, sent_frames: FrameLog) -> None:
    server = stdio_server("legacy", sdk_server_command("1.23.3", "stdio"))
    first = Recorder()
    async with connected(server, first, sent_frames, cache_dir=tmp_path) as session:
        assert session.negotiated is not None and session.negotiated.source == "probe"
    cached = json.loads((tmp_path / "upstream-eras.json").read_text())
    assert [e["era"] for e in cached["eras"].values()] == ["legacy"]
    second = Recorder()
    async with connected(server, second, sent_frames, cache_dir=tmp_path) as session:
        assert session.negotiated is not None and session.negotiated.source == "cache"
    # A cached legacy server gets initialize first, and no discover.
    assert second.methods_sent()[0] == "initialize"
    assert "server/discover" not in second.methods_sent()


# C-LC-2: a listen stream, acknowledgement first.
@pytest.mark.obligation("C-LC-2")
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_subscriptions_listen_acknowledges_first(
    transport: str, sent_frames: FrameLog
) -> None:
    """A 2026-07-28 listen stream: the acknowledgement first, carrying the listen id."""
    recorder = Recorder()
    if transport == "stdio":
        server = stdio_server("modern", sdk_server_command("2.3.0", "stdio"))
        async with connected(server, recorder, sent_frames) as session:
            await _listen(session)
        return
    port = free_port()
    with running_server(sdk_server_command("2.3.0", "streamable-http", port), port=port):
        server = http_server("modern", f"http://127.0.0.1:{port}/mcp")
        async with connected(server, recorder, sent_frames) as session:
            await _listen(session)


async def _listen(session: Any) -> None:
    async with session.listen({"toolsListChanged": True}) as stream:
        first = await stream.receive()
    assert first["method"] == "notifications/subscriptions/acknowledged"
    assert first["params"]["notifications"] == {"toolsListChanged": True}
    assert "io.modelcontextprotocol/subscriptionId" in first["params"]["_meta"]
    # The session is still good after the stream ends.
    assert _text(await session.call_tool("add", {"a": 1, "b": 2})) == "3"


@pytest.mark.obligation("C-HTTP-11")
async def test_a_forgotten_http_session_is_initialized_again(sent_frames: FrameLog) -> None:
    """Legacy Streamable HTTP: a 404 on a known session (the server restarted)
    means initialize again, once, and repeat the request."""
    port = free_port()
    recorder = Recorder()
    argv = sdk_server_command("1.23.3", "streamable-http", port)
    server = http_server("restarting", f"http://127.0.0.1:{port}/mcp")
    first = running_server(argv, port=port)
    first.__enter__()
    try:
        async with connected(server, recorder, sent_frames) as session:
            assert _text(await session.call_tool("add", {"a": 1, "b": 1})) == "2"
            first.__exit__(None, None, None)
            first = None
            with running_server(argv, port=port):
                assert _text(await session.call_tool("add", {"a": 2, "b": 2})) == "4"
    finally:
        if first is not None:
            first.__exit__(None, None, None)
    assert recorder.methods_sent().count("initialize") == 2
