"""Client obligations (C-LC, C-STDIO, C-HTTP, C-MSG, C-ERR): what mcpx owes the upstream
servers it is a client of, proven against real processes and sockets.

Two recording fakes stand in for upstreams: a stdio server (``FAKE_STDIO`` below, written
to a file and run as a process) that appends every raw line mcpx writes to its stdin to a
log, and a Streamable HTTP server (starlette + uvicorn on 127.0.0.1, in a thread) that
records every HTTP request with its headers and body. Every frame mcpx sends is also
validated strictly against its revision (the ``sent_frames`` fixture).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcpx import spec, wire
from mcpx.client import Asked, HandshakeFailed, UpstreamError, UpstreamTimeout, _pages
from mcpx.config import ServerConfig
from mcpx.questions import NativeFirst
from mcpx.questions._broker import Broker
from mcpx.transport import _stdio, open_stdio
from support.asgi import loopback_socket, running_app
from support.schemas import FrameLog
from support.upstream import Recorder, connected, http_server, settings, stdio_server

pytestmark = pytest.mark.anyio

META = "io.modelcontextprotocol/"
# The spec's _meta key grammar: an optional prefix of dot-separated labels and "/",
# then a name that begins and ends with an alphanumeric.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
META_KEY = re.compile(rf"^(?:{_LABEL}(?:\.{_LABEL})*/)?[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
# The MCP-reserved keys a client may put in a request's _meta (spec-defined only).
SPEC_KEYS = {
    META + "protocolVersion",
    META + "clientCapabilities",
    META + "clientInfo",
    META + "logLevel",
    "progressToken",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the recording stdio fake ---------------------------------------------------------------

FAKE_STDIO = (Path(__file__).parents[1] / "fixtures" / "recording_fake.py").read_text()


@pytest.fixture(scope="module")
def fake_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fake") / "fake_stdio.py"
    path.write_text(FAKE_STDIO)
    return path


@dataclass
class Fake:
    """One run of the stdio fake: its config and the raw stdin log."""

    server: ServerConfig
    log: Path

    def raw_lines(self) -> list[bytes]:
        data = self.log.read_bytes() if self.log.exists() else b""
        return [line for line in data.split(b"\n") if line and not line.startswith(b"#")]

    def frames(self) -> list[Any]:
        return [json.loads(line) for line in self.raw_lines()]

    def methods(self) -> list[str]:
        return [f["method"] for f in self.frames() if "method" in f]


@pytest.fixture
def fake(fake_script: Path, tmp_path: Path) -> Any:
    count = 0

    def make(mode: str, arg: str = "") -> Fake:
        nonlocal count
        count += 1
        log = tmp_path / f"stdin-{count}.log"
        argv = [sys.executable, "-u", str(fake_script), str(log), mode, arg]
        return Fake(stdio_server(f"fake-{mode}", argv), log)

    return make


class Roots:
    """A host that answers roots/list and nothing else."""

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {"roots": {}}

    async def answer(self, method: str, params: dict[str, Any], asked: Asked) -> dict[str, Any]:
        if method == "roots/list":
            return {"roots": [{"uri": "file:///tmp/root", "name": "root"}]}
        raise wire.MethodNotFound(f"Method not found: {method}")


def _meta_keys_ok(frames: list[Any]) -> None:
    """Every _meta key mcpx sent follows the naming rules, and every key under an
    MCP-reserved prefix is one the spec defines."""
    for frame in frames:
        meta = (frame.get("params") or {}).get("_meta") or {}
        for key in meta:
            assert META_KEY.match(key), key
            reserved = "/" in key and key.split("/")[0].split(".")[1:2] in (
                ["modelcontextprotocol"],
                ["mcp"],
            )
            assert not reserved or key in SPEC_KEYS, key


# -- stdio, legacy ----------------------------------------------------------------------------


# C-STDIO-1 C-STDIO-2 C-STDIO-3 C-LC-4 C-LC-8 C-LC-9 C-MSG-1 C-MSG-2 C-MSG-3
# C-MSG-5 C-MSG-6 C-MSG-7 C-MSG-12 C-MSG-13
async def test_stdio_legacy_wire_is_one_valid_frame_per_line(
    fake: Any, sent_frames: FrameLog
) -> None:
    """Everything mcpx writes to a legacy server's stdin, byte for byte."""
    up = fake("legacy", "2025-11-25")
    recorder = Recorder()
    text = 'two\nlines, "quoted", naïve ✓ 世界'
    async with connected(up.server, recorder, sent_frames, handler=Roots()) as session:
        assert session.revision == "2025-11-25"
        await session.list_tools()
        got = await session.call_tool("echo", {"text": text})
        assert got["content"][0]["text"] == text
        # The server asks (ping "p-1", roots/list 9) and notifies during this call.
        assert (await session.call_tool("echo", {"text": "ask"}))["content"][0]["text"] == "ask"
        for n in range(20):
            await session.call_tool("echo", {"text": str(n)})
    lines = up.raw_lines()
    # One line per frame mcpx sent, each a JSON-RPC object: nothing else on stdin.
    assert len(lines) == len(recorder.sent)
    frames = []
    for line in lines:
        decoded = line.decode("utf-8")  # raises if not UTF-8
        assert "\n" not in decoded and "\r" not in decoded
        frame = json.loads(decoded)
        assert isinstance(frame, dict)  # never a batch (initialize included)
        assert frame["jsonrpc"] == "2.0"
        frames.append(frame)
    assert [json.loads(raw) for raw in lines] == [f for f, _ in recorder.sent]
    assert any(f.get("params", {}).get("arguments", {}).get("text") == text for f in frames)
    # The handshake: initialize offers a revision mcpx speaks; nothing but discover and
    # initialize (or ping) went out before the server answered initialize.
    init = next(f for f in frames if f.get("method") == "initialize")
    assert init["params"]["protocolVersion"] in spec.LEGACY
    raw = up.log.read_bytes().split(b"\n")
    before = [json.loads(x) for x in raw[: raw.index(b"#answered initialize")] if x]
    assert {f["method"] for f in before} <= {"server/discover", "initialize", "ping"}
    # Requests: ids are strings or integers, never reused.
    requests = [f for f in frames if "method" in f and "id" in f]
    ids = [f["id"] for f in requests]
    assert all(isinstance(i, (int, str)) and not isinstance(i, bool) for i in ids)
    assert len(ids) == len(set(ids))
    # Notifications carry no id.
    notes = [f for f in frames if f.get("method", "").startswith("notifications/")]
    assert notes and all("id" not in f for f in notes)
    # Responses: exactly the server's two requests were answered, same ids, one of
    # result/error each; the server's notification got no response.
    responses = [f for f in frames if "method" not in f]
    assert sorted(str(f["id"]) for f in responses) == ["9", "p-1"]
    for f in responses:
        assert ("result" in f) != ("error" in f)
    assert next(f for f in responses if f["id"] == 9)["result"]["roots"][0]["uri"] == (
        "file:///tmp/root"
    )
    _meta_keys_ok(frames)


# C-LC-6 C-LC-12
async def test_an_unsupported_initialize_version_disconnects(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("badversion")
    with pytest.raises(HandshakeFailed, match="1999-01-01"):
        async with connected(up.server, Recorder(), sent_frames):
            pytest.fail("must not connect")
    assert "initialize" in up.methods()
    assert "notifications/initialized" not in up.methods()
    assert up.methods()[-1] == "initialize"  # nothing after: the connection is gone


# C-LC-25 C-LC-12
@pytest.mark.parametrize("mode", ["disc-32601", "disc-32602", "disc-silent"])
async def test_any_other_probe_outcome_falls_back_to_initialize(
    fake: Any, mode: str, sent_frames: FrameLog
) -> None:
    up = fake(mode)
    config = settings(upstream__probeTimeout="0.3s")
    async with connected(up.server, Recorder(), sent_frames, config=config) as session:
        assert session.negotiated is not None
        assert session.negotiated.era is spec.Era.LEGACY
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "x"
    methods = up.methods()
    assert methods[:2] == ["server/discover", "initialize"]
    assert methods.count("server/discover") == 1


# C-MSG-8 C-HTTP-4 (2025-03-26: a batch from the server, request answered)
async def test_a_batch_from_a_2025_03_26_server_is_handled(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("legacy", "2025-03-26")
    recorder = Recorder()
    async with connected(up.server, recorder, sent_frames) as session:
        assert session.revision == "2025-03-26"
        got = await session.call_tool("echo", {"text": "batch"}, timeout=30)
        assert got["content"][0]["text"] == "batch"
    answers = [f for f in up.frames() if f.get("id") == "b-1" and "method" not in f]
    assert len(answers) == 1 and answers[0]["result"] == {}
    assert ("notifications/tools/list_changed", {}) in recorder.notifications


# C-LC-27
async def test_modern_only_client_probes_first_and_fails_clearly(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("legacy")
    config = settings(upstream__protocol="force-discover")
    with pytest.raises(wire.McpError) as info:
        async with connected(up.server, Recorder(), sent_frames, config=config):
            pytest.fail("a legacy server must not pass as modern")
    assert "server/discover" in str(info.value) or info.value.code == -32601
    assert up.methods() == ["server/discover"]  # no initialize, and no tool call


# -- stdio, modern ----------------------------------------------------------------------------


# C-LC-14 C-LC-15 C-LC-18 C-LC-20 C-MSG-2 C-MSG-11 C-MSG-12 C-MSG-13
async def test_modern_requests_restate_version_and_client_info(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        assert session.revision == "2026-07-28"
        await session.list_tools()
        await session.call_tool("echo", {"text": "m"})
        # An MCP-reserved _meta key the client does not know is handed back untouched.
        odd = await session.call_tool("reserved-meta", {})
        assert odd["_meta"][META + "x"] == {"not": "for the client"}
        assert await session.call_tool("echo", {"text": "still fine"})
    frames = up.frames()
    assert "initialize" not in up.methods()
    assert "notifications/initialized" not in up.methods()
    requests = [f for f in frames if "method" in f and "id" in f]
    assert len(requests) >= 5
    for f in requests:
        meta = f["params"]["_meta"]
        assert meta[META + "protocolVersion"] == "2026-07-28"  # from supportedVersions
        info = meta[META + "clientInfo"]
        assert isinstance(info["name"], str) and isinstance(info["version"], str)
        caps = meta[META + "clientCapabilities"]
        for key in caps.get("extensions") or {}:
            assert "/" in key and META_KEY.match(key), key
        assert isinstance(f["id"], (int, str)) and not isinstance(f["id"], bool)
    _meta_keys_ok(frames)


# C-LC-16 C-LC-24
async def test_a_modern_error_on_the_probe_is_retried_modern(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern-32022")
    async with connected(up.server, Recorder(), sent_frames) as session:
        assert session.negotiated is not None
        assert (session.negotiated.era, session.revision) == (spec.Era.MODERN, "2026-07-28")
    discovers = [f for f in up.frames() if f.get("method") == "server/discover"]
    assert len(discovers) == 2
    assert discovers[0]["id"] != discovers[1]["id"]
    assert discovers[1]["params"]["_meta"][META + "protocolVersion"] == "2026-07-28"
    assert "initialize" not in up.methods()


# C-LC-16 (no mutual version: a clear error)
async def test_no_mutual_version_is_a_clear_error(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern-nomutual")
    with pytest.raises(HandshakeFailed, match="2099-01-01"):
        async with connected(up.server, Recorder(), sent_frames):
            pytest.fail("nothing in common")
    assert "initialize" not in up.methods()


# C-LC-19
async def test_server_info_changes_nothing(fake: Any, sent_frames: FrameLog) -> None:
    seen = []
    for name in ("trusted-admin-server", "x"):
        up = fake("modern", name)
        async with connected(up.server, Recorder(), sent_frames) as session:
            assert session.negotiated is not None
            assert session.negotiated.server_info["name"] == name
            await session.list_tools()
            await session.call_tool("echo", {"text": "a"})
        seen.append([(f.get("method"), f.get("params")) for f in up.frames()])
    assert seen[0] == seen[1]


# C-STDIO-8
async def test_a_request_from_a_modern_server_is_never_answered(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        await session.call_tool("stray", {})
        await session.call_tool("echo", {"text": "after"})
    assert not [f for f in up.frames() if f.get("id") == "stray-1"]
    assert not [f for f in up.frames() if "result" in f or "error" in f]


# C-STDIO-9
async def test_listen_notifications_are_routed_by_subscription_id(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:  # noqa: SIM117
        async with (
            session.listen({"toolsListChanged": True}, reopen=False) as tools,
            session.listen({"promptsListChanged": True}, reopen=False) as prompts,
        ):
            with anyio.fail_after(20):
                got_tools = [await tools.receive() for _ in range(3)]
                got_prompts = [await prompts.receive() for _ in range(3)]
    assert [m["method"] for m in got_tools] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/tools/list_changed",
    ]
    assert [m["method"] for m in got_prompts] == [
        "notifications/subscriptions/acknowledged",
        "notifications/prompts/list_changed",
        "notifications/prompts/list_changed",
    ]
    listens = [f for f in up.frames() if f.get("method") == "subscriptions/listen"]
    assert len(listens) == 2


# C-SUB-9
async def test_request_scoped_notifications_on_a_listen_stream_are_credited_to_nothing(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern-listen-noise")
    recorder = Recorder()
    async with (
        connected(up.server, recorder, sent_frames) as session,
        session.listen({"toolsListChanged": True}, reopen=False) as stream,
    ):
        with anyio.fail_after(20):
            got = [await stream.receive() for _ in range(2)]
    assert [m["method"] for m in got] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]
    scoped = ("notifications/progress", "notifications/message")
    assert [m for m, _ in recorder.notifications if m in scoped] == []


# C-MSG-4
async def test_concurrent_requests_never_share_an_id(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        results: list[str] = []

        async def one(n: int) -> None:
            got = await session.call_tool("echo", {"text": str(n)}, timeout=60)
            results.append(got["content"][0]["text"])

        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(one, n)
    assert sorted(results, key=int) == [str(n) for n in range(100)]
    ids = [f["id"] for f in up.frames() if f.get("method") == "tools/call"]
    assert len(ids) == 100 and len(set(ids)) == 100


# C-ERR-2 C-ERR-8
async def test_server_errors_are_surfaced_not_interpreted(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern")
    async with connected(up.server, Recorder(), sent_frames) as session:
        with pytest.raises(wire.McpError) as opaque:
            await session.call_tool("opaque", {})
        assert opaque.value.code == -32001 and type(opaque.value) is wire.McpError
        with pytest.raises(wire.McpError) as needs:
            await session.call_tool("needs-elicitation", {})
        assert needs.value.code == -32021
        # Neither broke the session nor changed its version.
        assert session.revision == "2026-07-28"
        assert (await session.call_tool("echo", {"text": "ok"}))["content"][0]["text"] == "ok"
    calls = [f["params"]["name"] for f in up.frames() if f.get("method") == "tools/call"]
    assert calls.count("needs-elicitation") == 1  # no blind retry
    assert calls.count("opaque") == 1


# C-MSG-10 C-MSG-9
async def test_an_unrecognized_result_type_is_an_invalid_response(
    fake: Any, sent_frames: FrameLog
) -> None:
    up = fake("modern-results")
    async with connected(up.server, Recorder(), sent_frames) as session:
        # mcpx declares no extension, so "task" is as unknown as "foo"; relaying an
        # input_required result to the host does not make them acceptable either.
        for kind in ("task", "foo", "", None, 7):
            with pytest.raises(UpstreamError) as caught:
                await session.call_tool("result-type", {"kind": kind})
            assert type(caught.value) is UpstreamError
            message = str(caught.value)
            assert session.name in message and "tools/call" in message and repr(kind) in message
        with pytest.raises(UpstreamError, match="'task'"):
            params = {"name": "result-type", "arguments": {"kind": "task"}}
            await session.request("tools/call", params, relay_input=True)
        # Absent is complete; the session is still fine after the invalid answers.
        assert (await session.call_tool("result-type", {}))["content"] == []
        done = await session.call_tool("result-type", {"kind": "complete"})
        assert done["resultType"] == "complete"
    calls = [f for f in up.frames() if f.get("method") == "tools/call"]
    assert len(calls) == 8  # each answered once: an invalid response is not retried


# C-PAGE-4 C-PAGE-2
async def test_an_empty_next_cursor_is_a_cursor(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern-empty-cursor")
    recorder = Recorder()
    async with connected(up.server, recorder, sent_frames) as session:
        tools = await session.list_tools()
    assert [t["name"] for t in tools] == ["echo", "second"]
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert [p.get("cursor", "absent") for p in lists] == ["absent", ""]


# C-PAGE-4 (the bound on a listing that never ends, since no cursor value may end it)
async def test_a_listing_that_never_ends_is_stopped_by_its_page_count(
    fake: Any, sent_frames: FrameLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pages, "MAX_PAGES", 25)
    up = fake("modern-endless")
    async with connected(up.server, Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamError, match="fake-modern-endless returned more than 25 pages"):
            await session.list_tools()
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert len(lists) == 25  # the repeated "" was followed each time, then no more
    assert [p.get("cursor") for p in lists[1:]] == [""] * 24


# C-CACHE-14
@pytest.mark.parametrize(
    ("mode", "sent"),
    [
        ("modern-expiring", [None, "c1", None, "c2"]),
        ("modern-expiring-always", [None, "c1", None, "c2"]),
        ("modern-refuse-first", [None]),
    ],
)
async def test_a_refused_cursor_restarts_the_listing_once(
    fake: Any, mode: str, sent: list[str | None], sent_frames: FrameLog
) -> None:
    up = fake(mode)
    async with connected(up.server, Recorder(), sent_frames) as session:
        if mode == "modern-expiring":
            # One pass from the first page: nothing kept from the pass the refusal ended.
            assert [t["name"] for t in await session.list_tools()] == ["echo", "second"]
        else:
            # A second refusal (or one with no cursor to blame) fails as it is.
            with pytest.raises(wire.InvalidParams):
                await session.list_tools()
    lists = [f["params"] for f in up.frames() if f.get("method") == "tools/list"]
    assert [p.get("cursor") for p in lists] == sent


# -- stdio shutdown -----------------------------------------------------------------------------

STUBBORN = r"""
import signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
signal.signal(signal.SIGTERM, lambda *_: log.write("sigterm\n"))
print('{"jsonrpc": "2.0", "method": "ready"}', flush=True)
while sys.stdin.readline():
    pass
log.write("eof\n")
while True:
    time.sleep(0.05)
"""


# C-STDIO-7
async def test_shutdown_closes_stdin_then_terms_then_kills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_stdio, "_STDIN_GRACE", 0.5)
    monkeypatch.setattr(_stdio, "_TERM_GRACE", 0.5)
    script, log = tmp_path / "stubborn.py", tmp_path / "stubborn.log"
    script.write_text(STUBBORN)
    async with open_stdio(sys.executable, ["-u", str(script), str(log)], on_stderr=print) as t:
        with anyio.fail_after(20):
            assert await t.receive() == {"jsonrpc": "2.0", "method": "ready"}
    assert t.returncode == -9  # SIGKILL, last
    assert log.read_text().split() == ["eof", "sigterm"]  # stdin closed first, then SIGTERM


# -- the recording HTTP fake --------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    headers: dict[str, str]
    body: bytes

    def frame(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpFake:
    port: int
    mode: str = "legacy"
    discover: str = "empty400"  # legacy: what a modern probe gets
    seen: list[Seen] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    probes: int = 0
    # The x-mcp-header name of echo's "region": the one tools/list shows, and the one
    # tools/call checks (mode "modern-headers" only).
    listed: str = "Region"
    checked: str = "Region"
    # How many "flaky" tool calls still get a response stream cut short, and how:
    # "end" (the stream ends) or "break" (the connection drops mid-body).
    cuts: int = 0
    cut: str = "end"
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def reset(self, mode: str, discover: str = "empty400") -> None:
        with self.lock:
            self.mode, self.discover = mode, discover
            self.seen.clear()
            self.events.clear()
            self.sessions.clear()
            self.probes = 0
            self.listed = self.checked = "Region"
            self.cuts, self.cut = 0, "end"

    def of(self, verb: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == verb]


LEGACY_INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "http-fake", "version": "1"},
}
TOOLS = [
    {
        "name": "echo",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "region": {"type": "string", "x-mcp-header": "Region"},
            },
        },
    },
    {
        "name": "broken-annotation",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
        },
    },
    {"name": "slow", "inputSchema": {"type": "object"}},
]


def _json(body: Any, status: int = 200, **headers: str) -> Response:
    # Header names lower-case on purpose (C-HTTP-35).
    return Response(
        json.dumps(body).encode(),
        status_code=status,
        headers={"content-type": "application/json", **headers},
    )


def _modern(rid: Any, value: dict[str, Any]) -> dict[str, Any]:
    info = {META + "serverInfo": {"name": "http-fake", "version": "1"}}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"resultType": "complete", **value, "_meta": info},
    }


def build(fake: HttpFake) -> Starlette:  # noqa: C901 - one closure per route
    async def post(request: Request) -> Response:
        body = await request.body()
        with fake.lock:
            fake.seen.append(Seen("POST", {k.lower(): v for k, v in request.headers.items()}, body))
        frame = json.loads(body)
        if "method" not in frame or "id" not in frame:
            return Response(status_code=202)
        rid, method = frame["id"], frame["method"]
        params = frame.get("params") or {}
        if method == "tools/call" and params.get("name") == "flaky" and fake.cuts:
            with fake.lock:
                fake.cuts -= 1
            return StreamingResponse(cut_short(), media_type="text/event-stream")
        if fake.mode == "legacy":
            return legacy(request, rid, method)
        if method == "tools/call" and fake.mode == "modern-headers":
            mismatch = param_mismatch(request, rid, params)
            if mismatch is not None:
                return mismatch
        return modern(rid, method, params)

    async def cut_short() -> AsyncIterator[bytes]:
        note = {"jsonrpc": "2.0", "method": "notifications/message"}
        note["params"] = {"level": "info", "data": "working"}
        yield f"event: message\ndata: {json.dumps(note)}\n\n".encode()
        if fake.cut == "break":
            raise ConnectionAbortedError("the fake drops the connection mid-body")

    def param_mismatch(request: Request, rid: Any, params: dict[str, Any]) -> Response | None:
        region = (params.get("arguments") or {}).get("region")
        if request.headers.get(f"mcp-param-{fake.checked}") == region:
            return None
        error = {"code": -32020, "message": f"Header mismatch: Mcp-Param-{fake.checked}"}
        return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)

    def legacy(request: Request, rid: Any, method: str) -> Response:
        if method == "server/discover":
            if fake.discover == "empty400":
                return Response(status_code=400)
            if fake.discover == "legacy-32602":
                error = {"code": -32602, "message": "Unsupported protocol version"}
                return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)
            error = {"code": -32601, "message": "Method not found"}
            return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 404)
        if method == "initialize":
            sid = f"sid-{len(fake.sessions)}-secret"
            fake.sessions.add(sid)
            return _json(
                {"jsonrpc": "2.0", "id": rid, "result": LEGACY_INIT}, **{"mcp-session-id": sid}
            )
        if request.headers.get("mcp-session-id") not in fake.sessions:
            return Response(b"unknown session", status_code=404)
        if request.headers.get("mcp-protocol-version") != "2025-06-18":
            return Response(b"bad version header", status_code=400)
        if method == "tools/list":
            return _json({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:1]}})
        result = {"content": [{"type": "text", "text": "ok"}]}
        return _json({"jsonrpc": "2.0", "id": rid, "result": result})

    def modern(rid: Any, method: str, params: dict[str, Any]) -> Response:
        if method == "server/discover":
            fake.probes += 1
            if fake.discover == "32022-first" and fake.probes == 1:
                data = {"supported": ["2026-07-28"], "requested": "2026-07-28"}
                error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
                return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)
            value = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "ttlMs": 0,
                "cacheScope": "public",
            }
            return _json(_modern(rid, value))
        if method == "initialize":
            error = {"code": -32601, "message": "Method not found"}
            return _json({"jsonrpc": "2.0", "id": rid, "error": error}, 404)
        if method == "tools/list":
            tools = json.loads(json.dumps(TOOLS))
            tools[0]["inputSchema"]["properties"]["region"]["x-mcp-header"] = fake.listed
            return _json(_modern(rid, {"tools": tools, "ttlMs": 0, "cacheScope": "public"}))
        if method == "tools/call" and params.get("name") == "slow":
            return StreamingResponse(hang(rid), media_type="text/event-stream")
        if method == "resources/read":
            uri = params["uri"]
            return _json(_modern(rid, {"contents": [{"uri": uri, "text": "t"}]}))
        if method == "prompts/get":
            return _json(_modern(rid, {"messages": []}))
        return _json(_modern(rid, {"content": [{"type": "text", "text": "ok"}]}))

    async def hang(rid: Any) -> AsyncIterator[bytes]:
        yield b": still working\n\n"
        try:
            await anyio.sleep_forever()
        finally:
            with fake.lock:
                fake.events.append(f"closed:{rid}")

    async def get(request: Request) -> Response:
        with fake.lock:
            fake.seen.append(Seen("GET", {k.lower(): v for k, v in request.headers.items()}, b""))
        if fake.mode != "legacy":
            return Response(status_code=405)

        async def stream() -> AsyncIterator[bytes]:
            ping = {"jsonrpc": "2.0", "id": "g-ping", "method": "ping"}
            yield f"event: message\ndata: {json.dumps(ping)}\n\n".encode()
            await anyio.sleep_forever()

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def delete(request: Request) -> Response:
        with fake.lock:
            fake.seen.append(
                Seen("DELETE", {k.lower(): v for k, v in request.headers.items()}, b"")
            )
        return Response(status_code=405)

    return Starlette(
        routes=[
            Route("/mcp", post, methods=["POST"]),
            Route("/mcp", get, methods=["GET"]),
            Route("/mcp", delete, methods=["DELETE"]),
        ]
    )


@contextmanager
def serve_fake() -> Iterator[HttpFake]:
    sock = loopback_socket()
    fake = HttpFake(port=sock.getsockname()[1])
    with running_app(build(fake), sock):
        yield fake


@pytest.fixture(scope="module")
def http_fake() -> Iterator[HttpFake]:
    with serve_fake() as running:
        yield running


async def _until(check: Any, limit: float = 20) -> None:
    """Wait (bounded) for a fact the server thread records; it has no event to await."""
    with anyio.fail_after(limit):
        while not check():  # noqa: ASYNC110 - state set by another thread
            await anyio.sleep(0.02)


def _accepts_both(headers: dict[str, str]) -> bool:
    accepted = {a.strip().split(";")[0] for a in headers["accept"].split(",")}
    return {"application/json", "text/event-stream"} <= accepted


# -- HTTP, legacy ----------------------------------------------------------------------------


# C-HTTP-1 C-HTTP-2 C-HTTP-5 C-HTTP-7 C-HTTP-8 C-HTTP-9 C-HTTP-10 C-HTTP-12
# C-HTTP-14 C-HTTP-16 C-LC-28 C-LC-29
@pytest.mark.parametrize("discover", ["empty400", "legacy-32602", "404-32601"])
async def test_legacy_http_session_headers_and_streams(
    http_fake: HttpFake, discover: str, sent_frames: FrameLog, caplog: pytest.LogCaptureFixture
) -> None:
    http_fake.reset("legacy", discover)
    caplog.set_level(logging.DEBUG)
    recorder = Recorder()
    server = http_server("legacy-http", http_fake.url)
    async with connected(server, recorder, sent_frames) as session:
        # The probe went modern first; its 4xx without a modern error body meant legacy.
        assert session.negotiated is not None and session.negotiated.era is spec.Era.LEGACY
        assert session.revision == "2025-06-18"
        await session.list_tools()
        await session.call_tool("echo", {"text": "x"})
        # The server's ping on the GET stream is answered by a POST.
        await _until(lambda: any(s.body and b"g-ping" in s.body for s in http_fake.of("POST")))
    await _until(lambda: bool(http_fake.of("DELETE")))
    posts = http_fake.of("POST")
    # One POST per frame mcpx sent, each a single JSON object.
    assert [p.frame() for p in posts] == [f for f, _ in recorder.sent]
    assert all(isinstance(p.frame(), dict) for p in posts)
    assert all(_accepts_both(p.headers) for p in posts)
    probe = posts[0]
    assert probe.frame()["method"] == "server/discover"
    assert probe.headers["mcp-protocol-version"] == "2026-07-28"
    assert META + "protocolVersion" in probe.frame()["params"]["_meta"]
    assert posts[1].frame()["method"] == "initialize"
    [sid] = http_fake.sessions
    later = posts[2:]
    assert later and all(p.headers.get("mcp-session-id") == sid for p in later)
    assert all(p.headers.get("mcp-protocol-version") == "2025-06-18" for p in later)
    answer = next(p.frame() for p in later if p.frame().get("id") == "g-ping")
    assert answer["result"] == {}
    [get] = http_fake.of("GET")
    assert get.headers["accept"].startswith("text/event-stream")
    assert get.headers["mcp-session-id"] == sid
    assert get.headers["mcp-protocol-version"] == "2025-06-18"
    [delete] = http_fake.of("DELETE")  # answered 405: accepted quietly
    assert delete.headers["mcp-session-id"] == sid
    assert delete.headers["mcp-protocol-version"] == "2025-06-18"
    # mcpx's own log never carries it (httpx/httpcore debug logs are not mcpx's).
    mine = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert not any(sid in r.getMessage() for r in mine)
    assert not any(sid in json.dumps(data) for _, data in recorder.events)


# -- HTTP, modern ----------------------------------------------------------------------------


def _b64(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


# C-HTTP-1 C-HTTP-2 C-HTTP-6 C-HTTP-21 C-HTTP-24 C-HTTP-25 C-HTTP-27 C-HTTP-28
# C-HTTP-29 C-HTTP-30 C-HTTP-32 C-HTTP-35 C-LC-28 C-LC-30
async def test_modern_http_request_headers(
    http_fake: HttpFake, sent_frames: FrameLog, caplog: pytest.LogCaptureFixture
) -> None:
    http_fake.reset("modern")
    caplog.set_level(logging.WARNING, logger="mcpx.client")
    recorder = Recorder()
    server = http_server("modern-http", http_fake.url)
    regions = {
        "eu-west": "eu-west",
        "Hello, 世界": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        " padded ": "=?base64?IHBhZGRlZCA=?=",
        "a\nb": _b64("a\nb"),
        "=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
    }
    async with connected(server, recorder, sent_frames) as session:
        assert session.revision == "2026-07-28"
        tools = {t["name"] for t in await session.list_tools()}
        assert tools == {"echo", "slow"}  # the invalid annotation dropped its tool
        for region in regions:
            await session.call_tool("echo", {"text": "x", "region": region})
        await session.call_tool("echo", {"text": "no region"})
        await session.call_tool("echo", {"text": "null region", "region": None})
        await session.read_resource("file:///docs/naïve.txt")
        await session.read_resource("file:///docs/plain.txt")
        await session.get_prompt("greet")
    posts = http_fake.of("POST")
    assert [p.frame() for p in posts] == [f for f, _ in recorder.sent]
    assert http_fake.probes == 1  # the era was learnt once for the origin
    assert not http_fake.of("GET")
    for p in posts:
        frame = p.frame()
        assert isinstance(frame, dict) and "method" in frame  # never a response
        assert _accepts_both(p.headers)
        assert p.headers["mcp-protocol-version"] == "2026-07-28"
        assert p.headers["mcp-method"] == frame["method"]
        params = frame.get("params") or {}
        if frame["method"] in ("tools/call", "prompts/get"):
            assert p.headers["mcp-name"] == params["name"]
        if frame["method"] == "resources/read":
            uri = params["uri"]
            expected = uri if uri.isascii() else _b64(uri)
            assert p.headers["mcp-name"] == expected
    calls = [p for p in posts if p.frame()["method"] == "tools/call"]
    sent_regions = [p.headers.get("mcp-param-region") for p in calls]
    assert sent_regions == [*regions.values(), None, None]
    assert next(p for p in posts if p.frame()["method"] == "resources/read").headers[
        "mcp-name"
    ] == _b64("file:///docs/naïve.txt")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("broken-annotation" in w and "N" in w for w in warned), warned


# C-HTTP-38
async def test_modern_http_cancel_closes_the_stream(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamTimeout):
            await session.call_tool("slow", {}, timeout=1)
        await _until(lambda: any(e.startswith("closed:") for e in http_fake.events))
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "ok"
    methods = [p.frame().get("method") for p in http_fake.of("POST")]
    assert "notifications/cancelled" not in methods


# C-HTTP-34
async def test_a_header_mismatch_lists_the_tools_again_and_retries_once(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern-headers")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        await session.list_tools()
        assert await session.call_tool("echo", {"text": "a", "region": "eu"})
        # The server renames the header: mcpx's Mcp-Param-Region no longer matches.
        with http_fake.lock:
            http_fake.listed = http_fake.checked = "Zone"
        got = await session.call_tool("echo", {"text": "b", "region": "us"})
        assert got["content"][0]["text"] == "ok"
        # A server whose listing never matches what it checks: one refresh, one retry.
        with http_fake.lock:
            http_fake.checked = "Area"
        with pytest.raises(wire.HeaderMismatch, match="Mcp-Param-Area"):
            await session.call_tool("echo", {"text": "c", "region": "ap"})
    posts = [p for p in http_fake.of("POST") if p.frame()["method"] != "server/discover"]
    assert [p.frame()["method"] for p in posts] == [
        "tools/list",
        "tools/call",
        "tools/call",  # Region: us -> 400 -32020
        "tools/list",
        "tools/call",  # Zone: us -> ok
        "tools/call",  # Zone: ap -> 400 -32020
        "tools/list",
        "tools/call",  # Zone: ap -> 400 -32020 again: raised
    ]
    calls = [p for p in posts if p.frame()["method"] == "tools/call"]
    params = [(p.headers.get("mcp-param-region"), p.headers.get("mcp-param-zone")) for p in calls]
    assert params == [("eu", None), ("us", None), (None, "us"), (None, "ap"), (None, "ap")]
    # Each retry is the same call as a new request.
    assert calls[1].frame()["params"] == calls[2].frame()["params"]
    assert calls[3].frame()["params"] == calls[4].frame()["params"]
    ids = [p.frame()["id"] for p in posts]
    assert len(ids) == len(set(ids))


# C-HTTP-36 C-HTTP-38
@pytest.mark.parametrize(("cut", "why"), [("end", "ended"), ("break", "broke")])
async def test_a_broken_response_stream_is_sent_again_once_as_a_new_request(
    http_fake: HttpFake, cut: str, why: str, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with http_fake.lock:
            http_fake.cuts, http_fake.cut = 1, cut
        got = await session.call_tool("flaky", {"n": 1})
        assert got["content"][0]["text"] == "ok"
        with http_fake.lock:
            http_fake.cuts = 2
        with pytest.raises(UpstreamError, match=f"stream {why} before the response"):
            await session.call_tool("flaky", {"n": 2})
        # A request that timed out (its stream closed by mcpx) is not sent again.
        with pytest.raises(UpstreamTimeout):
            await session.call_tool("slow", {}, timeout=1)
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "ok"
    calls = [p for p in http_fake.of("POST") if p.frame()["method"] == "tools/call"]
    assert [p.frame()["params"]["name"] for p in calls] == [
        *["flaky"] * 4,  # cut then answered; cut, cut again and failed
        "slow",
        "echo",
    ]
    assert calls[0].frame()["params"] == calls[1].frame()["params"]
    assert calls[2].frame()["params"] == calls[3].frame()["params"]
    ids = [p.frame()["id"] for p in calls]
    assert len(ids) == len(set(ids))
    # No resumption in 2026-07-28: no Last-Event-ID, no GET.
    assert not any("last-event-id" in p.headers for p in http_fake.of("POST"))
    assert not http_fake.of("GET")


# C-HTTP-36 (2026-07-28 only: a legacy session's lost request is not sent again)
async def test_a_legacy_broken_response_stream_fails_the_request(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("legacy")
    server = http_server("legacy-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        with http_fake.lock:
            http_fake.cuts = 2
        with pytest.raises(UpstreamError, match="stream ended before the response"):
            await session.call_tool("flaky", {})
    calls = [p for p in http_fake.of("POST") if p.frame().get("method") == "tools/call"]
    assert len(calls) == 1


# C-LC-29 (a 400 with a modern error body: modern, retried)
async def test_a_400_with_a_modern_error_is_modern(
    http_fake: HttpFake, sent_frames: FrameLog
) -> None:
    http_fake.reset("modern", "32022-first")
    server = http_server("modern-http", http_fake.url)
    async with connected(server, Recorder(), sent_frames) as session:
        assert session.negotiated is not None and session.negotiated.era is spec.Era.MODERN
    methods = [p.frame().get("method") for p in http_fake.of("POST")]
    assert methods == ["server/discover", "server/discover"]
    ids = [p.frame()["id"] for p in http_fake.of("POST")]
    assert ids[0] != ids[1]


# C-LC-20 C-LC-21 (not offered: mcpx declares no extension upstream, so it never uses one)
def test_the_daemons_upstream_declaration_has_no_extensions(tmp_path: Path) -> None:
    handler = NativeFirst(Broker(tmp_path / "questions.json"), None, lambda: None)  # type: ignore[arg-type]
    for revision in spec.REVISIONS:
        caps = handler.capabilities(revision)
        assert "extensions" not in caps and "tasks" not in caps, (revision, caps)
        assert set(caps) <= {"elicitation", "sampling", "roots"}
