"""/mcp over loopback TCP, fuzzed: frames and headers of every revision, valid and broken.

One real daemon (the demo upstream) for the module, reached through its front door. Each
example is one HTTP request in a context: a fresh legacy session of some revision, a
2026-07-28 stateless request, no session, or a session id nobody minted. The frame is a
request of a method the daemon knows, its params fuzzed, or a near-frame with wrong types;
the headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Session-Id``,
``Accept``, ``Content-Type``, ``Host``, ``Origin``) agree with it, are left out, or are
replaced by odd values; a 2025-03-26 session may send a batch; the body may be no JSON.

Properties:
- the status is one the endpoint documents (``_mcp``, ``_guard``, ``_mcp_replies``):
  200, 202, 400, 403, 404, 405, 409, 415, 421, 429; 500 only with the body of a
  documented upstream failure;
- a 202 has no body; every other body is JSON-RPC (JSON, or an event stream), and each
  of its frames was traced by the daemon and is valid under the strict schema of the
  revision the daemon answered in (a refusal of the front door, which reaches no route
  and is not traced, under the revision a frame sent before any was judged);
- nothing is logged as an error, and ``/health`` answers ``{"ok": true}`` after it;
- after the run, a plain ``tools/call`` still works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    documented_upstream_failure,
    echo_still_works,
    frame_problems,
    healthy,
    stream_frames,
)
from fuzz.strategies import (
    KNOWN_METHODS,
    dumps,
    frames,
    header_text,
    huge_ints,
    mostly,
    one_in,
)
from mcpx.spec import LEGACY, MODERN, REVISIONS
from mcpx.wire import encode_header_value
from support.daemon import _UNJUDGED, Daemon, running_daemon
from support.schemas import frame_errors

NEWEST: Final = MODERN[-1]
# Statuses /mcp and the front door answer with (500 only for an upstream's failure).
DOCUMENTED: Final = frozenset({200, 202, 400, 403, 404, 405, 409, 415, 421, 429, 500})
# Refusals of the front door (_guard): they reach no route, so nothing traces them.
FRONT_DOOR: Final = frozenset({403, 415, 421})


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("fuzz-mcp"), {"demo": DEMO}, DAEMON_SETTINGS) as d:
        yield d


# -- cases -------------------------------------------------------------------


def _name_of(frame: Any) -> str | None:
    params = frame.get("params") if isinstance(frame, dict) else None
    if not isinstance(params, dict):
        return None
    value = params.get("uri" if frame.get("method") == "resources/read" else "name")
    return value if isinstance(value, str) else None


def _odd(header: str) -> st.SearchStrategy[str | None]:
    """A header's value when it does not agree: absent, odd, or another's."""
    specific = {
        "MCP-Protocol-Version": st.sampled_from([*REVISIONS, "2099-01-01", "2026-07-28;x", ""]),
        "Mcp-Method": st.sampled_from([*KNOWN_METHODS, "TOOLS/CALL"]),
        "Mcp-Name": st.sampled_from(["=?base64?!!?=", "=?base64?=", "mcpx_call", "a\tb"]),
        "Mcp-Session-Id": st.sampled_from(["", "0", "x" * 200]),
    }[header]
    return st.one_of(st.none(), specific, header_text)


@dataclass
class Case:
    context: str  # legacy, modern, none, stale
    rev: str | None  # the revision a legacy session is opened at
    http_method: str
    body: bytes
    # On top of the context's own headers (a session's, those a modern body implies).
    headers: dict[str, str] = field(default_factory=dict)
    # Then each of these replaced (None: left out).
    overrides: dict[str, str | None] = field(default_factory=dict)


ACCEPTS: Final = [
    None,
    "application/json",
    "text/event-stream",
    "application/json, text/event-stream",
    "*/*",
    "text/html",
]
_VISIBLE: Final = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
MIRRORED: Final = ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id")


def _implied(payload: Any) -> dict[str, str]:
    """The headers a 2026-07-28 body implies, as a client derives them from it."""
    headers = {"MCP-Protocol-Version": NEWEST}
    method = payload.get("method") if isinstance(payload, dict) else None
    if isinstance(method, str) and _VISIBLE.fullmatch(method):
        headers["Mcp-Method"] = method  # else no client could send it: it is left out
    name = _name_of(payload)
    if name is not None:
        headers["Mcp-Name"] = encode_header_value(name)
    return headers


@st.composite
def cases(draw: st.DrawFn) -> Case:
    context = draw(
        mostly(st.sampled_from(["legacy", "modern"]), st.sampled_from(["none", "stale"]))
    )
    rev = draw(st.sampled_from(LEGACY)) if context == "legacy" else None
    if rev == "2025-03-26" and draw(one_in(3)):
        payload: Any = draw(st.lists(frames(modern=False), max_size=4))
    else:
        payload = draw(frames(context == "modern"))
    body = dumps(payload)
    shape = draw(mostly(st.just("json"), st.sampled_from(["cut", "bytes", "huge id"]), 12))
    if shape == "cut":
        body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
    elif shape == "bytes":
        body = draw(st.binary(max_size=40))
    elif shape == "huge id":
        body = dumps({"jsonrpc": "2.0", "id": draw(huge_ints), "method": "ping"})
    headers = _implied(payload) if context == "modern" else {}
    if context == "stale":
        headers["Mcp-Session-Id"] = draw(header_text)
    accept = draw(st.sampled_from(ACCEPTS))
    if accept is not None:
        headers["Accept"] = accept
    odd_types = st.sampled_from(["application/json; charset=utf-8", "text/plain", "", "json"])
    headers["Content-Type"] = draw(mostly(st.just("application/json"), odd_types, 10))
    overrides = {name: draw(_odd(name)) for name in MIRRORED if draw(one_in(16))}
    extra = draw(st.sampled_from([None] * 27 + ["Origin", "Host", "Sec-Fetch-Site"]))
    if extra == "Origin":
        origins = ["http://evil.example", "null", "http://127.0.0.1"]
        overrides["Origin"] = draw(st.sampled_from(origins))
    elif extra == "Host":
        overrides["Host"] = draw(st.sampled_from(["evil.example", "127.0.0.1", "localhost:1"]))
    elif extra == "Sec-Fetch-Site":
        overrides["Sec-Fetch-Site"] = "cross-site"
    http_method = draw(mostly(st.just("POST"), st.sampled_from(["DELETE", "GET", "PUT"]), 10))
    return Case(context, rev, http_method, body, headers, overrides)


# -- one request ---------------------------------------------------------------


def _session(mcp: httpx.Client, rev: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": rev,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    r = mcp.post("/mcp", json=init)
    assert r.status_code == 200, r.text
    agreed = r.json()["result"]["protocolVersion"]
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if agreed not in ("2024-11-05", "2025-03-26"):  # the header exists from 2025-06-18 on
        headers["MCP-Protocol-Version"] = agreed
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


@dataclass
class Answer:
    status: int
    media: str
    body: bytes
    frames: list[Any]


def _send(mcp: httpx.Client, case: Case, headers: dict[str, str]) -> Answer:
    content = case.body if case.http_method in ("POST", "PUT") else None
    with mcp.stream(case.http_method, "/mcp", content=content, headers=headers) as r:
        media = r.headers.get("content-type", "").partition(";")[0].strip()
        if media == "text/event-stream":
            found = stream_frames(r, first_comment=case.http_method == "GET")
            return Answer(r.status_code, media, b"", found)
        body = r.read()
    try:
        parsed = json.loads(body) if body else []
    except ValueError:
        raise AssertionError(f"{r.status_code} {media}: not JSON: {body[:300]!r}") from None
    return Answer(r.status_code, media, body, parsed if isinstance(parsed, list) else [parsed])


def _check(case: Case, answer: Answer, traced: list[dict[str, Any]]) -> None:
    assert answer.status in DOCUMENTED, answer
    problems = frame_problems(traced)
    assert not problems, "invalid frames:\n" + "\n".join(problems)
    if answer.status == 202 or (answer.status == 200 and case.http_method == "DELETE"):
        assert answer.body == b"" and not answer.frames, answer
        return
    if case.http_method == "GET" and answer.status == 200:
        assert answer.media == "text/event-stream", answer
    else:
        assert answer.frames, f"a {answer.status} without a JSON-RPC body: {answer}"
        assert answer.media in ("application/json", "text/event-stream"), answer
    sent = [line["frame"] for line in traced]
    for frame in answer.frames:
        assert isinstance(frame, dict) and frame.get("jsonrpc") == "2.0", answer
        if frame in sent:
            continue
        # Only the front door answers without tracing (it reaches no route).
        assert answer.status in FRONT_DOOR, f"a frame the daemon did not trace: {frame}"
        assert not frame_errors(frame, _UNJUDGED, sender="server"), frame
    if answer.status == 500:
        assert all(documented_upstream_failure(f) for f in answer.frames), answer


@bounded(150)
@given(case=cases())
def test_mcp_answers_every_frame_validly(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client], case: Case
) -> None:
    mcp, api = http
    watch = Watch(daemon)
    session = _session(mcp, case.rev) if case.rev is not None else {}
    headers = {**session, **case.headers}
    for name, value in case.overrides.items():
        headers.pop(name, None)
        if value is not None:
            headers[name] = value
    answer = _send(mcp, case, headers)
    traced = watch.frames()
    if session:  # it ends with the example (unless the example ended it)
        assert mcp.delete("/mcp", headers=session).status_code in (200, 404)
    _check(case, answer, traced)
    event(f"{case.context}: HTTP {answer.status}")
    event(f"answered with a result: {any('result' in f for f in answer.frames)}")
    assert_unharmed(watch, api)


def test_the_daemon_still_serves_after_the_fuzzing(
    http: tuple[httpx.Client, httpx.Client],
) -> None:
    mcp, api = http
    assert healthy(api)
    assert echo_still_works(mcp) == "still here"
