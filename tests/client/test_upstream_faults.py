"""Bad upstreams and the era probe's edges, against real misbehaving processes
(tests/fixtures/bad_server.py): every failure is a clear error within the
configured time, and the connection is marked broken, never left hanging."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcpx import wire
from mcpx.client import (
    EraCache,
    HandshakeFailed,
    UpstreamBroken,
    UpstreamError,
    UpstreamTimeout,
)
from mcpx.config import ServerConfig
from support.peers import bad_server_command, sdk_server_command
from support.schemas import FrameLog
from support.upstream import Recorder, connected, settings, stdio_server

pytestmark = pytest.mark.anyio


def bad(mode: str, delay: float | None = None) -> ServerConfig:
    return stdio_server(f"bad-{mode}", bad_server_command(mode, delay=delay))


async def test_exit_mid_call_fails_the_call_naming_status_and_stderr(sent_frames: FrameLog) -> None:
    async with connected(bad("exit"), Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamBroken) as info:
            await session.call_tool("echo", {"text": "x"})
        message = str(info.value)
        assert "bad-exit" in message and "status 3" in message and "boom" in message
        # Broken for good: the next call fails at once with the same reason.
        with pytest.raises(UpstreamBroken, match="status 3"):
            await session.call_tool("echo", {"text": "again"})


# C-STDIO-10 C-HTTP-17: cancel with notifications/cancelled.
@pytest.mark.obligation("C-STDIO-10", "C-HTTP-17", "C-LC-12", "C-CANC-10", "C-CANC-11")
async def test_hang_times_out_and_cancels_in_band(sent_frames: FrameLog) -> None:
    recorder = Recorder()
    async with connected(bad("hang"), recorder, sent_frames) as session:
        with pytest.raises(UpstreamTimeout, match=r"within 0\.5s"):
            await session.call_tool("echo", {"text": "x"}, timeout=0.5)
        # The connection is still usable: a hang is not a broken framing.
        assert await session.list_tools()
    cancels = [f for f, _ in recorder.sent if f.get("method") == "notifications/cancelled"]
    assert cancels and cancels[-1]["params"]["reason"].startswith("no answer within")


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("invalid-json", "JSON"),
        ("unknown-id", "99999"),
        ("oversize", "a line over"),
    ],
)
async def test_broken_framing_breaks_the_connection(
    mode: str, words: str, sent_frames: FrameLog
) -> None:
    async with connected(bad(mode), Recorder(), sent_frames) as session:
        with pytest.raises(UpstreamError) as info:
            await session.call_tool("echo", {"text": "x"}, timeout=30)
        assert words in str(info.value)
        assert not isinstance(info.value, UpstreamTimeout)
        with pytest.raises(UpstreamBroken):
            await session.list_tools()


@pytest.mark.obligation("C-STDIO-4", "C-STDIO-5")
async def test_stderr_flood_never_blocks(sent_frames: FrameLog) -> None:
    recorder = Recorder()
    async with connected(bad("stderr-flood"), recorder, sent_frames) as session:
        result = await session.call_tool("echo", {"text": "still here"}, timeout=60)
        assert result["content"][0]["text"] == "still here"
    assert recorder.stderr  # the flood reached the log, line by line


async def test_exit_at_start_is_a_clear_error(sent_frames: FrameLog) -> None:
    with pytest.raises(UpstreamError) as info:
        async with connected(bad("exit-at-start"), Recorder(), sent_frames):
            pass
    assert "status 1" in str(info.value)


# C-LC-26: the fallback is not keyed to one error code.
@pytest.mark.obligation("C-LC-26", "C-LC-25")
async def test_exit_on_discover_is_restarted_legacy_only(sent_frames: FrameLog) -> None:
    recorder = Recorder()
    async with connected(bad("exit-on-discover"), recorder, sent_frames) as session:
        assert session.negotiated is not None
        assert session.negotiated.era.value == "legacy"
        assert (await session.call_tool("echo", {"text": "x"}))["content"][0]["text"] == "x"
    methods = recorder.methods_sent()
    assert methods[0] == "server/discover"
    assert methods.count("server/discover") == 1  # the restart goes legacy-only


@pytest.mark.obligation("C-LC-22", "C-LC-26", "C-LC-25")
async def test_a_slow_modern_server_is_not_classed_legacy(sent_frames: FrameLog) -> None:
    """No discover answer within the probe timeout: initialize goes out beside it,
    and the discover that settles first still decides."""
    recorder = Recorder()
    config = settings(upstream__probeTimeout="0.3s")
    server = bad("slow-discover", delay=1.5)
    async with connected(server, recorder, sent_frames, config=config) as session:
        assert session.negotiated is not None
        assert session.negotiated.era.value == "modern"
    assert recorder.methods_sent()[:2] == ["server/discover", "initialize"]


async def test_modern_only_server(sent_frames: FrameLog) -> None:
    async with connected(bad("modern"), Recorder(), sent_frames) as session:
        assert session.revision == "2026-07-28"
        result = await session.call_tool("echo", {"text": "m"})
        assert result["resultType"] == "complete"


@pytest.mark.obligation("C-LC-31")
async def test_stale_cache_is_probed_again_and_rewritten(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server = stdio_server("legacy-sdk", sdk_server_command("1.23.3", "stdio"))
    EraCache(tmp_path / "upstream-eras.json").put(server, "modern", "2026-07-28", "stdio")
    recorder = Recorder()
    async with connected(server, recorder, sent_frames, cache_dir=tmp_path) as session:
        assert session.negotiated is not None
        assert (session.negotiated.era.value, session.negotiated.source) == ("legacy", "probe")
    assert [kind for kind, _ in recorder.events] == ["server.era.stale"]
    eras = json.loads((tmp_path / "upstream-eras.json").read_text())["eras"]
    assert [e["era"] for e in eras.values()] == ["legacy"]


@pytest.mark.parametrize(
    ("preference", "era"), [("force-initialize", "legacy"), ("force-discover", "modern")]
)
async def test_forced_preferences_skip_the_cache(
    tmp_path: Path, preference: str, era: str, sent_frames: FrameLog
) -> None:
    server = stdio_server("dual", sdk_server_command("2.3.0", "stdio"))
    recorder = Recorder()
    config = settings(upstream__protocol=preference)
    async with connected(
        server, recorder, sent_frames, config=config, cache_dir=tmp_path
    ) as session:
        assert session.negotiated is not None
        assert (session.negotiated.era.value, session.negotiated.source) == (era, "forced")
    assert not (tmp_path / "upstream-eras.json").exists()
    first = "initialize" if era == "legacy" else "server/discover"
    assert recorder.methods_sent()[0] == first


async def test_force_discover_on_a_legacy_server_fails_clearly(sent_frames: FrameLog) -> None:
    config = settings(upstream__protocol="force-discover")
    with pytest.raises((wire.McpError, HandshakeFailed, UpstreamError)):
        async with connected(bad("legacy"), Recorder(), sent_frames, config=config):
            pass


@pytest.mark.obligation("C-LC-4")
async def test_offer_follows_the_spec_policy(sent_frames: FrameLog) -> None:
    """initialize offers the first legacy revision of spec.precedence."""
    recorder = Recorder()
    config = settings(spec__first="2025-03-26", upstream__protocol="force-initialize")
    server = stdio_server("sdk", sdk_server_command("1.23.3", "stdio"))
    async with connected(server, recorder, sent_frames, config=config) as session:
        assert session.revision == "2025-03-26"
    init = next(f for f, _ in recorder.sent if f.get("method") == "initialize")
    assert init["params"]["protocolVersion"] == "2025-03-26"


async def test_a_listen_stream_the_server_ends_is_reopened(sent_frames: FrameLog) -> None:
    recorder = Recorder()
    async with connected(bad("modern"), recorder, sent_frames) as session:  # noqa: SIM117
        async with session.listen({"toolsListChanged": True}) as stream:
            first = await stream.receive()
            second = await stream.receive()
    for ack in (first, second):
        assert ack["method"] == "notifications/subscriptions/acknowledged"
    ids = [a["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] for a in (first, second)]
    assert ids[0] != ids[1]  # a new request each time
    assert recorder.methods_sent().count("subscriptions/listen") >= 2


async def test_no_reopen_when_asked_not_to(sent_frames: FrameLog) -> None:
    recorder = Recorder()
    async with connected(bad("modern"), recorder, sent_frames) as session:  # noqa: SIM117
        async with session.listen({"toolsListChanged": True}, reopen=False) as stream:
            first = await stream.receive()
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
    assert first["method"] == "notifications/subscriptions/acknowledged"
    assert recorder.methods_sent().count("subscriptions/listen") == 1
