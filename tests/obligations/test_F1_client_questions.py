"""What mcpx owes an upstream server that asks it questions (roots, sampling,
elicitation; ``input_required`` rounds in 2026-07-28) and that it subscribes to.

The upstream is a scripted stdio server (``ASKER`` below, standard library only,
written to a temporary file): legacy (2025-11-25) by default, 2026-07-28 with
``--modern``. Its tool ``ask`` sends the client the requests it is given and returns
the responses it got (legacy), or answers ``input_required`` with the input requests
it is given and, on the retry, returns what the retry carried (modern). Every frame it
receives from mcpx is logged and, at the end, checked strictly against the revision it
was sent in. Questions are answered by a real daemon's broker (``/v1/questions``), a
real /mcp host session, or, for the client's own mechanics, by a test handler on
mcpx's upstream session.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import pytest

from mcpx.client import Asked
from support.daemon import Daemon, running_daemon
from support.schemas import FrameLog, frame_errors
from support.upstream import Recorder, connected, stdio_server

META = "io.modelcontextprotocol/"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
OLDER = "2025-06-18"  # elicitation without modes: form only
BOTH = "application/json, text/event-stream"

ASKER = (Path(__file__).parents[1] / "fixtures" / "asker_server.py").read_text()


# -- the scripted upstream and its log ------------------------------------------------


def _asker(
    tmp: Path, name: str, *, modern: bool = False, rev: str | None = None
) -> tuple[list[str], Path]:
    """The scripted upstream's command line and its log; ``rev``: the one legacy
    revision it answers ``initialize`` with, whatever it is offered."""
    script = tmp / "asker.py"
    if not script.exists():
        script.write_text(ASKER)
    log = tmp / f"{name}.jsonl"
    flags = (["--modern"] if modern else []) + (["--rev", rev] if rev else [])
    return [sys.executable, str(script), str(log), *flags], log


def _entry(argv: list[str]) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:]}


def _received(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _frame_rev(entry: dict[str, Any]) -> str:
    frame = entry["frame"]
    params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
    if frame.get("method") == "initialize":
        return str(params["protocolVersion"])
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    return str(meta.get(META + "protocolVersion") or entry["rev"])


def _problems(log: Path) -> list[str]:
    """How each frame mcpx sent the scripted upstream fails its revision (strict)."""
    out = []
    for n, entry in enumerate(_received(log)):
        rev = _frame_rev(entry)
        for p in frame_errors(entry["frame"], rev, sender="client", answering=entry["answering"]):
            out.append(f"{log.name} frame {n} ({rev}): {p}\n  {entry['frame']}")
    return out


def _until(check: Callable[[], Any], limit: float = 30.0) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not within the time allowed")


def _text(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


# -- a daemon with a legacy and a modern asker ----------------------------------------


@pytest.fixture(scope="module")
def askers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path, Path]]:
    tmp = tmp_path_factory.mktemp("f1-askers")
    legacy, legacy_log = _asker(tmp, "legacy")
    modern, modern_log = _asker(tmp, "modern", modern=True)
    older, older_log = _asker(tmp, "older", rev=OLDER)
    servers = {"legacy": _entry(legacy), "modern": _entry(modern), "older": _entry(older)}
    with running_daemon(tmp, servers) as d:
        yield d, legacy_log, modern_log
    problems = [p for log in (legacy_log, modern_log, older_log) for p in _problems(log)]
    assert not problems, "frames mcpx sent upstream are invalid:\n" + "\n".join(problems[:20])


def _call(daemon: Daemon, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": server, "tool": tool, "arguments": arguments})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body.get("result", body)


class Brokered:
    """A /v1/call in a thread, blocked on a question the broker holds."""

    def __init__(self, daemon: Daemon, server: str, arguments: dict[str, Any]) -> None:
        self.daemon = daemon
        self.replies: list[httpx.Response] = []
        with daemon.http() as api:
            before = {q["id"] for q in api.get("/v1/questions").json()["questions"]}
            self.thread = threading.Thread(target=self._run, args=(server, arguments), daemon=True)
            self.thread.start()

            def new() -> dict[str, Any] | None:
                pending = api.get("/v1/questions").json()["questions"]
                return next((q for q in pending if q["id"] not in before), None)

            self.question: dict[str, Any] = _until(new)

    def _run(self, server: str, arguments: dict[str, Any]) -> None:
        with self.daemon.http() as api:
            body = {"server": server, "tool": "ask", "arguments": arguments}
            self.replies.append(api.post("/v1/call", json=body))

    def settle(self, how: str, content: Any = None) -> dict[str, Any]:
        """Settled through the broker's API; ``how`` "cli": by ``mcpx elicit answer``."""
        if how == "cli":
            done = self.daemon.cli("elicit", "answer", self.question["id"])
            assert done.returncode == 0, done.stderr
        else:
            with self.daemon.http() as api:
                path = f"/v1/questions/{self.question['id']}/{how}"
                posted = api.post(path, json={"content": content} if how == "answer" else None)
                assert posted.status_code == 200, posted.text
        self.thread.join(timeout=60)
        assert self.replies, "the call did not end"
        body: dict[str, Any] = self.replies[0].json()
        return body.get("result", body)


EXPECTED_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}


# C-ROOTS-1 C-SAMP-1 C-ELIC-1 C-ELIC-2 C-MRTR-11
# C-ROOTS-2 (not offered: roots.listChanged is never declared)
# C-SAMP-2 (not offered: sampling.tools is never declared)
def test_what_mcpx_declares_upstream_it_serves(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    # Legacy: declared once, at initialize; both elicitation modes spelled out.
    init = _text(_call(daemon, "legacy", "init", {}))
    assert init["protocolVersion"] == LEGACY
    assert init["capabilities"] == EXPECTED_CAPS
    # Modern: declared on every request, the one that may ask included (tools/call).
    meta = _text(_call(daemon, "modern", "meta", {}))
    assert meta[META + "clientCapabilities"] == EXPECTED_CAPS
    for entry in _received(modern_log):
        frame = entry["frame"]
        if "method" in frame and "id" in frame:
            caps = frame["params"]["_meta"][META + "clientCapabilities"]
            assert caps == EXPECTED_CAPS, frame
    # And roots are really served: nobody present to ask, mcpx's own (none).
    asked = {"requests": [{"method": "roots/list"}]}
    [reply] = _text(_call(daemon, "legacy", "ask", asked))
    assert reply["result"] == {"roots": []}


# C-SREQ-1 (and a request for an undeclared feature is an error, never a hang)
def test_ping_is_answered_and_undeclared_requests_are_errors(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    requests = [
        {"method": "ping"},
        {"method": "tasks/list"},  # mcpx declared no tasks capability
        {"method": "ping", "params": {"_meta": {"k": "v"}}},
    ]
    started = time.monotonic()
    replies = _text(_call(daemon, "legacy", "ask", {"requests": requests}))
    assert time.monotonic() - started < 60
    assert replies[0]["result"] == {}
    assert replies[2]["result"] == {}
    assert replies[1]["error"]["code"] == -32601, replies[1]
    assert "result" not in replies[1]


# C-SAMP-4 C-SAMP-9: a human (the broker) denies sampling: the server gets error -1.
def test_a_denied_sampling_request_is_error_minus_one(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    message = {"role": "user", "content": {"type": "text", "text": "tell me a secret"}}
    question = {"method": "sampling/createMessage"}
    question["params"] = {"messages": [message], "maxTokens": 10}
    call = Brokered(daemon, "legacy", {"requests": [question]})
    assert call.question["method"] == "sampling/createMessage"
    assert call.question["params"]["messages"] == [message]
    [reply] = _text(call.settle("decline"))
    assert reply["error"]["code"] == -1, reply
    assert "declined" in reply["error"]["message"]


OPAQUE = "e/../1?x=%20\u00fc=="
URL = "/consent?state=" + "x" * 300 + "&return=https%3A%2F%2Fexample.test%2Fdone"


class Hits(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Hits.seen.append(self.path)
        self.send_response(200)
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def watched_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose every request is counted."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{URL}"
    finally:
        server.shutdown()
        server.server_close()


# C-ELIC-11 C-ELIC-12 C-ELIC-13 C-ELIC-18 C-MRTR-10
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_url_elicitation_is_shown_whole_and_never_fetched(
    askers: tuple[Daemon, Path, Path], watched_url: str, server: str
) -> None:
    daemon, _, _ = askers
    params = {"mode": "url", "message": "sign in", "url": watched_url, "elicitationId": OPAQUE}
    if server == "legacy":
        arguments: dict[str, Any] = {
            "requests": [{"method": "elicitation/create", "params": params}]
        }
    else:
        request = {"method": "elicitation/create", "params": params}
        arguments = {"inputRequests": {"login": request}, "requestState": "s"}
    Hits.seen.clear()
    call = Brokered(daemon, server, arguments)
    # The same treatment in both eras: the whole URL, attributed, for the user to examine.
    assert call.question["params"]["url"] == watched_url
    assert call.question["params"]["elicitationId"] == OPAQUE  # carried as it came
    assert call.question["params"]["message"] == f"{server} (via mcpx) asks: sign in"
    shown = daemon.cli("elicit", "show", call.question["id"])
    assert shown.returncode == 0, shown.stderr
    assert f"  url:      {watched_url}" in shown.stdout.splitlines()
    time.sleep(0.5)
    assert Hits.seen == []  # not pre-fetched
    done = call.settle("cli")  # the user says it is done there
    assert Hits.seen == []  # nor opened by mcpx after consent: the user opens it
    if server == "legacy":
        [reply] = _text(done)
        assert reply["result"]["action"] == "accept"
    else:
        retried = _text(done)
        assert retried["params"]["inputResponses"]["login"]["action"] == "accept"


# C-MRTR-12: declined elicitation goes back as its action; a declined sampling request
# ends the call without a retry, and never as a JSON-RPC response.
def test_modern_declines_are_actions_or_no_retry(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    elicit = {"method": "elicitation/create", "params": {"message": "name?"}}
    elicit["params"]["requestedSchema"] = schema
    call = Brokered(daemon, "modern", {"inputRequests": {"who": elicit}})
    retried = _text(call.settle("decline"))
    assert retried["params"]["inputResponses"] == {"who": {"action": "decline"}}

    before = len(_received(modern_log))
    message = {"role": "user", "content": {"type": "text", "text": "hi"}}
    sample = {"method": "sampling/createMessage"}
    sample["params"] = {"messages": [message], "maxTokens": 5}
    call = Brokered(daemon, "modern", {"inputRequests": {"s": sample}})
    ended = call.settle("decline")
    assert ended["error"]["code"] == "upstream_error", ended
    assert "sampling/createMessage was declined" in ended["error"]["message"]
    after = [e["frame"] for e in _received(modern_log)[before:]]
    calls = [f for f in after if f.get("method") == "tools/call"]
    assert len(calls) == 1, calls  # asked once, never retried
    assert [f for f in after if "method" not in f] == []  # no response of any kind


# C-MRTR-11: a question of a kind mcpx did not declare fails the call (a server error).
def test_an_undeclared_kind_of_input_request_is_a_server_error(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, modern_log = askers
    before = len(_received(modern_log))
    bogus = {"inputRequests": {"t": {"method": "tasks/get", "params": {"taskId": "1"}}}}
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": "modern", "tool": "ask", "arguments": bogus})
    error = r.json()["error"]
    assert r.status_code == 502 and error["code"] == "upstream_error", error
    assert error["message"].startswith("modern asked tasks/get, which mcpx cannot answer")
    after = [e["frame"] for e in _received(modern_log)[before:]]
    assert len([f for f in after if f.get("method") == "tools/call"]) == 1, after


def _host_call(
    daemon: Daemon,
    capabilities: dict[str, Any],
    requests: list[dict[str, Any]],
    answer: dict[str, Any],
    *,
    server: str = "legacy",
) -> tuple[list[dict[str, Any]], Any]:
    """A legacy /mcp host calls an asker through ``mcpx_call`` and answers each question
    put to it with ``answer``: the questions it saw (each checked strictly), and what
    the asker got (legacy: its replies; modern: the retry, as ``inputRequests``)."""
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
    asking: dict[str, Any] = {"requests": requests}
    if server == "modern":
        asking = {"inputRequests": {f"r{n}": r for n, r in enumerate(requests)}}
    arguments = {"server": server, "tool": "ask", "arguments": asking}
    call["params"] = {"name": "mcpx_call", "arguments": arguments}
    seen: list[dict[str, Any]] = []
    init_params = {
        "protocolVersion": LEGACY,
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params}
        r = mcp.post("/mcp", json=init)
        headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        mcp.post("/mcp", json=initialized, headers=headers)
        with mcp.stream("POST", "/mcp", json=call, headers={**headers, "Accept": BOTH}) as r:
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                frame = json.loads(line[len("data: ") :])
                seen.append(frame)
                if "method" in frame and "id" in frame:
                    reply = {"jsonrpc": "2.0", "id": frame["id"], "result": answer}
                    assert mcp.post("/mcp", json=reply, headers=headers).status_code == 202
                if frame.get("id") == 5:
                    break
    asked = [f for f in seen if "method" in f and "id" in f]
    for frame in asked:
        assert frame_errors(frame, LEGACY, sender="server") == [], frame
    return asked, json.loads(seen[-1]["result"]["content"][0]["text"])


# C-ELIC-3: no mode means form: a host that declared form elicitation only is asked.
def test_an_elicitation_without_mode_is_a_form(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    question = {"message": "colour?", "requestedSchema": schema}
    answer = {"action": "accept", "content": {"colour": "teal"}}
    requests = [{"method": "elicitation/create", "params": question}]
    [asked], [reply] = _host_call(daemon, {"elicitation": {"form": {}}}, requests, answer)
    assert asked["method"] == "elicitation/create"
    assert asked["params"].get("mode", "form") == "form"
    assert asked["params"]["message"] == "legacy (via mcpx) asks: colour?"
    assert reply["result"] == answer


# C-SAMP-5 C-SAMP-6 C-SAMP-7 (the host's: mcpx picks no model; it forwards the request whole)
def test_model_preferences_and_max_tokens_reach_the_host_unchanged(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "modelPreferences": {
            "hints": [{"name": "sonnet"}, {"name": "gpt"}],
            "intelligencePriority": 0.8,
            "speedPriority": 0.2,
        },
        "maxTokens": 5,
    }
    sampled = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
    requests = [{"method": "sampling/createMessage", "params": params}]
    [asked], [reply] = _host_call(daemon, {"sampling": {}}, requests, sampled)
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"] == params  # hints in their order, maxTokens as asked
    assert reply["result"] == sampled


# C-ELIC-17: a completion for an elicitation mcpx never saw changes nothing.
def test_an_unknown_elicitation_completion_is_ignored(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    note = {
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "never-asked-0000"},
    }
    replies = _text(
        _call(daemon, "legacy", "ask", {"notify": [note], "requests": [{"method": "ping"}]})
    )
    assert replies[0]["result"] == {}
    # The connection is as good as before, and nothing waits in the broker.
    assert _text(_call(daemon, "legacy", "init", {}))["protocolVersion"] == LEGACY
    with daemon.http() as api:
        assert api.get("/v1/questions").json()["questions"] == []


# C-SUB-1: a server that did not declare resources.subscribe is never sent one.
def test_no_subscribe_to_a_server_that_did_not_declare_it(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, legacy_log, _ = askers
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        init_params = {"protocolVersion": LEGACY, "capabilities": {}}
        init_params["clientInfo"] = {"name": "t", "version": "1"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params}
        r = mcp.post("/mcp", json=init)
        headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        listed = mcp.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
            headers=headers,
        ).json()["result"]["resources"]
        [uri] = [r["uri"] for r in listed if "asker" in r["uri"] and "legacy" in r["uri"]]
        sub = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": uri}}
        assert mcp.post("/mcp", json=sub, headers=headers).json()["result"] == {}
        # Something else reaches the server after the subscribe, so it has been read.
        assert _text(_call(daemon, "legacy", "init", {}))["protocolVersion"] == LEGACY
    methods = [e["frame"].get("method") for e in _received(legacy_log)]
    assert "resources/subscribe" not in methods and "resources/unsubscribe" not in methods


# C-SUB-2: a modern server is asked for change notifications only by a listen whose filter
# names what it declared (it declared tools.listChanged only).
def test_a_modern_server_is_listened_to_for_what_it_declared(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, modern_log = askers
    _call(daemon, "modern", "meta", {})
    listens = _until(
        lambda: [
            e["frame"]
            for e in _received(modern_log)
            if e["frame"].get("method") == "subscriptions/listen"
        ]
    )
    assert {json.dumps(f["params"]["notifications"]) for f in listens} == {
        json.dumps({"toolsListChanged": True})
    }
    methods = {e["frame"].get("method") for e in _received(modern_log)}
    assert "resources/subscribe" not in methods


# -- mcpx's upstream session against the modern asker, with a test handler ----------


class Answers:
    """A host behind mcpx that answers each kind, recording what it was asked."""

    def __init__(self, gate: anyio.Event | None = None, wait_for: int = 0) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.gate = gate
        self.wait_for = wait_for

    def capabilities(self, revision: str) -> dict[str, Any]:
        return dict(EXPECTED_CAPS)

    async def answer(self, method: str, params: dict[str, Any], asked: Asked) -> dict[str, Any]:
        self.asked.append((method, params))
        if self.gate is not None:
            if len(self.asked) >= self.wait_for:
                self.gate.set()
            await self.gate.wait()
        if method == "elicitation/create":
            return {"action": "accept", "content": {"answer": params.get("message", "")}}
        if method == "sampling/createMessage":
            return {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"}
        if method == "roots/list":
            return {"roots": [{"uri": "file:///srv/work", "name": "work"}]}
        return {}


def _modern(tmp_path: Path) -> tuple[Any, Path]:
    argv, log = _asker(tmp_path, "session", modern=True)
    return stdio_server("asker", argv), log


FORM = {"type": "object", "properties": {"answer": {"type": "string"}}}
STATE = '{"sub": "x", "exp": 1} eyJhbGciOiJub25lIn0.eyJ1IjoiYSJ9. ==\u00e9\\n'


# C-MRTR-2 C-MRTR-5 C-MRTR-7 C-MRTR-9
@pytest.mark.anyio
async def test_every_input_request_is_answered_in_one_retry(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    requests = {
        "github_login": {
            "method": "elicitation/create",
            "params": {"message": "login?", "requestedSchema": FORM},
        },
        "capital_of_france": {
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "?"}}],
                "maxTokens": 5,
            },
        },
        "where": {"method": "roots/list", "params": {}},
    }
    answers = Answers()
    recorder = Recorder()
    async with connected(server, recorder, sent_frames, handler=answers) as session:
        args = {"inputRequests": requests, "requestState": STATE}
        done = await session.call_tool("ask", args)
    retried = _text(done)
    # Every entry fulfilled, keyed as asked, in the one retry.
    assert set(retried["params"]["inputResponses"]) == set(requests)
    assert retried["params"]["inputResponses"]["where"]["roots"][0]["uri"] == "file:///srv/work"
    assert sorted(m for m, _ in answers.asked) == sorted(r["method"] for r in requests.values())
    # The state went back byte for byte, and never reached the answering side.
    assert retried["params"]["requestState"] == STATE
    assert not any(STATE in json.dumps(p) for _, p in answers.asked)
    # A new id, and the full per-request _meta on the retry.
    calls = [e["frame"] for e in _received(log) if e["frame"].get("method") == "tools/call"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"] == retried["id"]
    meta = calls[1]["params"]["_meta"]
    assert meta[META + "protocolVersion"] == MODERN
    assert meta[META + "clientCapabilities"] == EXPECTED_CAPS
    assert meta[META + "clientInfo"]["name"] == "mcpx"
    assert _problems(log) == []


# C-MRTR-8: two calls in flight, each with its own state and questions: nothing crosses.
@pytest.mark.anyio
async def test_parallel_rounds_keep_their_own_state(tmp_path: Path, sent_frames: FrameLog) -> None:
    server, log = _modern(tmp_path)
    answers = Answers(anyio.Event(), wait_for=2)  # both asked before either is answered
    results: dict[str, Any] = {}
    async with connected(server, Recorder(), sent_frames, handler=answers) as session:

        async def one(tag: str) -> None:
            request = {
                "method": "elicitation/create",
                "params": {"message": tag, "requestedSchema": FORM},
            }
            args = {"inputRequests": {f"k-{tag}": request}, "requestState": f"state-{tag}"}
            results[tag] = _text(await session.call_tool("ask", args))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
    for tag in ("a", "b"):
        params = results[tag]["params"]
        assert params["requestState"] == f"state-{tag}"
        assert params["inputResponses"] == {
            f"k-{tag}": {"action": "accept", "content": {"answer": tag}}
        }
    assert _problems(log) == []


# C-MRTR-13: a request from a 2026-07-28 server gets no response.
@pytest.mark.anyio
async def test_a_modern_servers_request_is_never_answered(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    recorder = Recorder()
    async with connected(server, recorder, sent_frames, handler=Answers()) as session:
        push = [{"method": "ping"}, {"method": "roots/list"}]
        request = {"method": "roots/list", "params": {}}
        args = {"inputRequests": {"r": request}, "push": push}
        done = _text(await session.call_tool("ask", args))
        assert "r" in done["params"]["inputResponses"]
        assert await session.list_tools()  # read by the server after anything mcpx sent
    assert [f for f, _ in recorder.sent if "method" not in f] == []
    assert [e for e in _received(log) if "method" not in e["frame"]] == []
    assert _problems(log) == []


# C-SUB-4 C-SUB-5 C-SUB-6: two listens on one stdio connection, each told only its own; ending
# one sends notifications/cancelled naming its request id.
@pytest.mark.anyio
async def test_listen_streams_are_told_apart_and_ended_by_cancel(
    tmp_path: Path, sent_frames: FrameLog
) -> None:
    server, log = _modern(tmp_path)
    async with connected(server, Recorder(), sent_frames) as session:  # noqa: SIM117
        async with session.listen({"toolsListChanged": True}, reopen=False) as tools:
            async with session.listen(
                {"resourceSubscriptions": ["asker://doc"]}, reopen=False
            ) as docs:
                got_docs = [await docs.receive(), await docs.receive()]
            got_tools = [await tools.receive(), await tools.receive()]
    listens = [
        e["frame"] for e in _received(log) if e["frame"].get("method") == "subscriptions/listen"
    ]
    ids = {json.dumps(f["params"]["notifications"]): f["id"] for f in listens}
    tools_id = ids[json.dumps({"toolsListChanged": True})]
    docs_id = ids[json.dumps({"resourceSubscriptions": ["asker://doc"]})]
    for got, sub in ((got_tools, tools_id), (got_docs, docs_id)):
        assert got[0]["method"] == "notifications/subscriptions/acknowledged"
        assert {n["params"]["_meta"][META + "subscriptionId"] for n in got} == {sub}
    assert got_docs[0]["params"]["notifications"] == {"resourceSubscriptions": ["asker://doc"]}

    def cancels() -> list[Any]:
        return [
            e["frame"]["params"]["requestId"]
            for e in _received(log)
            if e["frame"].get("method") == "notifications/cancelled"
        ]

    assert sorted(map(str, _until(lambda: len(cancels()) >= 2 and cancels()))) == sorted(
        map(str, [tools_id, docs_id])
    )
    assert _problems(log) == []


# C-SUB-8: a modern server started again (its stdio process ended) is listened to again.
def test_a_restarted_modern_server_gets_a_new_listen(askers: tuple[Daemon, Path, Path]) -> None:
    import os
    import signal

    daemon, _, modern_log = askers
    _call(daemon, "modern", "meta", {})

    def listens() -> int:
        found = _received(modern_log)
        return sum(1 for e in found if e["frame"].get("method") == "subscriptions/listen")

    _until(listens)
    with daemon.http() as api:
        [server] = [s for s in api.get("/v1/servers").json()["servers"] if s["name"] == "modern"]
    pids = [i["pid"] for i in server["instances"] if i.get("pid")]
    assert pids, server
    before = listens()
    for pid in pids:  # the asker processes this module's daemon started
        os.kill(pid, signal.SIGTERM)
    # The next call starts it again; the new connection holds a listen of its own.
    _until(lambda: _call_ok(daemon))
    _until(lambda: listens() > before)
    with daemon.http() as api:
        [server] = [s for s in api.get("/v1/servers").json()["servers"] if s["name"] == "modern"]
    assert {i["pid"] for i in server["instances"]} & set(pids) == set()


def _call_ok(daemon: Daemon) -> bool:
    with daemon.http() as api:
        body = {"server": "modern", "tool": "meta", "arguments": {}}
        return api.post("/v1/call", json=body).status_code == 200


# -- questions mcpx refuses at once, and answers it checks before sending -------------

SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 5}
TOOL = {"name": "get_weather", "inputSchema": {"type": "object"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "human"}


def _nothing_held(daemon: Daemon) -> bool:
    with daemon.http() as api:
        return api.get("/v1/questions").json()["questions"] == []


# C-SAMP-3 C-SREQ-4 S-INPUT-15: mcpx never declares sampling.tools, so sampling with tools
# or toolChoice is answered -32602 at once, naming why: never held by the broker, never put
# to a host.
def test_sampling_with_tools_is_refused_at_once(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    requests = [
        {"method": "sampling/createMessage", "params": {**SAMPLE, "tools": [TOOL]}},
        {"method": "sampling/createMessage", "params": {**SAMPLE, "toolChoice": {"mode": "auto"}}},
    ]
    replies = _text(_call(daemon, "legacy", "ask", {"requests": requests}))
    for reply in replies:
        assert reply["error"]["code"] == -32602, reply
        assert "sampling.tools" in reply["error"]["message"]
    assert _nothing_held(daemon)


# C-SAMP-3 (2026-07-28: no reply channel, so the call fails, and is never retried)
def test_modern_sampling_with_tools_ends_the_call(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    before = len(_received(modern_log))
    sample = {"method": "sampling/createMessage", "params": {**SAMPLE, "tools": [TOOL]}}
    with daemon.http() as api:
        body = {"server": "modern", "tool": "ask", "arguments": {"inputRequests": {"s": sample}}}
        r = api.post("/v1/call", json=body)
    assert r.status_code == 502 and "sampling.tools" in r.json()["error"]["message"], r.text
    calls = [e for e in _received(modern_log)[before:] if e["frame"].get("method") == "tools/call"]
    assert len(calls) == 1
    assert _nothing_held(daemon)


# C-SAMP-8 (includeContext may be ignored, in every revision): "thisServer" is not
# refused though mcpx declares no sampling.context; the broker holds it like any other.
def test_include_context_is_not_refused(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    sample = {"method": "sampling/createMessage"}
    sample["params"] = {**SAMPLE, "includeContext": "thisServer"}
    call = Brokered(daemon, "legacy", {"requests": [sample]})
    assert call.question["params"]["includeContext"] == "thisServer"
    [reply] = _text(call.settle("answer", SAMPLED))
    assert reply["result"] == SAMPLED


# C-ELIC-4 C-SREQ-4: a mode other than form (or none) and url is -32602 at once.
def test_an_unknown_elicitation_mode_is_refused_at_once(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    asks = [{"mode": "telepathy", "message": "think"}, {"mode": None, "message": "think"}]
    requests = [{"method": "elicitation/create", "params": p} for p in asks]
    for reply in _text(_call(daemon, "legacy", "ask", {"requests": requests})):
        assert reply["error"]["code"] == -32602, reply
        assert "mode" in reply["error"]["message"]
    assert _nothing_held(daemon)


# C-ELIC-4: a 2025-06-18 server was declared elicitation without modes (form only):
# its url elicitation is -32602 at once; its form one is taken as before.
def test_url_elicitation_where_url_was_not_declared_is_refused(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    url = {"mode": "url", "message": "sign in", "url": "https://example.test/x"}
    url["elicitationId"] = "e1"
    requests = [{"method": "elicitation/create", "params": url}, {"method": "ping"}]
    refused, pong = _text(_call(daemon, "older", "ask", {"requests": requests}))
    assert refused["error"]["code"] == -32602, refused
    assert "elicitation.url" in refused["error"]["message"]
    assert pong["result"] == {}
    form = {"message": "name?", "requestedSchema": FORM}
    call = Brokered(
        daemon, "older", {"requests": [{"method": "elicitation/create", "params": form}]}
    )
    [reply] = _text(call.settle("answer", {"answer": "ada"}))
    assert reply["result"] == {"action": "accept", "content": {"answer": "ada"}}


ROOTS_GIVEN = [
    {"uri": "file:///srv/work", "name": "work"},
    {"uri": "https://example.com/x"},
    {"uri": "file:///srv/../etc"},
    {"uri": "file:///srv/%2e%2e/etc"},
    {"uri": "file:///srv/a..b"},
]
ROOTS_KEPT = [{"uri": "file:///srv/work", "name": "work"}, {"uri": "file:///srv/a..b"}]


# C-ROOTS-3 C-ROOTS-4: a host's roots reach the upstream only as file:// URIs without
# ".." segments; the others are dropped, not the whole answer (a legacy server's request
# and a modern one's input request alike).
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_hosts_roots_are_cut_to_file_uris_without_traversal(
    askers: tuple[Daemon, Path, Path], server: str
) -> None:
    daemon, _, _ = askers
    requests = [{"method": "roots/list", "params": {}}]
    answer = {"roots": ROOTS_GIVEN}
    [asked], got = _host_call(daemon, {"roots": {}}, requests, answer, server=server)
    assert asked["method"] == "roots/list"
    if server == "legacy":
        assert got[0]["result"] == {"roots": ROOTS_KEPT}
    else:
        assert got["params"]["inputResponses"] == {"r0": {"roots": ROOTS_KEPT}}


# C-ELIC-1 (an ElicitResult needs action): a url elicitation answered through
# /v1/questions with empty content goes upstream as {"action": "accept"}; content is
# refused with 400 first, and the question stays open.
def test_a_url_elicitation_answered_through_v1_is_an_accept(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    url = {"mode": "url", "message": "sign in", "url": "https://example.test/x"}
    url["elicitationId"] = "e2"
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "elicitation/create", "params": url}]}
    )
    with daemon.http() as api:
        path = f"/v1/questions/{call.question['id']}/answer"
        wrong = api.post(path, json={"content": {"token": "x"}})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_answer"
    [reply] = _text(call.settle("answer", {}))
    assert reply["result"] == {"action": "accept"}


# C-SAMP-1 (a CreateMessageResult needs role, content, model) and C-ELIC-9: answers given
# through /v1/questions are checked before they are sent; a wrong one is 400 naming
# what is wrong, and the question stays open.
def test_v1_answers_are_checked_before_they_go_upstream(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "sampling/createMessage", "params": SAMPLE}]}
    )
    wrong = [
        ({"text": "hi"}, "text"),
        ({"role": "assistant", "content": {"type": "text", "text": "hi"}}, "model"),
        ({**SAMPLED, "content": {"type": "text"}}, "content.text"),
        ({**SAMPLED, "content": [SAMPLED["content"]]}, "content"),
    ]
    with daemon.http() as api:
        path = f"/v1/questions/{call.question['id']}/answer"
        for content, field in wrong:
            r = api.post(path, json={"content": content})
            assert r.status_code == 400, (content, r.text)
            assert r.json()["error"]["details"]["field"] == field, r.text
        assert api.get(f"/v1/questions/{call.question['id']}").json()["state"] == "pending"
    [reply] = _text(call.settle("answer", SAMPLED))
    assert reply["result"] == SAMPLED
    form = {"message": "name?", "requestedSchema": FORM}
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "elicitation/create", "params": form}]}
    )
    with daemon.http() as api:
        extra = {"content": {"answer": "ada", "age": 3}}
        r = api.post(f"/v1/questions/{call.question['id']}/answer", json=extra)
    assert r.status_code == 400 and r.json()["error"]["details"]["field"] == "age", r.text
    [reply] = _text(call.settle("answer", {"answer": "ada"}))
    assert reply["result"] == {"action": "accept", "content": {"answer": "ada"}}


# S-TASK-20: an upstream's task augmentation (never declared to it) is ignored, and never
# reaches a host: mcpx declares no tasks to hosts.
def test_task_augmentation_never_reaches_a_host(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    task = {"ttl": 60000}
    elicit = {"message": "name?", "requestedSchema": FORM, "task": task}
    answer = {"action": "accept", "content": {"answer": "ada"}}
    requests = [{"method": "elicitation/create", "params": elicit}]
    [asked], [reply] = _host_call(daemon, {"elicitation": {"form": {}}}, requests, answer)
    assert "task" not in asked["params"]
    assert reply["result"] == answer  # the plain result, not a task
    requests = [{"method": "sampling/createMessage", "params": {**SAMPLE, "task": task}}]
    [asked], [reply] = _host_call(daemon, {"sampling": {}}, requests, SAMPLED)
    assert "task" not in asked["params"]
    assert reply["result"] == SAMPLED
