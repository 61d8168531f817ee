"""Client obligations over stdio, connection lifecycle (C-LC, C-STDIO, C-MSG): the
handshake with legacy and modern servers, the wire framing of what mcpx writes to a
server's stdin, shutting a server down, and what mcpx declares upstream.

Proven against the recording stdio fake (a real process that logs every raw line mcpx
writes to its stdin); the ``fake`` fixture and the fake itself are in conftest.py, next to
this file. Every frame mcpx sends is also validated strictly against its revision (the
``sent_frames`` fixture, in tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx import spec, wire
from mcpx.client import HandshakeFailed, QuestionOrigin
from mcpx.questions import QuestionRouter
from mcpx.questions._broker import Broker
from mcpx.transport import _stdio, open_stdio
from obligations.client_transport.helpers import META
from support.schemas import FrameLog
from support.upstream import Recorder, connected, settings

pytestmark = pytest.mark.anyio

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


class Roots:
    """A host that answers roots/list and nothing else."""

    def capabilities(self, revision: str) -> dict[str, Any]:
        return {"roots": {}}

    async def answer(
        self, method: str, params: dict[str, Any], asked: QuestionOrigin
    ) -> dict[str, Any]:
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


@pytest.mark.obligation(
    "C-STDIO-1",
    "C-STDIO-2",
    "C-STDIO-3",
    "C-LC-4",
    "C-LC-8",
    "C-LC-9",
    "C-MSG-1",
    "C-MSG-2",
    "C-MSG-3",
    "C-MSG-5",
    "C-MSG-6",
    "C-MSG-7",
    "C-MSG-12",
    "C-MSG-13",
)
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


@pytest.mark.obligation("C-LC-6", "C-LC-12")
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


@pytest.mark.obligation("C-LC-25", "C-LC-12")
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
@pytest.mark.obligation("C-MSG-8", "C-HTTP-4")
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


@pytest.mark.obligation("C-LC-27")
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


# -- stdio, modern: the handshake ---------------------------------------------------------


@pytest.mark.obligation(
    "C-LC-14", "C-LC-15", "C-LC-18", "C-LC-20", "C-MSG-2", "C-MSG-11", "C-MSG-12", "C-MSG-13"
)
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


@pytest.mark.obligation("C-LC-16", "C-LC-24")
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
@pytest.mark.obligation("C-LC-16")
async def test_no_mutual_version_is_a_clear_error(fake: Any, sent_frames: FrameLog) -> None:
    up = fake("modern-nomutual")
    with pytest.raises(HandshakeFailed, match="2099-01-01"):
        async with connected(up.server, Recorder(), sent_frames):
            pytest.fail("nothing in common")
    assert "initialize" not in up.methods()


@pytest.mark.obligation("C-LC-19")
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


@pytest.mark.obligation("C-STDIO-7")
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


# -- what the daemon declares upstream --------------------------------------------------------


# C-LC-20 C-LC-21 (not offered: mcpx declares no extension upstream, so it never uses one)
@pytest.mark.obligation("C-LC-20", "C-LC-21")
def test_the_daemons_upstream_declaration_has_no_extensions(tmp_path: Path) -> None:
    handler = QuestionRouter(Broker(tmp_path / "questions.json"), None, lambda: None)  # type: ignore[arg-type]
    for revision in spec.REVISIONS:
        caps = handler.capabilities(revision)
        assert "extensions" not in caps and "tasks" not in caps, (revision, caps)
        assert set(caps) <= {"elicitation", "sampling", "roots"}
