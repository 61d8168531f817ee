"""A stdio host's pass-through ``tools/call`` is written upstream as its line is read,
and a plain result goes back to the host as it arrives (``mcpx.server._send_ahead``):
the request's own task, through ``dispatch`` as ever, finds it sent and its answer
given. What the host and the upstream see is what they saw before: each request once,
each answer once, none for a request the host withdrew. The upstream is a scripted
stdio server that logs every line it reads, in either era (a 2026-07-28 one reads each
call with the ``_meta`` its request restates); every frame the daemon sent the host is
checked against its revision when the daemon stops.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon
from support.peers import StdioPeer, stdio_peer
from support.waiting import wait_until

REV = "2025-11-25"
FAKE = Path(__file__).parents[1] / "fixtures" / "recording_fake.py"
M = "io.modelcontextprotocol/"


# The upstream in either era: a legacy one ("plain") reads the call as the host wrote it,
# a 2026-07-28 one ("modern") with the _meta its request restates.
@pytest.fixture(scope="module", params=["plain", "modern"], ids=["legacy", "modern"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def upstream_log(tmp_path_factory: pytest.TempPathFactory, mode: str) -> Path:
    return tmp_path_factory.mktemp(f"upstream-{mode}") / "read.log"


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory, upstream_log: Path, mode: str
) -> Iterator[Daemon]:
    fake = {"command": sys.executable, "args": [str(FAKE), str(upstream_log), mode]}
    settings = {"mcp.passthrough": ["fake"], "log.level": "debug"}
    with running_daemon(tmp_path_factory.mktemp("ahead"), {"fake": fake}, settings) as d:
        yield d


@pytest.fixture
def host(daemon: Daemon) -> Iterator[StdioPeer]:
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as peer:
        peer.initialize(REV)
        # Listed first: the owner of a pass-through tool is known from the catalogue.
        listed = _answer(peer, 1, "tools/list")["result"]["tools"]
        assert listed[0]["name"] == "echo"
        yield peer


def _line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode() + b"\n"


def _call(rid: int, text: str, **extra: Any) -> dict[str, Any]:
    params = {"name": "echo", "arguments": {"text": text}, **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _answer(peer: StdioPeer, rid: int, method: str) -> dict[str, Any]:
    return peer.request(rid, method, {}, timeout=30)


def _read(upstream_log: Path) -> list[dict[str, Any]]:
    lines = upstream_log.read_bytes().split(b"\n")
    return [json.loads(line) for line in lines if line and not line.startswith(b"#")]


def _as_called(params: dict[str, Any]) -> dict[str, Any]:
    """A tools/call's params as the upstream read them, less what a 2026-07-28 request
    restates in ``_meta`` each time (checked to be there)."""
    meta = dict(params.get("_meta") or {})
    if meta.pop(f"{M}protocolVersion", None) is None:
        return params
    for key in ("clientCapabilities", "clientInfo", "logLevel"):
        assert f"{M}{key}" in meta, params
        del meta[f"{M}{key}"]
    return {k: v for k, v in params.items() if k != "_meta"} | ({"_meta": meta} if meta else {})


def _sent_ahead(daemon: Daemon) -> list[str]:
    return [line["msg"] for line in daemon.log_lines() if "sent ahead" in line["msg"]]


def test_pipelined_calls_each_go_upstream_once_and_are_answered_once(
    daemon: Daemon, host: StdioPeer, upstream_log: Path
) -> None:
    before, ahead_before = len(_read(upstream_log)), len(_sent_ahead(daemon))
    texts = {100 + n: f"call {n}" for n in range(16)}
    host.send_raw(b"".join(_line(_call(rid, text)) for rid, text in texts.items()))
    answers = [host.recv(timeout=30) for _ in texts]
    assert sorted(a["id"] for a in answers) == sorted(texts)  # each once
    for answer in answers:
        assert answer["result"]["content"] == [{"type": "text", "text": texts[answer["id"]]}]
    read = _read(upstream_log)[before:]
    assert [f["params"]["arguments"]["text"] for f in read] == list(texts.values())
    assert len({f["id"] for f in read}) == len(texts)  # each under its own id
    assert all(
        _as_called(f["params"]) == {"name": "echo", "arguments": {"text": t}}
        for f, t in zip(read, texts.values(), strict=True)
    )
    assert len(_sent_ahead(daemon)) - ahead_before == len(texts)  # each sent ahead
    ping = _answer(host, 200, "ping")  # nothing more was said to the host
    assert ping["result"] == {}


def test_a_call_withdrawn_before_its_task_ran_is_cancelled_upstream_and_not_answered(
    daemon: Daemon, host: StdioPeer, upstream_log: Path
) -> None:
    before, ahead_before = len(_read(upstream_log)), len(_sent_ahead(daemon))
    cancel = {"requestId": 300, "reason": "changed my mind"}
    host.send_raw(
        _line(_call(300, "hold"))
        + _line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    )
    # The upstream holds the call until it is cancelled, which it must be.
    await_cancelled = wait_until(
        lambda: any(
            f.get("method") == "notifications/cancelled" for f in _read(upstream_log)[before:]
        ),
        timeout=30,
    )
    assert await_cancelled
    assert _answer(host, 301, "ping")["result"] == {}  # nothing answers 300
    assert len(_sent_ahead(daemon)) - ahead_before == 1
    read = _read(upstream_log)[before:]
    call = [f for f in read if f.get("method") == "tools/call"]
    assert [f["params"]["arguments"]["text"] for f in call] == ["hold"]
    told = [f["params"]["requestId"] for f in read if f.get("method") == "notifications/cancelled"]
    assert told == [call[0]["id"]]
    assert not [n for n in host.notifications if n.get("id") == 300]


def test_a_call_with_meta_goes_by_its_task(
    daemon: Daemon, host: StdioPeer, upstream_log: Path
) -> None:
    """A progress token is the call's to replace upstream: nothing is sent before the
    task has registered the call."""
    before, ahead_before = len(_read(upstream_log)), len(_sent_ahead(daemon))
    reply = host.request(
        400, "tools/call", _call(400, "metered", _meta={"progressToken": "p"})["params"], timeout=30
    )
    assert reply["result"]["content"] == [{"type": "text", "text": "metered"}]
    assert len(_sent_ahead(daemon)) == ahead_before
    (sent,) = _read(upstream_log)[before:]
    assert sent["params"]["_meta"]["progressToken"].startswith("mcpx-")


def test_a_gateway_call_goes_ahead_too(daemon: Daemon, host: StdioPeer, upstream_log: Path) -> None:
    before, ahead_before = len(_read(upstream_log)), len(_sent_ahead(daemon))
    args = {"server": "fake", "tool": "echo", "arguments": {"text": "through the gateway"}}
    reply = host.request(500, "tools/call", {"name": "mcpx_call", "arguments": args}, timeout=30)
    assert reply["result"]["content"] == [{"type": "text", "text": "through the gateway"}]
    assert len(_sent_ahead(daemon)) - ahead_before == 1
    (sent,) = _read(upstream_log)[before:]
    assert _as_called(sent["params"]) == {
        "name": "echo",
        "arguments": {"text": "through the gateway"},
    }
    # One the gateway refuses (no such tool) is refused as ever, nothing sent.
    args = {"server": "fake", "tool": "nope", "arguments": {}}
    refused = host.request(501, "tools/call", {"name": "mcpx_call", "arguments": args}, timeout=30)
    assert refused["result"]["isError"] is True
    assert "no tool named 'nope'" in refused["result"]["content"][0]["text"]
    assert len(_read(upstream_log)) == before + 1
    assert len(_sent_ahead(daemon)) - ahead_before == 1
