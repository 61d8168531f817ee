"""A request written ahead of its caller (``Connection.send_ahead``): the caller's own
``request`` for the same method and params takes it and only waits; any other request
is sent as ever; one nobody took is cancelled upstream. Against a scripted stdio
upstream that logs every line it reads (tests/fixtures/recording_fake.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.client import SENT_AHEAD, SentAhead, Session
from support.schemas import FrameLog
from support.upstream import Recorder, connected, stdio_server
from support.waiting import await_until

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "recording_fake.py"


def _read(log: Path) -> list[dict[str, Any]]:
    lines = log.read_bytes().split(b"\n") if log.exists() else []
    return [json.loads(line) for line in lines if line and not line.startswith(b"#")]


def _calls(log: Path) -> list[dict[str, Any]]:
    return [f for f in _read(log) if f.get("method") == "tools/call"]


def _echo(text: str) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}}


def _ahead(session: Session, text: str) -> SentAhead:
    ahead = session.conn.send_ahead("tools/call", _echo(text))
    assert ahead is not None
    return ahead


async def _request_with(session: Session, ahead: SentAhead, text: str) -> dict[str, Any]:
    """``echo`` of ``text`` requested as the task a request was sent ahead for does."""
    token = SENT_AHEAD.set(ahead)
    try:
        return await session.request("tools/call", _echo(text))
    finally:
        SENT_AHEAD.reset(token)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "read.log"


def _session(log: Path, sent_frames: FrameLog) -> Any:
    server = stdio_server("fake", [sys.executable, str(FAKE), str(log), "plain"])
    return connected(server, Recorder(), sent_frames)


@pytest.mark.anyio
async def test_the_callers_request_takes_what_was_sent_ahead(
    log: Path, sent_frames: FrameLog
) -> None:
    async with _session(log, sent_frames) as session:
        told: list[Any] = []
        ahead = _ahead(session, "one")
        ahead.on_answer(told.append)
        result = await _request_with(session, ahead, "one")
        assert result["content"] == [{"type": "text", "text": "one"}]
        assert ahead.taken
        assert told == [result]  # told as it arrived, the same result
        assert [c["id"] for c in _calls(log)] == [ahead.rid]  # sent once, under its id


@pytest.mark.anyio
async def test_another_request_is_sent_as_ever(log: Path, sent_frames: FrameLog) -> None:
    async with _session(log, sent_frames) as session:
        ahead = _ahead(session, "first")
        other = await _request_with(session, ahead, "second")
        assert other["content"] == [{"type": "text", "text": "second"}]
        assert not ahead.taken
        with anyio.fail_after(10):
            await ahead.withdraw("the caller went away")
        calls = _calls(log)
        assert [c["params"]["arguments"]["text"] for c in calls] == ["first", "second"]
        assert calls[0]["id"] == ahead.rid and calls[1]["id"] != ahead.rid
        assert session.conn.in_flight == 0


@pytest.mark.anyio
async def test_a_request_nobody_took_is_cancelled_upstream(
    log: Path, sent_frames: FrameLog
) -> None:
    async with _session(log, sent_frames) as session:
        ahead = _ahead(session, "hold")  # the upstream answers it only by a cancel
        with anyio.fail_after(10):
            await ahead.withdraw("the caller went away")

        def cancels() -> list[Any]:
            return [f["params"] for f in _read(log) if f.get("method") == "notifications/cancelled"]

        await await_until(cancels)
        assert cancels() == [{"requestId": ahead.rid, "reason": "the caller went away"}]
        # The connection goes on: the request withdrawn left nothing waiting.
        again = await session.request("tools/call", _echo("again"))
        assert again["content"] == [{"type": "text", "text": "again"}]
        assert session.conn.in_flight == 0


@pytest.mark.anyio
async def test_an_answered_request_nobody_took_is_not_cancelled(
    log: Path, sent_frames: FrameLog
) -> None:
    async with _session(log, sent_frames) as session:
        answered = anyio.Event()
        ahead = _ahead(session, "early")
        ahead.on_answer(lambda outcome: answered.set())
        with anyio.fail_after(10):
            await answered.wait()
            await ahead.withdraw("the caller went away")
        assert not [f for f in _read(log) if f.get("method") == "notifications/cancelled"]
        assert session.conn.in_flight == 0


@pytest.mark.anyio
async def test_a_line_over_pipe_buf_is_not_sent_ahead(log: Path, sent_frames: FrameLog) -> None:
    """Only a line the pipe takes whole or not at all is written ahead (nothing is ever
    written in part before the caller gets there)."""
    async with _session(log, sent_frames) as session:
        assert session.conn.send_ahead("tools/call", _echo("x" * 5000)) is None
        assert _calls(log) == []


def _modern_session(log: Path, sent_frames: FrameLog) -> Any:
    server = stdio_server("fake", [sys.executable, str(FAKE), str(log), "modern"])
    return connected(server, Recorder(), sent_frames)


async def _session_request(
    session: Session, ahead: SentAhead, text: str, level: str
) -> dict[str, Any]:
    token = SENT_AHEAD.set(ahead)
    try:
        return await session.request("tools/call", _echo(text), log_level=level)
    finally:
        SENT_AHEAD.reset(token)


@pytest.mark.anyio
async def test_a_modern_session_writes_its_first_exchange_ahead_and_the_request_takes_it(
    log: Path, sent_frames: FrameLog
) -> None:
    async with _modern_session(log, sent_frames) as session:
        assert session.modern
        ahead = session.send_ahead("tools/call", _echo("one"), log_level="info")
        assert ahead is not None and ahead.params == _echo("one")
        result = await _session_request(session, ahead, "one", "info")
        assert result["content"] == [{"type": "text", "text": "one"}]
        assert ahead.taken
        (call,) = _calls(log)  # sent once, under its id, spelled as the request spells it
        assert call["id"] == ahead.rid
        meta = call["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/logLevel"] == "info"
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpx"
        assert "io.modelcontextprotocol/clientCapabilities" in meta
        assert call["params"] == ahead.sent


@pytest.mark.anyio
async def test_a_modern_request_spelled_otherwise_is_sent_as_ever(
    log: Path, sent_frames: FrameLog
) -> None:
    """The same call under another log level is another request: the one written ahead
    is not taken (its caller withdraws it), and the request goes as it is spelled."""
    async with _modern_session(log, sent_frames) as session:
        ahead = session.send_ahead("tools/call", _echo("one"), log_level="info")
        assert ahead is not None
        result = await _session_request(session, ahead, "one", "error")
        assert result["content"] == [{"type": "text", "text": "one"}]
        assert not ahead.taken
        with anyio.fail_after(10):
            await ahead.withdraw("the caller went away")
        levels = [c["params"]["_meta"]["io.modelcontextprotocol/logLevel"] for c in _calls(log)]
        assert levels == ["info", "error"]
        assert session.conn.in_flight == 0
