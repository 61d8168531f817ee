"""Server obligations: lifecycle, stdio, 2026-07-28 statelessness, and the
sessions' security, proven against a real daemon, real ``mcpx serve`` processes and real
upstreams (the demo server; the official SDK's fixture server, which asks questions).

Every frame a test reads from mcpx is validated strictly against the revision it was
sent in (``sent_frames``); the daemon's own trace (``log.frames``) is checked too when
the module's daemon stops.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpx.daemon import DaemonPaths
from support.daemon import Daemon, running_daemon, sdk_entry
from support.modern import MODERN, modern_headers, modern_meta, modern_request
from support.schemas import FrameLog, frame_errors
from support.waiting import WaitTimedOut, wait_until

LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
NEWEST_LEGACY = "2025-11-25"
META = modern_meta(client="t")
ECHO = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
LIMIT = 60.0  # generous: the machine is shared


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    demo = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
    servers = {
        "demo": demo,
        # The same demo, one instance per caller: shows which scope a request ran in.
        "scoped": {**demo, "scope": "identity"},
        # The official SDK's fixture server (legacy): its "ask" tool elicits mid-call.
        "legacy": sdk_entry("1.23.3"),
    }
    settings = {
        # Even told to put 2026-07-28 alone first, mcpx stays dual-era (S-LIFE-24).
        "spec.precedence": [MODERN],
        # At EOF, requests in flight get this long (default 30 s) before the session ends.
        "transport.stdioDrain": "2s",
    }
    with running_daemon(tmp_path_factory.mktemp("obl-a"), servers, settings) as d:
        yield d


# -- helpers --------------------------------------------------------------------------


def _request(id_: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def _modern(
    id_: int | str, method: str, params: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return modern_request(id_, method, params, {**META, **meta})


def _init(rev: str, caps: dict[str, Any] | None = None, name: str = "t") -> dict[str, Any]:
    info = {"name": name, "version": "1"}
    return {"protocolVersion": rev, "capabilities": caps or {}, "clientInfo": info}


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def _call(server: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }


class Host:
    """One ``mcpx serve`` process driven line by line over pipes, as a host drives it.

    Every line it wrote is kept (``raw``), in order, with the frames they parse to.
    """

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by kill)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=cwd,
            env=env,
        )
        self._buf = b""
        self.raw: list[bytes] = []
        self.frames: list[Any] = []
        self.eof = False
        self.stderr_text = ""

    def send(self, *frames: dict[str, Any] | list[Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        self.proc.stdin.flush()

    def _pump(self, until: float) -> bool:
        """Read what is there (waiting until ``until``); False at EOF or timeout."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            self.eof = True
            return False
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            self.raw.append(line)
            self.frames.append(json.loads(line))
        return True

    def wait_for(self, test: Callable[[Any], bool], limit: float = LIMIT) -> Any:
        """The first frame (from the start) that passes ``test``, reading until it comes."""
        deadline = time.monotonic() + limit
        seen = 0
        while True:
            for frame in self.frames[seen:]:
                if test(frame):
                    return frame
            seen = len(self.frames)
            if not self._pump(deadline) and (self.eof or time.monotonic() >= deadline):
                raise AssertionError(f"no such frame within {limit} s; got {self.frames}")

    def answer(self, id_: Any, limit: float = LIMIT) -> dict[str, Any]:
        frame: dict[str, Any] = self.wait_for(
            lambda f: isinstance(f, dict) and f.get("id") == id_ and "method" not in f, limit
        )
        return frame

    def read_for(self, seconds: float) -> None:
        """Keep reading for ``seconds`` (whatever comes)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.eof:
            self._pump(deadline)

    def close(self, limit: float = LIMIT) -> int:
        """Close stdin and read what is left; the exit status (the process must end
        within ``limit``). Reading stops at EOF, or shortly after the process ended: an
        upstream spawned meanwhile may hold a copy of the pipe (see the report)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        deadline = time.monotonic() + limit
        while not self.eof and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.read_for(1.0)
                break
            self._pump(min(deadline, time.monotonic() + 0.2))
        try:
            return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            self.stderr_text = self.stderr()
            self.kill()

    def stderr(self) -> str:
        if self._err.closed:
            return self.stderr_text
        self._err.seek(0)
        return self._err.read().decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if not self._err.closed:
            self.stderr_text = self.stderr()
            self._err.close()


@pytest.fixture
def host(daemon: Daemon) -> Iterator[Callable[[], Host]]:
    started: list[Host] = []

    def start() -> Host:
        h = Host(daemon.home, daemon.env())
        started.append(h)
        return h

    yield start
    for h in started:
        h.kill()


def _instances(daemon: Daemon, server: str) -> list[dict[str, Any]]:
    with daemon.http() as api:
        servers = api.get("/v1/servers").json()["servers"]
    return [i for s in servers if s["name"] == server for i in s["instances"]]


def _in_flight(daemon: Daemon, server: str) -> int:
    return sum(i["inFlight"] for i in _instances(daemon, server))


def _mcp(daemon: Daemon) -> httpx.Client:
    return httpx.Client(base_url=daemon.info["url"], timeout=LIMIT)


def _post_modern(
    mcp: httpx.Client, frame: dict[str, Any], name: str | None = None
) -> httpx.Response:
    return mcp.post("/mcp", json=frame, headers=modern_headers(frame["method"], name=name))


# -- lifecycle ------------------------------------------------------------------------


@pytest.mark.obligation("S-LIFE-1")
@pytest.mark.parametrize("rev", [*LEGACY, MODERN])
def test_every_revision_has_its_lifecycle_over_stdio(
    host: Callable[[], Host], sent_frames: FrameLog, rev: str
) -> None:
    # Legacy: initialize, initialized, ping, a listing; 2026-07-28: no handshake at all,
    # server/discover then a listing, each request carrying its own _meta.
    h = host()
    if rev == MODERN:
        h.send(_modern(1, "server/discover"), _modern(2, "tools/list"))
        methods = {1: "server/discover", 2: "tools/list"}
    else:
        h.send(_request(1, "initialize", _init(rev)))
        init = h.answer(1)["result"]
        assert init["protocolVersion"] == rev
        assert init["serverInfo"]["name"] == "mcpx"
        h.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        h.send(_request(2, "ping"), _request(3, "tools/list"))
        methods = {1: "initialize", 2: "ping", 3: "tools/list"}
    for id_, method in methods.items():
        reply = h.answer(id_)
        assert "result" in reply, reply
        sent_frames.sent(reply, rev, answering=method)
    if rev == MODERN:
        assert MODERN in h.answer(1)["result"]["supportedVersions"]
    else:
        assert h.answer(2)["result"] == {}
    assert "mcpx_call" in {t["name"] for t in h.answer(max(methods))["result"]["tools"]}
    assert h.close() == 0


# S-LIFE-5, S-LIFE-24 (not applicable: mcpx always serves the legacy revisions)
@pytest.mark.obligation("S-LIFE-5", "S-LIFE-24")
@pytest.mark.parametrize("asked", ["1900-01-01", MODERN, "2099-01-01"])
def test_initialize_counter_offers_the_newest_legacy_revision(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog, asked: str
) -> None:
    # The daemon runs with spec.precedence = [2026-07-28]: still dual-era, so a legacy
    # initialize is never an error, and the counter-offer is the newest legacy revision.
    h = host()
    h.send(_request(1, "initialize", _init(asked)))
    reply = h.answer(1)
    sent_frames.sent(reply, NEWEST_LEGACY, answering="initialize")
    assert reply["result"]["protocolVersion"] == NEWEST_LEGACY
    assert h.close() == 0
    with _mcp(daemon) as mcp:
        r = mcp.post("/mcp", json=_request(1, "initialize", _init(asked)))
        assert r.status_code == 200, r.text
        sent_frames.sent(r.json(), NEWEST_LEGACY, answering="initialize")
        assert r.json()["result"]["protocolVersion"] == NEWEST_LEGACY
        assert mcp.delete("/mcp", headers={"Mcp-Session-Id": r.headers["mcp-session-id"]})


@pytest.mark.obligation("S-LIFE-15", "S-SEC-6")
def test_one_stdio_process_carries_unrelated_modern_requests(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    # Two slow calls on a server scoped per caller, and a fast one, interleaved on one
    # process: all answered, each to its own id, the fast one first. The two slow calls
    # ran in two scopes of their own: the process is not taken for the caller.
    h = host()
    h.send(
        _modern("slow-a", "tools/call", _call("scoped", "slow", seconds=4, steps=1)),
        _modern("slow-b", "tools/call", _call("scoped", "slow", seconds=4, steps=1)),
    )
    scopes: list[str] = []

    def two_scopes() -> bool:
        scopes[:] = [i["scope"] for i in _instances(daemon, "scoped") if i["inFlight"]]
        return len(scopes) == 2

    wait_until(two_scopes, timeout=30, message=lambda: f"two scopes in flight, not {scopes}")
    assert len(set(scopes)) == 2 and not any(s.startswith("stdio:") for s in scopes), scopes
    h.send(_modern("fast", "tools/call", _call("demo", "echo", text="between")))
    fast = h.answer("fast")
    slow_a, slow_b = h.answer("slow-a"), h.answer("slow-b")
    order = [f.get("id") for f in h.frames]
    assert order.index("fast") < order.index("slow-a")
    assert order.index("fast") < order.index("slow-b")
    assert _text(fast["result"]) == "between"
    for reply in (fast, slow_a, slow_b):
        sent_frames.sent(reply, MODERN, answering="tools/call")
    assert _text(slow_a["result"]) == _text(slow_b["result"]) == "slept 4 s in 1 step"
    assert h.close() == 0


@pytest.mark.obligation("S-LIFE-16", "S-LIFE-17", "S-STDIO-5", "S-CACHE-3")
def test_a_question_round_started_on_stdio_finishes_on_http(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    params = _call("legacy", "ask", question="colour?")
    h = host()
    h.send(_modern(1, "tools/call", params, **{"io.modelcontextprotocol/clientCapabilities": caps}))
    first = h.answer(1)
    sent_frames.sent(first, MODERN, answering="tools/call")
    assert h.close() == 0  # the first connection is gone before the retry
    # The question came inside the result; no request was ever written to stdout.
    assert not [f for f in h.frames if "method" in f and "id" in f], h.frames
    result = first["result"]
    assert result["resultType"] == "input_required"
    # An interim answer is not the answer to cache: no hints on it.
    assert "ttlMs" not in result and "cacheScope" not in result
    [(key, asked)] = result["inputRequests"].items()
    assert asked["method"] == "elicitation/create"
    # What ties the retry to the call is the requestState the client passes back.
    retry = {
        **params,
        "inputResponses": {key: {"action": "accept", "content": {"answer": "blue"}}},
        "requestState": result["requestState"],
    }
    frame = _modern(2, "tools/call", retry, **{"io.modelcontextprotocol/clientCapabilities": caps})
    with _mcp(daemon) as mcp:
        r = _post_modern(mcp, frame, name="mcpx_call")
    assert r.status_code == 200, r.text
    sent_frames.sent(r.json(), MODERN, answering="tools/call")
    assert r.json()["result"]["resultType"] == "complete"
    assert _text(r.json()["result"]) == "blue"


@pytest.mark.obligation("S-LIFE-21")
def test_client_info_changes_nothing(daemon: Daemon, sent_frames: FrameLog) -> None:
    infos: list[dict[str, Any] | None] = [
        None,
        {"name": "claude-code", "version": "9"},
        {"name": "mcpx-admin", "version": "0", "title": "root"},
    ]
    seen: dict[str, list[Any]] = {}
    with _mcp(daemon) as mcp:
        for info in infos:
            meta = dict(META)
            if info is None:
                del meta["io.modelcontextprotocol/clientInfo"]
            else:
                meta["io.modelcontextprotocol/clientInfo"] = info
            for method, params, name in (
                ("server/discover", {}, None),
                ("tools/list", {}, None),
                ("prompts/list", {}, None),
                ("resources/list", {}, None),
                ("tools/call", _call("demo", "echo", text="same"), "mcpx_call"),
            ):
                frame = _request(1, method, {**params, "_meta": meta})
                r = _post_modern(mcp, frame, name=name)
                assert r.status_code == 200, r.text
                sent_frames.sent(r.json(), MODERN, answering=method)
                seen.setdefault(method, []).append(r.json())
            # A legacy handshake with that clientInfo: the same InitializeResult.
            init = _init(NEWEST_LEGACY)
            if info is not None:
                init["clientInfo"] = info
            r = mcp.post("/mcp", json=_request(1, "initialize", init))
            sent_frames.sent(r.json(), NEWEST_LEGACY, answering="initialize")
            seen.setdefault("initialize", []).append(r.json())
            mcp.delete("/mcp", headers={"Mcp-Session-Id": r.headers["mcp-session-id"]})
    for method, replies in seen.items():
        assert all(r == replies[0] for r in replies), (method, replies)


# S-LIFE-22, S-LIFE-23 (not offered: mcpx supports no extension yet; the tasks extension
# is not implemented)
@pytest.mark.obligation("S-LIFE-22", "S-LIFE-23")
def test_a_client_without_the_declared_extension_gets_core_calls(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    h = host()
    h.send(_modern(1, "server/discover"), _modern(2, "tools/call", _call("demo", "echo", text="x")))
    discover, call = h.answer(1), h.answer(2)
    assert h.close() == 0
    sent_frames.sent(discover, MODERN, answering="server/discover")
    sent_frames.sent(call, MODERN, answering="tools/call")
    # The tasks extension is the one mcpx declares (core tasks are 2025-11-25's) …
    tasks_extension = {"io.modelcontextprotocol/tasks": {}}
    assert discover["result"]["capabilities"]["extensions"] == tasks_extension
    assert "tasks" not in discover["result"]["capabilities"]
    # … and a client that declared no extension gets the core result.
    assert call["result"]["resultType"] == "complete"
    assert _text(call["result"]) == "x"
    with _mcp(daemon) as mcp:
        r = mcp.post("/mcp", json=_request(1, "initialize", _init(NEWEST_LEGACY)))
        sent_frames.sent(r.json(), NEWEST_LEGACY, answering="initialize")
        caps = r.json()["result"]["capabilities"]
        # 2025-11-25 has no extensions: its core tasks instead.
        assert "extensions" not in caps and "tasks" in caps
        mcp.delete("/mcp", headers={"Mcp-Session-Id": r.headers["mcp-session-id"]})


@pytest.mark.obligation("S-DISC-5")
def test_discover_before_initialize_on_one_stdio_process(
    host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    # A dual-era probe: server/discover as the very first line, then the legacy handshake
    # on the same process still works.
    h = host()
    h.send(_modern(1, "server/discover"))
    discover = h.answer(1)
    sent_frames.sent(discover, MODERN, answering="server/discover")
    assert MODERN in discover["result"]["supportedVersions"]
    h.send(_request(2, "initialize", _init("2025-06-18")))
    init = h.answer(2)
    sent_frames.sent(init, "2025-06-18", answering="initialize")
    assert init["result"]["protocolVersion"] == "2025-06-18"
    h.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, _request(3, "tools/list"))
    listed = h.answer(3)
    sent_frames.sent(listed, "2025-06-18", answering="tools/list")
    assert "mcpx_call" in {t["name"] for t in listed["result"]["tools"]}
    assert h.close() == 0


@pytest.mark.obligation("S-LIFE-6")
def test_a_legacy_stdio_host_is_put_questions_only_once_initialized(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    rev = NEWEST_LEGACY
    caps = {"elicitation": {}}
    h = host()
    h.send(_request(1, "initialize", _init(rev, caps)))
    sent_frames.sent(h.answer(1), rev, answering="initialize")
    # Initialized is withheld: the upstream's question is not put to the host (which
    # declared elicitation) but waits in mcpx's broker, where /v1 answers it.
    h.send(_request(2, "tools/call", _call("legacy", "ask", question="before?")))
    question = daemon.open_question("legacy (via mcpx) asks: before?")
    assert question["method"] == "elicitation/create", question
    with daemon.http() as api:
        answered = api.post(
            f"/v1/questions/{question['id']}/answer", json={"content": {"answer": "broker"}}
        )
    assert answered.status_code == 200, answered.text
    before = h.answer(2)
    sent_frames.sent(before, rev, answering="tools/call")
    assert _text(before["result"]) == "broker", before
    assert not [f for f in h.frames if "method" in f and "id" in f], h.frames
    # Once it said initialized, the same question is put to the host itself.
    h.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    h.send(_request(3, "tools/call", _call("legacy", "ask", question="after?")))
    asked = h.wait_for(lambda f: f.get("method") == "elicitation/create")
    sent_frames.sent(asked, rev)
    assert asked["params"]["message"] == "legacy (via mcpx) asks: after?", asked
    reply = {"action": "accept", "content": {"answer": "host"}}
    h.send({"jsonrpc": "2.0", "id": asked["id"], "result": reply})
    after = h.answer(3)
    sent_frames.sent(after, rev, answering="tools/call")
    assert _text(after["result"]) == "host", after
    assert h.close() == 0


# -- stdio framing ----------------------------------------------------------------------


@pytest.mark.obligation("S-STDIO-1")
def test_one_message_per_line_even_with_newlines_inside(
    host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    # (Not U+2028 or U+0085: mcpx writes them raw, as JSON allows, but the daemon's frame
    # trace is read back with str.splitlines, which would split on them.)
    tricky = "one\ntwo\r\nthree\rfour\n\nfive"
    h = host()
    h.send(_request(1, "initialize", _init("2025-06-18")))
    h.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    h.send(_request(2, "tools/call", _call("demo", "echo", text=tricky)))
    h.send(_modern(3, "tools/call", _call("demo", "echo", text=tricky)))
    legacy, modern = h.answer(2), h.answer(3)
    assert h.close() == 0
    sent_frames.sent(legacy, "2025-06-18", answering="tools/call")
    sent_frames.sent(modern, MODERN, answering="tools/call")
    assert _text(legacy["result"]) == _text(modern["result"]) == tricky
    # Every line on stdout (split on "\n" only) is exactly one JSON value; none is empty.
    assert len(h.raw) == 3
    for line in h.raw:
        assert line and b"\n" not in line
        json.loads(line)


@pytest.mark.obligation("S-STDIO-4")
def test_a_2025_03_26_batch_over_stdio_is_answered_as_one_array(
    host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    rev = "2025-03-26"
    h = host()
    h.send(_request(1, "initialize", _init(rev)))
    h.answer(1)
    h.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    h.send([_request(2, "tools/list"), _request(3, "prompts/list")])
    batch = h.wait_for(lambda f: isinstance(f, list))
    assert h.close() == 0
    assert sorted(f["id"] for f in batch) == [2, 3]
    by_id = {f["id"]: f for f in batch}
    sent_frames.sent(by_id[2], rev, answering="tools/list")
    sent_frames.sent(by_id[3], rev, answering="prompts/list")
    assert "mcpx_call" in {t["name"] for t in by_id[2]["result"]["tools"]}
    assert "demo_hello" in {p["name"] for p in by_id[3]["result"]["prompts"]}
    # The notifications-only batch had no answer: the array is the only other line.
    assert sum(isinstance(f, list) for f in h.frames) == 1


@pytest.mark.obligation("S-STDIO-6", "S-STDIO-7")
def test_a_cancelled_modern_request_stops_and_says_nothing_more(
    daemon: Daemon, host: Callable[[], Host], sent_frames: FrameLog
) -> None:
    token = "cancel-me"
    slow = _call("demo", "slow", seconds=60, steps=120)
    h = host()
    h.send(_modern(1, "tools/call", slow, progressToken=token))

    def progress(f: Any) -> bool:
        return bool(f.get("method") == "notifications/progress")

    first = h.wait_for(progress)
    assert first["params"]["progressToken"] == token
    sent_frames.sent(first, MODERN)
    h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    # Read in order after the cancellation: an echo's answer marks a point after it.
    h.send(_modern(2, "tools/call", _call("demo", "echo", text="after")))
    after = h.answer(2)
    sent_frames.sent(after, MODERN, answering="tools/call")
    mark = h.frames.index(after)
    # The upstream call stopped, long before its 60 s.
    wait_until(lambda: _in_flight(daemon, "demo") == 0, timeout=30)
    h.read_for(2.0)  # a progress step is every 0.5 s: any would have come by now
    assert h.close() == 0
    later = h.frames[mark + 1 :]
    assert not [f for f in later if f.get("params", {}).get("progressToken") == token], later
    assert not [f for f in h.frames if f.get("id") == 1], h.frames
    for f in h.frames:
        if progress(f):
            sent_frames.sent(f, MODERN)


@pytest.mark.obligation("S-STDIO-8")
def test_stdin_eof_ends_the_process(daemon: Daemon, host: Callable[[], Host]) -> None:
    # Idle: EOF ends it (close fails if the process has not ended within its limit).
    h = host()
    h.send(_modern(1, "server/discover"))
    h.answer(1)
    assert h.close(limit=30) == 0
    # A 60 s call in flight: it gets transport.stdioDrain (2 s here), then the process
    # ends, and the call is withdrawn upstream.
    h = host()
    h.send(_modern(1, "tools/call", _call("demo", "slow", seconds=60, steps=1)))
    wait_until(lambda: _in_flight(daemon, "demo") == 1, timeout=30)
    assert h.close(limit=30) == 0
    assert not [f for f in h.frames if f.get("id") == 1]
    wait_until(lambda: _in_flight(daemon, "demo") == 0, timeout=30)


@pytest.mark.obligation("S-STDIO-9", "S-STDIO-10")
def test_the_daemons_stdio_socket_is_stdio_framing_with_whole_frames(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    # mcpx's own transport between the shim and the daemon (a unix socket) carries the
    # host's JSON-RPC lines unchanged: newline framing, per-request _meta intact.
    lines = [
        _modern(1, "server/discover"),
        _modern(2, "tools/call", _call("demo", "echo", text="via socket")),
        _request(3, "initialize", _init("2025-11-25")),
    ]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(LIMIT)
        sock.connect(str(DaemonPaths(daemon.state).stdio_socket))
        sock.sendall(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.endswith(b"\n")
    replies = {f["id"]: f for f in (json.loads(x) for x in data.split(b"\n")[:-1])}
    assert set(replies) == {1, 2, 3}
    sent_frames.sent(replies[1], MODERN, answering="server/discover")
    sent_frames.sent(replies[2], MODERN, answering="tools/call")
    sent_frames.sent(replies[3], "2025-11-25", answering="initialize")
    assert replies[1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpx"
    assert _text(replies[2]["result"]) == "via socket"


# -- a cold start -------------------------------------------------------------------------


def _listening(port: int) -> list[str]:
    """Local addresses listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            cols = row.split()
            addr, state = cols[1], cols[3]
            host_hex, port_hex = addr.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                found.append(host_hex)
    return found


@pytest.mark.obligation("S-STDIO-2", "S-STDIO-3", "S-SEC-3")
def test_a_cold_serve_at_debug_level_writes_only_mcp_to_stdout(tmp_path: Path) -> None:
    # No daemon yet: `mcpx serve` starts one (on its defaults: no address given) and says
    # so on stderr; at debug level, with progress and log lines flowing, stdout carries
    # only valid MCP messages.
    state = tmp_path / "state"
    config = tmp_path / ".mcpx.json"
    demo = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
    config.write_text(json.dumps({"mcpServers": {"demo": demo}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env.update(MCPX_STATE_DIR=str(state), MCPX_CONFIG=str(config), MCPX_LOG_LEVEL="debug")
    rev = "2025-06-18"
    progress = _call("demo", "slow", seconds=0.2, steps=2)
    progress["_meta"] = {"progressToken": "p"}
    lines = [
        _request(1, "initialize", _init(rev)),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list"),
        _request(3, "tools/call", progress),
        _request(4, "logging/setLevel", {"level": "debug"}),
        _request(5, "tools/call", _call("demo", "slow", seconds=0.2, steps=1)),
        _modern(6, "server/discover"),
    ]
    answering = {1: "initialize", 2: "tools/list", 3: "tools/call", 4: "logging/setLevel"}
    answering |= {5: "tools/call", 6: "server/discover"}
    pid = None
    h = Host(tmp_path, env)
    try:
        h.send(lines[0])
        h.answer(1, limit=120)  # the daemon's start included
        pid = int(json.loads((state / "daemon.json").read_text())["pid"])
        h.send(*lines[1:])
        for id_ in answering:
            h.answer(id_)
        assert h.close() == 0
        # stderr: mcpx's own words (it started the daemon); stdout: MCP only.
        assert "started the daemon" in h.stderr(), h.stderr()
        assert all(h.raw), h.raw
        for f in h.frames:
            assert isinstance(f, dict) and f.get("jsonrpc") == "2.0", f
            rev_of = MODERN if f.get("id") == 6 else rev
            problems = frame_errors(
                f, rev_of, sender="server", answering=answering.get(f.get("id", 0))
            )
            assert not problems, (f, problems)
        assert {f["id"] for f in h.frames if "id" in f} == set(answering)
        assert any(f.get("method") == "notifications/progress" for f in h.frames)
        # The daemon it started listens on loopback only.
        url = httpx.URL(json.loads((state / "daemon.json").read_text())["url"])
        assert url.host == "127.0.0.1"
        assert _listening(int(url.port or 0)) == ["0100007F"]
    finally:
        h.kill()
        if pid is not None:
            subprocess.run(
                [sys.executable, "-m", "mcpx", "stop"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            try:
                wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=20)
            except WaitTimedOut:
                os.kill(pid, signal.SIGTERM)
