"""A stdio host whose input ends while mcpx waits for its answer to a question.

It can answer nothing any more: the question fails at once (its upstream is told), and
the call it was part of ends and is answered on stdout, which the host may still be
reading (the drain), instead of being held until ``transport.stdioDrain`` and cancelled
unanswered. An ssh connection that drops mid-question is this case (issue 23).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # A drain far longer than the test waits: only an answer given at once passes.
    settings = {"transport.stdioDrain": "600s"}
    with running_daemon(tmp_path_factory.mktemp("eof"), {"asker": sdk_entry()}, settings) as d:
        yield d


def _lines(stream: IO[bytes], into: queue.Queue[dict[str, Any] | None]) -> None:
    for raw in stream:
        into.put(json.loads(raw))
    into.put(None)


def _next(lines: queue.Queue[dict[str, Any] | None], want: str) -> dict[str, Any]:
    while True:
        frame = lines.get(timeout=60)
        assert frame is not None, f"stdout ended before {want}"
        if want == "question" and frame.get("method") == "elicitation/create":
            return frame
        if want == "answer" and frame.get("id") == 2:
            return frame


def test_a_question_to_a_host_whose_input_ended_fails_and_the_call_is_answered(
    daemon: Daemon,
) -> None:
    argv = [sys.executable, "-m", "mcpx", "serve"]
    with subprocess.Popen(
        argv, cwd=daemon.home, env=daemon.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as host:
        assert host.stdin is not None and host.stdout is not None
        lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=_lines, args=(host.stdout, lines), daemon=True).start()
        init = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}
        init["clientInfo"] = {"name": "eof", "version": "1"}
        call = {"name": "mcpx_call"}
        call["arguments"] = {"server": "asker", "tool": "ask", "arguments": {"question": "q?"}}
        for frame in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        ):
            host.stdin.write(json.dumps(frame).encode() + b"\n")
        host.stdin.flush()
        try:
            _next(lines, "question")
            host.stdin.close()  # gone without answering
            answer = _next(lines, "answer")
        finally:
            host.kill()
    # The upstream was told its question failed; the call ends as the upstream ends it.
    result = answer.get("result") or {}
    said = json.dumps(answer)
    assert result.get("isError") is True or "error" in answer, said
