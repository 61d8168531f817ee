"""What mcpx owes the upstream servers it is a client of: pagination, progress tokens,
cancellation and timeouts, log levels, list caching, tool names (client obligations
C-PAGE, C-PROG, C-CANC, C-LOG, C-CACHE, C-SEC).

The upstream is a scripted MCP server over stdio: this very file, run as a program
(``python test_client_utilities.py --peer legacy|modern --record PATH``; standard
library only at run time). It pages ``tools/list`` in pages of 1, 7, 0 and 3 tools under
odd-looking cursors, has tools that report progress, hang, answer late, send invalid
cancellations, log, and change the tool list; and it records every frame it receives, so
a test can see exactly what mcpx sent. Every frame mcpx sends is validated strictly: to
the upstream (the ``sent_frames`` fixture, or the recorded frames for the daemon's
upstreams) and to hosts (the daemon's frame trace).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
META = "io.modelcontextprotocol/"
# The pages of tools/list: the cursor that asks for each page, its tools, the next cursor.
# Sizes 1, 7, 0 and 3; cursors that look like paths, padding, JSON: opaque all the same.
PAGES: tuple[tuple[str | None, tuple[str, ...], str | None], ...] = (
    (None, ("echo",), "../../x=="),
    ("../../x==", ("Get", "get", "progress", "hang", "late", "noise", "log"), " p 3/?&"),
    (" p 3/?&", (), '{"page": 4}'),
    ('{"page": 4}', ("change", "t10", "t11"), None),
)
TOOL_NAMES = [name for _, names, _ in PAGES for name in names]


# -- the scripted upstream (run as a program) ----------------------------------


def late_sent(record: Path) -> Path:
    """Where the peer notes that it has written the answer of its ``late`` tool."""
    return record.with_name(record.name + ".late-sent")


class Peer:
    """A stdio MCP server of one era that records what it is sent."""

    def __init__(self, era: str, record: Path) -> None:
        self.era = era
        self.record = record.open("a", encoding="utf-8")
        self.lock = threading.Lock()
        self.reads = 0
        self.added = False
        self.listens: list[Any] = []

    def send(self, frame: dict[str, Any]) -> None:
        with self.lock:
            sys.stdout.write(json.dumps(frame) + "\n")
            sys.stdout.flush()

    def result(self, rid: Any, value: dict[str, Any], cache: bool = False) -> None:
        if self.era == "modern":
            value = {"resultType": "complete", **value}
            value["_meta"] = {META + "serverInfo": {"name": "peer", "version": "1"}}
            if cache:
                value |= {"ttlMs": 200, "cacheScope": "public"}
        self.send({"jsonrpc": "2.0", "id": rid, "result": value})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = params
        self.send(frame)

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"tools": {"listChanged": True}, "resources": {}}
        if self.era == "legacy":
            caps["logging"] = {}
        return caps

    def serve(self) -> None:
        for line in sys.stdin:
            frame = json.loads(line)
            with self.lock:
                self.record.write(json.dumps(frame) + "\n")
                self.record.flush()
            if "method" in frame and "id" in frame:
                self.handle(frame["id"], frame["method"], frame.get("params") or {})

    def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        modern = self.era == "modern"
        if method == "server/discover" and modern:
            caps = self.capabilities()
            self.result(rid, {"supportedVersions": [MODERN], "capabilities": caps}, cache=True)
        elif method == "initialize" and not modern:
            version = params.get("protocolVersion")
            value = {"protocolVersion": version, "capabilities": self.capabilities()}
            self.result(rid, value | {"serverInfo": {"name": "peer", "version": "1"}})
        elif method in ("ping", "logging/setLevel") and not modern:
            self.result(rid, {})
        elif method == "tools/list":
            self.list_tools(rid, params)
        elif method == "resources/list":
            self.result(rid, {"resources": [{"uri": "peer://a", "name": "a"}]}, cache=True)
        elif method == "resources/templates/list":
            self.result(rid, {"resourceTemplates": []}, cache=True)
        elif method == "resources/read":
            self.reads += 1
            uri = params.get("uri")
            text = f"content of {uri} #{self.reads}"
            self.result(rid, {"contents": [{"uri": uri, "text": text}]}, cache=True)
        elif method == "subscriptions/listen" and modern:
            self.listens.append(rid)
            agreed = {"notifications": params.get("notifications") or {}}
            self.notify(
                "notifications/subscriptions/acknowledged",
                agreed | {"_meta": {META + "subscriptionId": rid}},
            )
        elif method == "tools/call":
            threading.Thread(target=self.call, args=(rid, params), daemon=True).start()
        else:
            self.error(rid, -32601, f"Method not found: {method}")

    def list_tools(self, rid: Any, params: dict[str, Any]) -> None:
        cursor = params.get("cursor")
        for asked, names, next_cursor in PAGES:
            if cursor == asked:
                tools = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
                if self.added and next_cursor is None:
                    tools.append({"name": "added", "inputSchema": {"type": "object"}})
                page: dict[str, Any] = {"tools": tools}
                if next_cursor is not None:
                    page["nextCursor"] = next_cursor
                self.result(rid, page, cache=True)
                return
        self.error(rid, -32602, f"Invalid cursor: {cursor!r}")

    def text(self, rid: Any, text: str) -> None:
        self.result(rid, {"content": [{"type": "text", "text": text}]})

    def call(self, rid: Any, params: dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if name == "echo":
            self.text(rid, str(args.get("text", "")))
        elif name in ("Get", "get"):
            self.text(rid, "upper" if name == "Get" else "lower")
        elif name == "progress":
            # Progress every 0.2 s for ``seconds``, the last report reaching the total.
            token = meta.get("progressToken")
            steps = max(1, round(float(args.get("seconds", 0.5)) / 0.2))
            for step in range(1, steps + 1):
                time.sleep(0.2)
                if token is not None:
                    report = {"progressToken": token, "progress": step}
                    if step == steps:
                        report["total"] = steps
                    self.notify("notifications/progress", report)
            self.text(rid, json.dumps({"token": token}))
        elif name == "hang":
            return
        elif name == "late":
            time.sleep(float(args.get("seconds", 1)))
            self.text(rid, "late")
            late_sent(Path(self.record.name)).touch()  # the test waits for this
        elif name == "noise":
            self.notify("notifications/cancelled", {"requestId": 424242, "reason": "unknown"})
            self.notify("notifications/cancelled", {"reason": "no request id"})
            self.notify("notifications/cancelled")
            self.notify("notifications/progress", {"progressToken": "nobody", "progress": 1})
            self.text(rid, "after noise")
        elif name == "log":
            level = meta.get(META + "logLevel")
            if self.era == "legacy" or level is not None:
                self.notify("notifications/message", {"level": "info", "data": "peer says hi"})
            self.text(rid, json.dumps({"logLevel": level}))
        elif name == "change":
            self.added = True
            if self.era == "legacy":
                self.notify("notifications/tools/list_changed")
            for sub in self.listens:
                self.notify(
                    "notifications/tools/list_changed", {"_meta": {META + "subscriptionId": sub}}
                )
            self.text(rid, "changed")
        else:
            self.error(rid, -32602, f"Unknown tool: {name}")


def peer_main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", choices=("legacy", "modern"), required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()
    Peer(args.peer, Path(args.record)).serve()
    return 0


if __name__ == "__main__":
    sys.exit(peer_main())


# -- the tests ------------------------------------------------------------------

import httpx  # noqa: E402
import pytest  # noqa: E402

from mcpx.client import UpstreamError, UpstreamTimeout  # noqa: E402
from mcpx.config import ServerConfig  # noqa: E402
from support.daemon import Daemon, running_daemon  # noqa: E402
from support.peers import free_port, running_server, sdk_server_command  # noqa: E402
from support.schemas import FrameLog  # noqa: E402
from support.upstream import (  # noqa: E402
    Recorder,
    connected,
    http_server,
    settings,
    stdio_server,
)
from support.waiting import await_until, wait_until  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]
BOTH = "application/json, text/event-stream"


def peer_argv(era: str, record: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--peer", era, "--record", str(record)]


def peer_config(name: str, era: str, record: Path, **kw: Any) -> ServerConfig:
    return stdio_server(name, peer_argv(era, record), env={"PYTHONPATH": str(TESTS)}, **kw)


def peer_entry(era: str, record: Path) -> dict[str, Any]:
    argv = peer_argv(era, record)
    return {"command": argv[0], "args": argv[1:], "env": {"PYTHONPATH": str(TESTS)}}


def received(record: Path) -> list[dict[str, Any]]:
    """Every frame the peer was sent, in order."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def requests(record: Path, method: str) -> list[dict[str, Any]]:
    return [f for f in received(record) if f.get("method") == method and "id" in f]


def cancels(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f.get("method") == "notifications/cancelled"]


pytestmark = pytest.mark.anyio


# -- pagination (client level) ------------------------------------------------------


@pytest.mark.obligation("C-PAGE-1", "C-PAGE-2", "C-PAGE-5")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_pages_of_any_size_are_followed_with_opaque_cursors(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    recorder = Recorder()
    record = tmp_path / "peer.jsonl"
    async with connected(peer_config("pages", era, record), recorder, sent_frames) as session:
        assert session.negotiated is not None and session.negotiated.era.value == era
        tools = await session.list_tools()
    # Every page aggregated, whatever its size (1, 7, 0, 3); the page without a
    # nextCursor ends it.
    assert [t["name"] for t in tools] == TOOL_NAMES
    sent = [f["params"] for f, _ in recorder.sent if f.get("method") == "tools/list"]
    # Each cursor went back exactly as it came: not parsed, decoded or trimmed.
    assert [p.get("cursor") for p in sent] == [asked for asked, _, _ in PAGES]
    assert "cursor" not in sent[0]
    assert len(requests(record, "tools/list")) == len(PAGES)


@pytest.mark.obligation("C-PAGE-3")
async def test_every_listing_and_every_session_starts_without_a_cursor(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    record = tmp_path / "peer.jsonl"
    server = peer_config("again", "legacy", record)
    for _session in range(2):  # a second connection is a new session
        async with connected(server, Recorder(), sent_frames) as session:
            for _listing in range(2):
                assert [t["name"] for t in await session.list_tools()] == TOOL_NAMES
    cursors = [r["params"].get("cursor") for r in requests(record, "tools/list")]
    # Four full snapshots, each from the beginning: no cursor kept across listings or
    # sessions.
    assert cursors == [asked for asked, _, _ in PAGES] * 4
    assert len(requests(record, "initialize")) == 2


# -- cancellation and timeouts (client level) -------------------------------------------


@pytest.mark.obligation("C-CANC-2")
async def test_initialize_is_never_cancelled_even_when_it_times_out(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    """A server that reads everything and answers nothing: the handshake times out, the
    connection is torn down, and no notifications/cancelled names the initialize."""
    recorder = Recorder()
    hanging = stdio_server("mute", [sys.executable, "-c", "import sys\nfor _ in sys.stdin: pass"])
    config = settings(upstream__protocol="force-initialize", pool__startTimeout="1s")
    with pytest.raises(UpstreamError):
        async with connected(hanging, recorder, sent_frames, config=config):
            pass
    inits = [f for f, _ in recorder.sent if f.get("method") == "initialize"]
    assert len(inits) == 1
    assert cancels([f for f, _ in recorder.sent]) == []


@pytest.mark.obligation("C-CANC-1", "C-CANC-4", "C-CANC-5", "C-CANC-9", "C-CANC-11")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_only_the_timed_out_request_is_cancelled_and_its_late_answer_dropped(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    record = tmp_path / "peer.jsonl"
    recorder = Recorder()
    async with connected(peer_config("late", era, record), recorder, sent_frames) as session:
        for text in ("one", "two"):
            done = await session.call_tool("echo", {"text": text})
            assert done["content"][0]["text"] == text
        with pytest.raises(UpstreamTimeout):
            await session.call_tool("late", {"seconds": 1.0}, timeout=0.3)
        # The answer comes (at 1 s) after the cancel crossed it on the wire: it is
        # dropped, and the connection goes on (no protocol violation, no second delivery).
        # Once the peer has written it, it reaches mcpx before any later answer does.
        await await_until(late_sent(record).exists, timeout=10)
        after = await session.call_tool("echo", {"text": "three"})
        assert after["content"][0]["text"] == "three"
        assert session.conn.broken is None
    calls = {
        f["params"]["arguments"].get("text", f["params"]["name"]): f["id"]
        for f, _ in recorder.sent
        if f.get("method") == "tools/call"
    }
    sent_cancels = cancels([f for f, _ in recorder.sent])
    # Exactly one cancellation (stdio: notifications/cancelled in both eras), for the
    # request that was still in progress; none for the ones already answered.
    assert [c["params"]["requestId"] for c in sent_cancels] == [calls["late"]]
    assert sent_cancels[0]["params"]["reason"].startswith("no answer within")
    assert {calls["one"], calls["two"], calls["three"]}.isdisjoint(
        c["params"]["requestId"] for c in sent_cancels
    )
    assert cancels(received(record)) == sent_cancels


@pytest.mark.obligation("C-CANC-9")
async def test_a_modern_http_request_is_cancelled_by_closing_its_stream(
    sent_frames: FrameLog,
) -> None:
    """The official SDK (2.3.0) found modern over Streamable HTTP: a call past its budget
    is given up by closing its response stream (the transport's abort), never by
    notifications/cancelled; the session goes on."""
    port = free_port()
    recorder = Recorder()
    with running_server(sdk_server_command("2.3.0", "streamable-http", port), port=port):
        server = http_server("sdk-modern", f"http://127.0.0.1:{port}/mcp")
        async with connected(server, recorder, sent_frames) as session:
            assert session.modern and session.conn.cancel_by_closing
            with pytest.raises(UpstreamTimeout):
                await session.call_tool("slow", {"seconds": 3}, timeout=0.5)
            echoed = await session.call_tool("echo", {"text": "on"})
            assert echoed["content"][0]["text"] == "on"
    assert cancels([f for f, _ in recorder.sent]) == []


@pytest.mark.obligation("C-CANC-8")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_invalid_cancellations_from_the_server_are_ignored(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    """notifications/cancelled for an id mcpx never sent, without a requestId, without
    params, and progress for a token nobody holds: all ignored; the call is answered."""
    record = tmp_path / "peer.jsonl"
    async with connected(peer_config("noisy", era, record), Recorder(), sent_frames) as session:
        noisy = await session.call_tool("noise", {})
        assert noisy["content"][0]["text"] == "after noise"
        assert (await session.call_tool("echo", {"text": "fine"}))["content"][0]["text"] == "fine"
        assert session.conn.broken is None


@pytest.mark.obligation("C-PROG-6")
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_progress_does_not_extend_the_budget_past_its_maximum(
    era: str, tmp_path: Path, sent_frames: FrameLog
) -> None:
    """The upstream reports progress every 0.2 s for 5 s: the call still ends at its
    1 s budget (progress never resets it), and is cancelled."""
    record = tmp_path / "peer.jsonl"
    recorder = Recorder()
    async with connected(peer_config("chatty", era, record), recorder, sent_frames) as session:
        call = {"name": "progress", "arguments": {"seconds": 5}, "_meta": {"progressToken": "p"}}
        with pytest.raises(UpstreamTimeout):
            await session.request("tools/call", call, timeout=1)
        heard = [p for m, p in recorder.notifications if m == "notifications/progress"]
        assert heard and {p["progressToken"] for p in heard} == {"p"}
        assert all("total" not in p for p in heard)  # the call was nowhere near its end
    assert len(cancels([f for f, _ in recorder.sent])) == 1


# -- through the daemon --------------------------------------------------------------


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("records")
    return {name: base / f"{name}.jsonl" for name in ("legacy", "modern", "changing")}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, records: dict[str, Path]) -> Iterator[Daemon]:
    servers = {
        "legacy": peer_entry("legacy", records["legacy"]),
        "modern": peer_entry("modern", records["modern"]),
        "changing": peer_entry("modern", records["changing"]),
    }
    with running_daemon(tmp_path_factory.mktemp("f2"), servers) as d:
        yield d
    # Every frame the daemon sent its upstreams, strictly valid in the upstream's revision.
    log = FrameLog()
    for name, record in records.items():
        for frame in received(record):
            rev = (frame.get("params") or {}).get("_meta", {}).get(META + "protocolVersion")
            rev = rev or (LEGACY if name == "legacy" else MODERN)
            log.sent(frame, rev, sender="client")
    log.assert_valid()


def _events(r: httpx.Response) -> list[dict[str, Any]]:
    if r.headers["content-type"].startswith("application/json"):
        return [r.json()]
    return [json.loads(x[len("data: ") :]) for x in r.text.splitlines() if x.startswith("data: ")]


def _modern_call(
    mcp: httpx.Client, server: str, tool: str, arguments: dict[str, Any], meta: dict[str, Any]
) -> list[dict[str, Any]]:
    params = {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
        "_meta": {META + "protocolVersion": MODERN, META + "clientCapabilities": {}, **meta},
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
    headers |= {"Mcp-Name": "mcpx_call", "Accept": BOTH}
    frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return _events(mcp.post("/mcp", json=frame, headers=headers))


def _answer_text(frames: list[dict[str, Any]]) -> str:
    result = frames[-1]["result"]
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.mark.obligation("C-PROG-1", "C-PROG-2")
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_colliding_host_progress_tokens_go_upstream_distinct(
    daemon: Daemon, records: dict[str, Path], server: str
) -> None:
    """Three hosts at once, all with the progress token "same": upstream each call has a
    token of mcpx's own, a string, distinct from every other active one; each host gets
    its progress back under its own token."""
    got: list[list[dict[str, Any]]] = []

    def host() -> None:
        with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
            got.append(
                _modern_call(mcp, server, "progress", {"seconds": 1.0}, {"progressToken": "same"})
            )

    threads = [threading.Thread(target=host) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert len(got) == 3
    upstream_tokens = [json.loads(_answer_text(frames))["token"] for frames in got]
    assert all(isinstance(t, str) for t in upstream_tokens)
    assert len(set(upstream_tokens)) == 3 and "same" not in upstream_tokens
    calls = [
        r for r in requests(records[server], "tools/call") if r["params"]["name"] == "progress"
    ]
    sent_tokens = [r["params"]["_meta"]["progressToken"] for r in calls[-3:]]
    assert sorted(sent_tokens) == sorted(upstream_tokens)
    for frames in got:
        progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
        assert progress and {p["progressToken"] for p in progress} == {"same"}


@pytest.mark.obligation("C-PROG-3", "C-CANC-8")
def test_progress_for_a_token_nobody_holds_is_not_relayed(daemon: Daemon) -> None:
    """The peer's noise: progress for a token mcpx never issued, and invalid
    cancellations. The host with a progress token of its own hears none of it."""
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        frames = _modern_call(mcp, "modern", "noise", {}, {"progressToken": "mine"})
    assert _answer_text(frames) == "after noise"
    assert [f for f in frames if "method" in f] == []


@pytest.mark.obligation("C-CANC-9", "C-CANC-10", "C-CANC-11", "C-CANC-12")
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_per_request_timeout_cancels_the_upstream_request(
    daemon: Daemon, records: dict[str, Path], server: str
) -> None:
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": server, "tool": "hang", "timeout": 0.5})
    assert r.status_code == 504 and "within 0.5s" in r.json()["error"]["message"]
    hang = [r for r in requests(records[server], "tools/call") if r["params"]["name"] == "hang"]

    def cancelled() -> list[dict[str, Any]]:
        told = cancels(received(records[server]))
        return [c for c in told if c["params"]["requestId"] == hang[-1]["id"]]

    # The cancellation follows the timeout at once.
    found = wait_until(cancelled, timeout=5)
    assert len(found) == 1 and "0.5s" in found[0]["params"]["reason"]


@pytest.mark.obligation("C-CACHE-1")
def test_a_read_is_never_answered_from_another_reads_result(
    daemon: Daemon, records: dict[str, Path]
) -> None:
    """The modern peer marks every read cacheable for a while (ttlMs, public): a read of
    another URI, and a repeated read, still go upstream and get their own answer."""
    with daemon.http() as api:
        texts = [
            api.post("/v1/resources/read", json={"server": "modern", "uri": uri}).json()[
                "contents"
            ][0]["text"]
            for uri in ("peer://a", "peer://b", "peer://a")
        ]
    uris = [t.split(" #")[0].removeprefix("content of ") for t in texts]
    assert uris == ["peer://a", "peer://b", "peer://a"]
    counts = [int(t.split("#")[1]) for t in texts]
    assert counts == sorted(set(counts))  # three upstream reads, none served again
    sent = [r["params"]["uri"] for r in requests(records["modern"], "resources/read")]
    assert sent[-3:] == ["peer://a", "peer://b", "peer://a"]


@pytest.mark.obligation("C-CACHE-8")
def test_an_idle_gateway_does_not_poll_its_upstreams(
    daemon: Daemon, records: dict[str, Path]
) -> None:
    """The peer's lists say ttlMs 200: an idle gateway does not take that as a polling
    interval (nothing is listed again while nothing asks)."""
    with daemon.http() as api:
        assert api.get("/v1/tools", params={"server": "modern"}).status_code == 200
        before = len(requests(records["modern"], "tools/list"))
        assert before >= len(PAGES)
        time.sleep(2.0)  # ten times the ttlMs
        assert api.get("/v1/tools", params={"server": "modern"}).status_code == 200
    assert len(requests(records["modern"], "tools/list")) == before


@pytest.mark.obligation("C-CACHE-12")
def test_a_list_change_makes_the_next_listing_fetch_again(
    daemon: Daemon, records: dict[str, Path]
) -> None:
    record = records["changing"]
    with daemon.http() as api:
        names = [
            t["name"] for t in api.get("/v1/tools", params={"server": "changing"}).json()["tools"]
        ]
        assert "added" not in names and "change" in names
        listed = len(requests(record, "tools/list"))
        # mcpx holds a listen stream for the tool changes the modern peer declared.
        assert requests(record, "subscriptions/listen")
        r = api.post("/v1/call", json={"server": "changing", "tool": "change"})
        assert r.json()["content"][0]["text"] == "changed"

        def names_now() -> set[str]:
            tools = api.get("/v1/tools", params={"server": "changing"}).json()["tools"]
            return {t["name"] for t in tools}

        # The notification arrives within moments.
        wait_until(lambda: "added" in names_now(), timeout=10, interval=0.1)
    assert len(requests(record, "tools/list")) > listed
    # The fresh listing is a full snapshot: it starts without a cursor.
    assert "cursor" not in requests(record, "tools/list")[listed]["params"]


@pytest.mark.obligation("C-LOG-1", "C-LOG-2", "C-LOG-3")
def test_log_levels_sent_upstream_are_valid_and_follow_the_host(
    daemon: Daemon, records: dict[str, Path]
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        # A 2026-07-28 host asking for debug: the modern upstream is asked for debug on
        # that request, and the log line reaches the host.
        frames = _modern_call(mcp, "modern", "log", {}, {META + "logLevel": "debug"})
        assert json.loads(_answer_text(frames)) == {"logLevel": "debug"}
        assert any(f.get("method") == "notifications/message" for f in frames)
        # A legacy host's logging/setLevel becomes the per-request level upstream.
        params = {"protocolVersion": LEGACY, "capabilities": {}}
        params["clientInfo"] = {"name": "t", "version": "1"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        r = mcp.post("/mcp", json=init)
        headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Accept": BOTH}
        headers["MCP-Protocol-Version"] = LEGACY
        level = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel"}
        mcp.post("/mcp", json={**level, "params": {"level": "notice"}}, headers=headers)
        args = {"server": "modern", "tool": "log", "arguments": {}}
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        call["params"] = {"name": "mcpx_call", "arguments": args}
        legacy_frames = _events(mcp.post("/mcp", json=call, headers=headers))
    # mcpx's own level (log.level: info) is more verbose than notice: it is what is asked.
    assert json.loads(_answer_text(legacy_frames)) == {"logLevel": "info"}
    levels = [
        r["params"]["_meta"].get(META + "logLevel")
        for r in requests(records["modern"], "tools/call")
    ]
    # Every modern request carries a level, and only valid LoggingLevel values.
    assert levels and all(lv in LEVELS for lv in levels)
    # The legacy upstream declared logging: it was told mcpx's level once, validly.
    set_levels = requests(records["legacy"], "logging/setLevel")
    assert [s["params"]["level"] for s in set_levels] == ["info"]


@pytest.mark.obligation("C-SEC-6")
def test_tool_names_differing_only_in_case_stay_distinct(daemon: Daemon) -> None:
    with daemon.http() as api:
        tools = api.get("/v1/tools", params={"server": "legacy"}).json()["tools"]
        names = [t["name"] for t in tools]
        assert names.count("Get") == 1 and names.count("get") == 1
        for name, said in (("Get", "upper"), ("get", "lower")):
            r = api.post("/v1/call", json={"server": "legacy", "tool": name})
            assert r.status_code == 200, r.text
            assert r.json()["content"][0]["text"] == said
        described = api.get("/v1/tools/legacy/Get")
        assert described.status_code == 200 and described.json()["name"] == "Get"


@pytest.mark.obligation("C-SEC-5", "C-SEC-11")
def test_servers_claiming_one_server_info_name_stay_apart(
    daemon: Daemon, records: dict[str, Path]
) -> None:
    """All three upstreams call themselves "peer" in serverInfo: mcpx tells them apart by
    their configured names only, offers each one's echo under that name, and routes each
    call to the server named."""
    with daemon.http() as api:
        servers = {s["name"] for s in api.get("/v1/servers").json()["servers"]}
        assert {"legacy", "modern", "changing"} <= servers
        tools = api.get("/v1/tools").json()["tools"]
        echoes = sorted(t["server"] for t in tools if t["name"] == "echo")
        assert echoes == ["changing", "legacy", "modern"]
        for name in ("legacy", "modern"):
            r = api.post(
                "/v1/call", json={"server": name, "tool": "echo", "arguments": {"text": name}}
            )
            assert r.json()["content"][0]["text"] == name
    for name in ("legacy", "modern"):
        texts = [
            c["params"]["arguments"].get("text")
            for c in requests(records[name], "tools/call")
            if c["params"]["name"] == "echo"
        ]
        assert texts == [name]
