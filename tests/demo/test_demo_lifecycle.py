"""How the demo server starts and ends: end of input, draining, a broken stdout, framing.

Process tests run ``python -m mcpx.demo``; the in-process ones drive ``serve`` over anyio
memory object streams, where each item the server sends must be exactly one whole line.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from demo.peer import SERVER_ARGV, Start, modern_meta
from mcpx.demo import DRAIN_SECONDS, command, serve
from support.schemas import FrameLog

SLOW_30 = {"name": "slow", "arguments": {"seconds": 30, "steps": 300}}


def test_end_of_input_exits_zero(start: Start) -> None:
    peer = start()
    peer.close_stdin()
    assert peer.rest() == []
    assert peer.wait() == 0


def test_requests_in_flight_answer_after_end_of_input(start: Start) -> None:
    peer = start("2025-06-18")
    rid = peer.request("tools/call", {"name": "slow", "arguments": {"seconds": 0.3}})
    peer.close_stdin()
    (answer,) = peer.rest()
    assert answer["id"] == rid and "result" in answer
    assert peer.wait() == 0


def test_end_of_input_cancels_after_the_drain(start: Start) -> None:
    peer = start("2025-11-25")
    rid = peer.request("tools/call", SLOW_30, token="t")
    peer.notification("notifications/progress")
    began = time.monotonic()
    peer.close_stdin()
    frames = peer.rest(timeout=DRAIN_SECONDS + 10)
    assert peer.wait() == 0
    assert DRAIN_SECONDS - 0.5 < time.monotonic() - began < DRAIN_SECONDS + 8
    assert not [f for f in frames if f.get("id") == rid]
    assert "cancelling 1 request(s) still running" in peer.stderr()


def test_a_closed_stdout_ends_the_server() -> None:
    proc = subprocess.Popen(
        SERVER_ARGV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdout.close()  # the client stops reading, yet keeps stdin open
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        proc.stdin.flush()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdin.close()
        assert proc.stderr is not None
        proc.stderr.close()


def test_the_click_command() -> None:
    assert command.name == "demo-server"
    shown = CliRunner().invoke(command, ["--help"])
    assert shown.exit_code == 0
    assert "demo MCP server" in shown.output


# -- in process: serve() over memory streams -----------------------------------------------


class Wire:
    """Both ends of an in-process connection, from the client's side."""

    def __init__(self, log: FrameLog, rev: str) -> None:
        self.log = log
        self.rev = rev
        self.asked: dict[Any, str] = {}
        self.to_server, self.server_in = anyio.create_memory_object_stream[bytes](64)
        self.server_out, self.from_server = anyio.create_memory_object_stream[bytes](64)

    async def send(self, data: bytes) -> None:
        await self.to_server.send(data)

    def close(self) -> None:
        for stream in (self.to_server, self.server_in, self.server_out, self.from_server):
            stream.close()

    async def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> None:
        self.asked[rid] = method
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        await self.send(json.dumps(frame).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(5):
            line = await self.from_server.receive()
        assert line.endswith(b"\n") and line.count(b"\n") == 1  # one whole line per write
        frame: dict[str, Any] = json.loads(line)
        self.log.sent(frame, self.rev, sender="server", answering=self.asked.get(frame.get("id")))
        return frame


@asynccontextmanager
async def serving(log: FrameLog, rev: str, **options: Any) -> AsyncIterator[Wire]:
    wire = Wire(log, rev)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: serve(wire.server_in, wire.server_out, **options))
                yield wire
    finally:
        wire.close()


@pytest.mark.anyio
async def test_serve_frames_lines_however_they_arrive(sent_frames: FrameLog) -> None:
    async with serving(sent_frames, "2025-11-25", max_line=256) as wire:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
        wire.asked.update({1: "initialize", 2: "ping", 3: "ping", 4: "ping", 5: "ping"})
        head = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize"})[:-1]
        await wire.send(head.encode())  # one frame in two chunks
        await wire.send(b', "params": ' + json.dumps(init).encode() + b"}\r\n")
        assert (await wire.receive())["result"]["protocolVersion"] == "2025-11-25"
        ping = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n'
        await wire.send(ping % 2 + ping % 3)  # two frames in one chunk
        assert sorted([(await wire.receive())["id"], (await wire.receive())["id"]]) == [2, 3]
        await wire.send(b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"' + b"x" * 300)
        await wire.send(b'"}}\n{"jsonrpc":"2.0","id":5,"method":"ping"}\n')
        too_long = await wire.receive()
        assert too_long["error"]["code"] == -32700 and "id" not in too_long
        assert (await wire.receive())["id"] == 5
        padded = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"' + b"y" * 300
        await wire.send(padded + b'"}}\n')  # too long although it came whole in one read
        assert (await wire.receive())["error"]["code"] == -32700
        await wire.send(b'{"jsonrpc":"2.0","id":6,"method":"ping"}')  # no newline, then EOF
        wire.asked[6] = "ping"
        await wire.to_server.aclose()
        assert (await wire.receive())["id"] == 6
    # Leaving the block means serve returned at end of input.


@pytest.mark.anyio
async def test_serve_cancels_what_outlives_the_drain(sent_frames: FrameLog) -> None:
    async with serving(sent_frames, "2025-06-18", drain=0.2) as wire:
        await wire.request(1, "tools/call", SLOW_30)
        await wire.to_server.aclose()
    assert wire.from_server.statistics().current_buffer_used == 0  # nothing for the cancelled call


@pytest.mark.anyio
async def test_serve_ends_a_listen_at_end_of_input(sent_frames: FrameLog) -> None:
    async with serving(sent_frames, "2026-07-28", drain=60) as wire:
        await wire.request(1, "subscriptions/listen", {"notifications": {}, "_meta": modern_meta()})
        assert (await wire.receive())["method"] == "notifications/subscriptions/acknowledged"
        await wire.to_server.aclose()  # the 60 s drain is not waited for: fail_after(10)


@pytest.mark.anyio
async def test_serve_ends_when_stdout_breaks(sent_frames: FrameLog) -> None:
    async with serving(sent_frames, "2024-11-05") as wire:
        await wire.from_server.aclose()
        await wire.request(1, "ping")
    # serve returned although its stdin never ended
