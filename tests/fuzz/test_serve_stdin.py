"""``mcpx serve`` fed generated stdin lines: valid frames, garbage, partial JSON, huge ids.

One real daemon (the demo upstream) for the module; each example runs ``mcpx serve`` as a
host starts it, its stdin either a pipe (handed off to the daemon) or a regular file
(relayed by the shim), with a few generated lines, often after a legacy handshake, then a
last valid request (2026-07-28 ``server/discover``, which needs no handshake), then EOF.

Properties:
- the process exits 0 (it did not crash) and answers the last request with a result;
- every line it writes is a JSON-RPC frame (or a batch of them); each traced frame is
  valid under the strict schema of the revision it was sent in, and a frame written but
  not traced is an error (a refusal made before the line reached the session, which is
  not traced yet: ``test_known_defects``) valid under the revision a frame sent before
  any was judged;
- nothing is logged as an error, and ``/health`` answers ``{"ok": true}`` after it;
- after the run, a plain ``tools/call`` still works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fuzz.helpers import (
    DAEMON_SETTINGS,
    DEMO,
    Watch,
    assert_unharmed,
    bounded,
    echo_still_works,
    frame_problems,
    healthy,
)
from fuzz.strategies import dumps, frames, huge_ints, json_values, mostly
from mcpx.spec import LEGACY
from support.daemon import _UNJUDGED, Daemon, running_daemon
from support.modern import modern_meta, modern_request
from support.schemas import frame_errors

FINAL_ID: Final = "fuzz-final"
FINAL: Final = dumps(modern_request(FINAL_ID, "server/discover", {}, modern_meta(client="fuzz")))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("fuzz-serve")
    with running_daemon(tmp, {"demo": DEMO}, DAEMON_SETTINGS) as d:
        yield d


# -- lines ---------------------------------------------------------------------


def _handshake(rev: str) -> list[bytes]:
    info = {"name": "fuzz", "version": "1"}
    init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": info}
    return [
        dumps({"jsonrpc": "2.0", "id": "fuzz-init", "method": "initialize", "params": init}),
        dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]


def _one_line(data: bytes) -> bytes:
    return data.replace(b"\n", b" ")


@st.composite
def odd_lines(draw: st.DrawFn) -> bytes:
    """A line no host should send: garbage, cut short, an id no integer type holds, a
    value of the wrong type, deep nesting, NaN, white space."""
    kind = draw(st.sampled_from(["bytes", "cut", "huge id", "value", "deep", "nan", "blank"]))
    if kind == "bytes":
        return _one_line(draw(st.binary(max_size=60)))
    if kind == "cut":
        whole = dumps(draw(frames(modern=draw(st.booleans()))))
        return whole[: draw(st.integers(0, max(0, len(whole) - 1)))]
    if kind == "huge id":
        return dumps({"jsonrpc": "2.0", "id": draw(huge_ints), "method": "ping"})
    if kind == "value":
        return dumps(draw(json_values))
    if kind == "deep":
        depth = draw(st.sampled_from([64, 1000, 5000]))
        return b"[" * depth + b"]" * depth
    if kind == "nan":
        return b'{"jsonrpc":"2.0","id":NaN,"method":"ping","params":{"x":Infinity}}'
    return draw(st.sampled_from([b"", b" ", b"\t", b"\r"]))


@st.composite
def frame_lines(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):  # a batch (only a 2025-03-26 session may send one)
        return dumps(draw(st.lists(frames(modern=False), max_size=3)))
    return dumps(draw(frames(modern=draw(st.booleans()))))


@dataclass
class Input:
    mode: str  # hand-off (stdin is a pipe) or carried (a regular file: relayed)
    lines: list[bytes]

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in [*self.lines, FINAL])


@st.composite
def inputs(draw: st.DrawFn) -> Input:
    start = draw(mostly(st.sampled_from(LEGACY).map(_handshake), st.just([]), 4))
    body = draw(st.lists(mostly(frame_lines(), odd_lines(), 3), min_size=1, max_size=6))
    return Input(draw(st.sampled_from(["hand-off", "carried"])), [*start, *body])


# -- one run -------------------------------------------------------------------


def _serve(daemon: Daemon, given: Input) -> tuple[int, bytes, bytes]:
    data = given.data()
    stdin = daemon.home / "fuzz-stdin.jsonl"
    stdin.write_bytes(data)
    with stdin.open("rb") as source:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", "serve"],
            stdin=subprocess.PIPE if given.mode == "hand-off" else source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=daemon.home,
            env=daemon.env(),
        )
        try:
            out, err = proc.communicate(data if given.mode == "hand-off" else None, timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, out, err


def _frames_of(out: bytes) -> list[Any]:
    """Every frame in ``mcpx serve``'s output, each line checked to be JSON-RPC."""
    found: list[Any] = []
    for line in out.split(b"\n"):
        if not line:
            continue
        value = json.loads(line)
        batch = value if isinstance(value, list) else [value]
        assert batch, f"an empty batch written: {line!r}"
        for frame in batch:
            assert isinstance(frame, dict) and frame.get("jsonrpc") == "2.0", line
        found += batch
    return found


@bounded(20)
@given(given_input=inputs())
def test_serve_answers_every_line_validly(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client], given_input: Input
) -> None:
    _, api = http
    watch = Watch(daemon)
    status, out, err = _serve(daemon, given_input)
    traced = watch.frames()
    assert status == 0, err.decode(errors="replace")[-3000:]
    written = _frames_of(out)
    problems = frame_problems(traced)
    assert not problems, "invalid frames:\n" + "\n".join(problems)
    sent = [line["frame"] for line in traced]
    for frame in written:
        if frame in sent:
            continue
        # Refusals the channel makes before a frame reaches the session (a line that is
        # no frame, a batch refused whole) are not traced: held to the revision a frame
        # sent before any was judged, as /mcp's front door refusals are.
        assert "error" in frame, f"a frame the daemon did not trace: {frame}"
        assert not frame_errors(frame, _UNJUDGED, sender="server"), frame
    [final] = [f for f in written if f.get("id") == FINAL_ID]
    assert "result" in final, final
    event(f"{given_input.mode}: {min(len(written), 5)}{'+' * (len(written) > 4)} frames written")
    event(f"results written: {sum('result' in f for f in written) - 1}")
    assert_unharmed(watch, api)


def test_the_daemon_still_serves_after_the_fuzzing(
    http: tuple[httpx.Client, httpx.Client],
) -> None:
    mcp, api = http
    assert healthy(api)
    assert echo_still_works(mcp) == "still here"
