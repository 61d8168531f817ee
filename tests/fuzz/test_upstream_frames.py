"""Upstream frames read by mcpx's client, fuzzed: what a server answers ``tools/call`` with.

One real daemon for the module, its upstreams two copies of ``tests/fixtures/
fuzz_upstream.py`` (``fl`` legacy, ``fm`` 2026-07-28): a correct handshake, then for a call
of its ``emit`` tool it writes the lines the call's arguments carry, the call's id put in.
The lines are generated here, so Hypothesis drives what the upstream sends: a few lines
before the answer (notifications, a ping to mcpx; or garbage, a response to an id never
sent), then the answer: a valid ``CallToolResult``, a JSON-RPC error, a broken frame, or
nothing. The call comes from a host over /mcp (2026-07-28, or a legacy session of each
revision) or over ``/v1/call``, always with a ``timeout`` of a few seconds.

Properties:
- the host is answered with a valid frame (every frame traced is valid under the strict
  schema of the host's revision) and a documented status;
- after harmless lines, a valid result reaches the host as a result with the same text
  (spelled for its revision); an upstream's error, a broken answer or none at all reach it
  as a clear error (``isError`` naming the ``upstream_*`` failure, or a JSON-RPC error;
  on /v1 a 4xx/502/504 with the documented error body), never as a success;
- nothing is logged as an error, and ``/health`` answers ``{"ok": true}`` after it;
- after the run, a plain call to each upstream still works.

``test_malformed_results_are_not_relayed`` is the same with an answer whose envelope is
right but whose ``CallToolResult`` is not (no ``content``, a block of the wrong shape):
mcpx relayed it as it came, an invalid frame for the host (issue 27). It is the
upstream's failure now, a clear error like a broken answer (``shapes.call_result_problem``).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import jsonschema
import pytest
from hypothesis import Phase, event, example, given, settings
from hypothesis import strategies as st

from fuzz.helpers import (
    DAEMON_SETTINGS,
    Watch,
    assert_unharmed,
    bounded,
    clients,
    frame_problems,
    healthy,
    stream_frames,
)
from fuzz.strategies import any_ids, json_objects, json_values, mostly, one_in
from mcpx.ops._errors import ERROR_SCHEMA
from mcpx.spec import LEGACY, MODERN
from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request

FIXTURE: Final = Path(__file__).resolve().parents[1] / "fixtures" / "fuzz_upstream.py"
SERVERS: Final = {
    "fl": {"command": sys.executable, "args": [str(FIXTURE), "--era", "legacy"]},
    "fm": {"command": sys.executable, "args": [str(FIXTURE), "--era", "modern"]},
}
ID: Final = "@@ID@@"  # the fixture puts the call's id in its place
CALL_TIMEOUT: Final = 3  # seconds; an answer that never comes costs this much
NEWEST: Final = MODERN[-1]
# /mcp answers a tools/call with 200 (a legacy session always; 2026-07-28 unless an error
# frame), or an error frame's status; /v1/call as documented in ops._errors.
MCP_STATUSES: Final = frozenset({200, 400, 404, 429, 500})
V1_ERRORS: Final = frozenset({400, 404, 413, 429, 502, 504})


# An upstream that broke soon after it started is not started again for a while (pool.
# _restarts): here every example starts afresh, so that one's fault is not the next one's.
SETTINGS: Final = {**DAEMON_SETTINGS, "pool.restartBackoff": "0s"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("fuzz-up"), SERVERS, SETTINGS) as d:
        yield d


# -- what the upstream writes --------------------------------------------------

texts = st.text(max_size=30)
b64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
block_annotations = st.fixed_dictionaries(
    {},
    optional={
        "audience": st.lists(st.sampled_from(["user", "assistant"]), max_size=2, unique=True),
        "priority": st.floats(min_value=0, max_value=1),
    },
)
blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
    st.fixed_dictionaries(
        {"type": st.just("text"), "text": texts}, optional={"annotations": block_annotations}
    ),
    st.fixed_dictionaries(
        {"type": st.just("image"), "data": b64, "mimeType": st.just("image/png")}
    ),
    st.fixed_dictionaries(
        {"type": st.just("audio"), "data": b64, "mimeType": st.just("audio/wav")}
    ),
    st.fixed_dictionaries(
        {"type": st.just("resource_link"), "uri": st.just("file:///x"), "name": texts}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("resource"),
            "resource": st.fixed_dictionaries(
                {"uri": st.just("file:///y"), "text": texts},
                optional={"mimeType": st.just("text/plain")},
            ),
        }
    ),
)
call_results = st.fixed_dictionaries(
    {"content": st.lists(blocks, max_size=3)},
    optional={
        "structuredContent": json_objects,
        "isError": st.booleans(),
        "_meta": st.fixed_dictionaries({"x.example/k": json_values}),
    },
)
# Lines that cannot hurt a call: notifications a server may send, and a ping to mcpx.
harmless = st.one_of(
    st.builds(
        lambda level, data: {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": level, "data": data},
        },
        st.sampled_from(["debug", "info", "warning", "error"]),
        json_values,
    ),
    st.builds(
        lambda p: {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "nobody's", "progress": p},
        },
        st.integers(0, 100),
    ),
    st.just({"jsonrpc": "2.0", "method": "notifications/fuzz/unknown", "params": {}}),
    st.builds(lambda n: {"jsonrpc": "2.0", "id": f"srv-{n}", "method": "ping"}, st.integers(0, 9)),
).map(lambda frame: json.dumps(frame))
# Lines that break the protocol: mcpx may give up on the server over them.
harmful = st.one_of(
    st.binary(max_size=40).map(lambda b: b.decode("latin-1").replace("\n", " ")),
    st.sampled_from(["", "{", "[]", "null", "5", '"frame"', "{}", '{"jsonrpc":"2.0"}']),
    st.builds(
        lambda rid: json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": []}}),
        st.one_of(st.integers(1000, 2000), st.just("never-sent")),
    ),
    json_values.map(json.dumps),
)


def _envelope(member: str, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ID, member: value}


error_objects = st.fixed_dictionaries(
    {
        "code": st.one_of(
            st.sampled_from([-32602, -32603, -32601, -32600, -32002, -32042, -32001, -1]),
            st.integers(-(2**31), 2**31 - 1),
        ),
        "message": texts,
    },
    optional={"data": json_values},
)


def _bad_error(value: Any) -> bool:
    """``value`` is no JSON-RPC error object (an integer code and a string message)."""
    if not isinstance(value, dict):
        return True
    code = value.get("code")
    return (
        isinstance(code, bool)
        or not isinstance(code, int)
        or not isinstance(value.get("message"), str)
    )


# Ids mcpx never sends an upstream (its ids are 1, 2, 3, ...): an answer under one answers
# nothing of mcpx's. (A positive integer may be the very id of the call: its answer.)
_other_ids = any_ids.filter(lambda i: isinstance(i, bool) or not isinstance(i, int) or i <= 0)


# The answer's envelope broken (the result inside it fine).
broken = st.one_of(
    st.builds(lambda r: {"jsonrpc": "1.0", "id": ID, "result": r}, call_results),
    st.builds(lambda r: {"id": ID, "result": r}, call_results),
    st.builds(lambda r, e: {**_envelope("result", r), "error": e}, call_results, error_objects),
    st.builds(lambda v: _envelope("result", v), st.one_of(json_values, st.lists(json_values))),
    st.builds(
        lambda e: _envelope("error", e),
        st.one_of(
            json_values,
            st.fixed_dictionaries({"code": texts, "message": texts}),
            st.fixed_dictionaries({"code": st.integers(), "message": json_values}),
        ).filter(_bad_error),
    ),
    st.builds(lambda rid, r: {"jsonrpc": "2.0", "id": rid, "result": r}, _other_ids, call_results),
    st.just({"jsonrpc": "2.0", "id": ID}),
)
# The envelope right, the CallToolResult in it not (the official schema's words).
_TYPES: Final = ("text", "image", "audio", "resource_link", "resource")
malformed: st.SearchStrategy[Any] = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"content": st.one_of(texts, json_objects, st.none())}),
    st.fixed_dictionaries(
        {
            "content": st.lists(
                st.one_of(
                    st.fixed_dictionaries({"type": st.just("text")}),
                    st.fixed_dictionaries({"type": st.just("text"), "text": json_values}).filter(
                        lambda b: not isinstance(b["text"], str)
                    ),
                    st.fixed_dictionaries({"type": texts.filter(lambda t: t not in _TYPES)}),
                    json_values.filter(lambda v: not isinstance(v, dict)),
                ),
                min_size=1,
                max_size=2,
            )
        }
    ),
    st.fixed_dictionaries({"content": st.just([]), "isError": st.one_of(texts, st.integers())}),
)
malformed_answers = malformed.map(lambda r: ("malformed", _envelope("result", r)))
# The smallest: no content at all; a text block without its text.
MISSING: Final = _envelope("result", {})
TEXTLESS: Final = _envelope("result", {"content": [{"type": "text"}]})


@dataclass
class Upstream:
    server: str  # fl or fm
    before: list[str]  # lines written before the answer
    harmful: bool  # one of them breaks the protocol
    kind: str  # valid, error, broken, none, malformed
    answer: dict[str, Any] | None = None  # the answer's frame, ID for its id

    def lines(self) -> list[str]:
        return [*self.before, *([] if self.answer is None else [json.dumps(self.answer)])]

    def sent_result(self) -> dict[str, Any]:
        assert self.answer is not None
        result: dict[str, Any] = self.answer["result"]
        return result


@st.composite
def upstreams(draw: st.DrawFn, answers: st.SearchStrategy[tuple[str, Any]]) -> Upstream:
    server = draw(st.sampled_from(["fl", "fm"]))
    is_harmful = draw(one_in(5))
    before = draw(st.lists(harmless, max_size=2))
    if is_harmful:
        before.insert(draw(st.integers(0, len(before))), draw(harmful))
    kind, answer = draw(answers)
    if kind in ("valid", "malformed") and server == "fm":
        answer = {**answer, "result": {"resultType": "complete", **answer["result"]}}
    return Upstream(server, before, is_harmful, kind, answer)


answers = mostly(
    st.one_of(
        call_results.map(lambda r: ("valid", _envelope("result", r))),
        error_objects.map(lambda e: ("error", _envelope("error", e))),
    ),
    # No answer at all costs the call's whole timeout: rarer still.
    mostly(broken.map(lambda f: ("broken", f)), st.just(("none", None)), 6),
    4,
)


@dataclass
class Host:
    surface: str  # mcp (2026-07-28), legacy (a session of rev), v1
    rev: str = NEWEST
    # Also an event stream: then what the upstream notifies reaches the host on it.
    accept: str = "application/json"


STREAMS: Final = "application/json, text/event-stream"
hosts = st.one_of(
    st.sampled_from(["application/json", STREAMS]).map(lambda a: Host("mcp", NEWEST, a)),
    st.builds(Host, st.just("legacy"), st.sampled_from(LEGACY), st.sampled_from([STREAMS])),
    st.just(Host("v1")),
)


# -- one call ------------------------------------------------------------------


def _arguments(up: Upstream) -> dict[str, Any]:
    call = {"server": up.server, "tool": "emit", "arguments": {"lines": up.lines()}}
    return {**call, "timeout": CALL_TIMEOUT}


def _legacy_session(mcp: httpx.Client, rev: str) -> dict[str, str]:
    info = {"name": "fuzz", "version": "1"}
    init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": info}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert r.status_code == 200, r.text
    agreed = r.json()["result"]["protocolVersion"]
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if agreed not in ("2024-11-05", "2025-03-26"):
        headers["MCP-Protocol-Version"] = agreed
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


@dataclass
class Outcome:
    """What the host got, classed: success (a result, the upstream's), relayed error (the
    upstream's own ``isError`` result), clear error (mcpx's: an ``upstream_*`` failure)."""

    status: int
    body: Any
    kind: str
    texts: list[Any]


def _texts(result: dict[str, Any]) -> list[Any]:
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    return [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]


def _class_result(result: dict[str, Any]) -> str:
    if not result.get("isError"):
        return "success"
    first = _texts(result)[:1]
    mcpx_made = first and isinstance(first[0], str) and first[0].startswith("upstream_")
    return "clear error" if mcpx_made else "relayed error"


def _call(mcp: httpx.Client, host: Host, up: Upstream) -> Outcome:
    arguments = _arguments(up)
    if host.surface == "v1":
        r = mcp.post("/v1/call", json=arguments)
        body = r.json()
        if r.status_code == 200:
            return Outcome(r.status_code, body, _class_result(body), _texts(body))
        assert r.status_code in V1_ERRORS, (r.status_code, body)
        jsonschema.validate(body, ERROR_SCHEMA)
        return Outcome(r.status_code, body, "clear error", [])
    params = {"name": "mcpx_call", "arguments": arguments}
    if host.surface == "mcp":
        frame = modern_request(1, "tools/call", params, modern_meta(client="fuzz"))
        headers = modern_headers("tools/call", params)
    else:
        frame = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = _legacy_session(mcp, host.rev)
    accept = {"Accept": host.accept}
    with mcp.stream("POST", "/mcp", json=frame, headers={**headers, **accept}) as r:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            found = stream_frames(r)
        else:
            found = [json.loads(r.read())]
    if host.surface == "legacy":
        mcp.delete("/mcp", headers=headers)
    assert r.status_code in MCP_STATUSES, (r.status_code, found)
    body = found[-1]
    assert body.get("id") == 1, found
    if "error" in body:
        return Outcome(r.status_code, body, "clear error", [])
    return Outcome(r.status_code, body, _class_result(body["result"]), _texts(body["result"]))


def _in_order(part: list[Any], whole: list[Any]) -> bool:
    rest = iter(whole)
    return all(any(x == y for y in rest) for x in part)


def _expect(host: Host, up: Upstream, got: Outcome) -> None:
    if up.harmful:
        return  # whether mcpx gives up on the server over it is its policy: either is fine
    if up.kind != "valid":
        assert got.kind == "clear error", (up.kind, got)
        return
    sent = up.sent_result()
    wanted = "relayed error" if sent.get("isError") else "success"
    if wanted == "relayed error" and got.kind == "clear error":
        wanted = "clear error"  # its own text happens to begin "upstream_"
    assert got.kind == wanted, (got, sent)
    if host.surface == "legacy":
        # Spelled for an older revision: what it lacks (structuredContent, audio, links)
        # may become text blocks of their own, after or between the upstream's.
        assert _in_order(_texts(sent), got.texts), (got, sent)
    else:
        assert got.texts == _texts(sent), (got, sent)


def _run(daemon: Daemon, mcp: httpx.Client, api: httpx.Client, host: Host, up: Upstream) -> None:
    watch = Watch(daemon)
    got = _call(mcp, host, up)
    traced = watch.frames()
    problems = frame_problems(traced)
    assert not problems, "invalid frames:\n" + "\n".join(problems)
    if host.surface != "v1":
        assert got.body in [line["frame"] for line in traced], "the answer was not traced"
    _expect(host, up, got)
    event(f"{up.kind}{' after a harmful line' if up.harmful else ''}: {got.kind}")
    # The client logs an upstream's protocol violation as an error: the upstream's, by design.
    assert_unharmed(watch, api, told="mcpx.client")


@bounded(50)
@given(host=hosts, up=upstreams(answers))
# No answer at all, which generation seldom gives (it costs the call's timeout).
@example(host=Host("legacy", "2025-06-18", STREAMS), up=Upstream("fl", [], False, "none"))
def test_upstream_answers_reach_the_host_validly(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client], host: Host, up: Upstream
) -> None:
    mcp, api = http
    _run(daemon, mcp, api, host, up)


@pytest.mark.parametrize("server", ["fl", "fm"])
def test_each_upstream_still_answers_after_the_fuzzing(
    http: tuple[httpx.Client, httpx.Client], server: str
) -> None:
    mcp, api = http
    assert healthy(api)
    answer = _envelope("result", {"content": [{"type": "text", "text": "still here"}]})
    if server == "fm":
        answer["result"]["resultType"] = "complete"
    up = Upstream(server, [], False, "valid", answer)
    got = _call(mcp, Host("mcp"), up)
    assert (got.kind, got.texts) == ("success", ["still here"]), got


# -- a malformed CallToolResult is the upstream's failure, not relayed ---------


def test_malformed_results_are_not_relayed(tmp_path: Path) -> None:
    # A daemon of its own: were one relayed, the frames it sends would be invalid, and a
    # daemon is checked for those when it stops. Hypothesis runs inside the test (no
    # fixture of its own), without shrinking: the examples given first are minimal.
    with running_daemon(tmp_path, SERVERS, SETTINGS) as daemon:
        mcp, api = clients(daemon)
        with mcp, api:
            # One failure is enough (reported as itself, not in a group of them).
            @settings(
                bounded(30), phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False
            )
            @given(host=hosts, up=upstreams(malformed_answers))
            @example(host=Host("mcp"), up=Upstream("fl", [], False, "malformed", MISSING))
            @example(host=Host("v1"), up=Upstream("fl", [], False, "malformed", TEXTLESS))
            def relayed(host: Host, up: Upstream) -> None:
                _run(daemon, mcp, api, host, up)

            relayed()
