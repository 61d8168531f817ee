"""What a start tells the trace of the call that waited for it (``Negotiated``): what
the era cache said (miss, hit, stale, off), when the era was settled, and each time the
opener began again another way. Against real processes (tests/fixtures/bad_server.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcpx.client import EraCache, Negotiated
from mcpx.config import ServerConfig
from support.peers import bad_server_command
from support.schemas import FrameLog
from support.upstream import Recorder, connected, stdio_server

pytestmark = pytest.mark.anyio


def bad(mode: str) -> ServerConfig:
    return stdio_server(f"bad-{mode}", bad_server_command(mode))


async def _opened(server: ServerConfig, log: FrameLog, cache_dir: Path | None) -> Negotiated:
    async with connected(server, Recorder(), log, cache_dir=cache_dir) as session:
        assert session.negotiated is not None
        return session.negotiated


async def test_the_cache_says_miss_then_hit_then_stale(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server = bad("legacy")
    began = time.time()
    first = await _opened(server, sent_frames, tmp_path)
    assert (first.source, first.cache, first.fallbacks) == ("probe", "miss", ())
    assert began <= first.settled_at <= time.time()
    again = await _opened(server, sent_frames, tmp_path)
    assert (again.source, again.cache, again.fallbacks) == ("cache", "hit", ())
    # The cache names an era the server does not speak: tried, refused, probed again.
    EraCache(tmp_path / "upstream-eras.json").put(server, "modern", "2026-07-28", "stdio")
    stale = await _opened(server, sent_frames, tmp_path)
    assert (stale.source, stale.cache, stale.era.value) == ("probe", "stale", "legacy")
    [(reason, at)] = stale.fallbacks
    assert reason == "era_cache_stale" and at <= stale.settled_at


async def test_a_restart_legacy_only_is_a_fallback(sent_frames: FrameLog) -> None:
    began = time.time()
    negotiated = await _opened(bad("exit-on-discover"), sent_frames, None)
    assert (negotiated.era.value, negotiated.cache) == ("legacy", "off")
    [(reason, at)] = negotiated.fallbacks
    assert reason == "exited_during_probe"
    assert began <= at <= negotiated.settled_at
