"""What the fuzzing found, one minimal case each, and how mcpx answers it now (issue 27).

Each test states the behaviour wanted. A defect not fixed yet is a strict xfail (only for
a failed assertion) until mcpx does it: fixed, the test passes, strict makes that an
error, and the marker goes. The generated tests keep clear of these inputs (their
nesting stays shallow) so that they guard everything else meanwhile. Fixed so far:

- JSON nested ~960 to 1023 levels deep (within what the parser takes, 1024) in a tool's
  or prompt's arguments ran the schema check's error message out of stack (``repr``):
  a plain-text 500 on /v1, -32603 "internal error" on /mcp and stdio. Arguments nested
  over ``ops._tool_input.MAX_DEPTH`` (64) levels are now the caller's error (/v1 400
  ``invalid_input``, MCP -32602, or ``mcpx_call``'s ``isError``), found before
  jsonschema words a problem and before anything is sent.
- Arguments nested 254+ deep that pass their schema could not be encoded to go upstream
  (orjson writes 254 levels at most), and a tool call said the *upstream* answered with
  that error (C-ERR-6). Refused as above; and a request mcpx cannot encode is mcpx's own
  failure (/v1 500 ``internal_error``), never the upstream's answer.
- An upstream result nested 254+ deep (it parses; it cannot be written back) was a
  plain-text 500 on /mcp and /v1, and dropped the stdio host's whole session: the
  exception escaped from the ``log.frames`` writer and from the reply's encoding. The
  writer never raises now, and the answer becomes the error -32603 for its id where the
  encoding fails (/v1: 502 ``upstream_error``).
- A 2025-03-26 batch with an element that is no valid message (an id of no allowed type
  such as ``1.5``, no ``jsonrpc``, an array) was answered with an error without ``id``
  traced as a 2025-03-26 frame, which that revision's schema does not allow; it is now
  traced as sent before any revision was judged, as the same frame outside a batch is.
  Found by the longer run (``MCPX_FUZZ_EXAMPLES``).

The upstream relaying a malformed ``CallToolResult`` as it came is in
``test_upstream_frames`` (fixed too: refused as the upstream's failure).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import jsonschema
import pytest

from fuzz.helpers import (
    DAEMON_SETTINGS,
    DEMO,
    Watch,
    crashes,
    documented_upstream_failure,
    frame_problems,
)
from mcpx.ops._errors import ERROR_SCHEMA
from support.daemon import Daemon, running_daemon
from support.modern import modern_headers, modern_meta, modern_request

FIXTURE: Final = Path(__file__).resolve().parents[1] / "fixtures" / "fuzz_upstream.py"
UPSTREAM: Final = {"command": sys.executable, "args": [str(FIXTURE)]}
SETTINGS: Final = {**DAEMON_SETTINGS, "pool.restartBackoff": "0s"}
TOO_DEEP_TO_CHECK: Final = 1000  # levels: past the schema checker's stack, within the parser's
TOO_DEEP_TO_WRITE: Final = 300  # levels: past what the encoder writes (254)
PLACEHOLDER: Final = '"@@deep@@"'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deepened(value: Any, depth: int) -> str:
    """``value`` as JSON, its string "@@deep@@" replaced by arrays ``depth`` deep."""
    return json.dumps(value).replace(PLACEHOLDER, nested(depth))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": DEMO, "fl": UPSTREAM}
    with running_daemon(tmp_path_factory.mktemp("fuzz-defects"), servers, SETTINGS) as d:
        yield d


def _v1(mcp: httpx.Client, path: str, body: str) -> httpx.Response:
    # A connection of its own: after a plain 500 the daemon resets a kept-alive one.
    return httpx.post(
        mcp.base_url.join(path), content=body, headers={"Content-Type": "application/json"}
    )


def _mcp(mcp: httpx.Client, method: str, params: dict[str, Any], depth: int) -> httpx.Response:
    body = deepened(modern_request(1, method, params, modern_meta(client="fuzz")), depth)
    headers = {"Content-Type": "application/json", **modern_headers(method, params)}
    return httpx.post(mcp.base_url.join("/mcp"), content=body, headers=headers)


def _refused_as_documented(r: httpx.Response) -> dict[str, Any]:
    """A /v1 refusal of the caller's input: 4xx with the documented error body."""
    assert r.headers.get("content-type", "").startswith("application/json"), r.text[:200]
    body: dict[str, Any] = r.json()
    jsonschema.validate(body, ERROR_SCHEMA)
    assert 400 <= r.status_code < 500, (r.status_code, body)
    return body


def _clean_mcp_answer(r: httpx.Response) -> dict[str, Any]:
    """A 2026-07-28 answer that is no failure of mcpx's: JSON-RPC, and not a 5xx."""
    assert r.headers.get("content-type", "").startswith("application/json"), r.text[:200]
    body: dict[str, Any] = r.json()
    assert r.status_code < 500, (r.status_code, body)
    return body


@pytest.mark.parametrize("route", ["/v1/call", "/v1/prompts/get"])
def test_v1_refuses_arguments_too_deep_to_check(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client], route: str
) -> None:
    mcp, _ = http
    watch = Watch(daemon)
    if route == "/v1/call":
        body = {"server": "demo", "tool": "echo", "arguments": {"text": "@@deep@@"}}
    else:
        body = {"server": "demo", "name": "hello", "arguments": {"name": "@@deep@@"}}
    _refused_as_documented(_v1(mcp, route, deepened(body, TOO_DEEP_TO_CHECK)))
    assert not crashes(watch.log())


def test_mcp_refuses_tool_arguments_too_deep_to_check(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client]
) -> None:
    mcp, _ = http
    watch = Watch(daemon)
    call = {"server": "demo", "tool": "echo", "arguments": {"text": "@@deep@@"}}
    params = {"name": "mcpx_call", "arguments": call}
    body = _clean_mcp_answer(_mcp(mcp, "tools/call", params, TOO_DEEP_TO_CHECK))
    assert "error" in body or body["result"]["isError"], body
    assert not crashes(watch.log())


def test_mcp_refuses_prompt_arguments_too_deep_to_forward(
    http: tuple[httpx.Client, httpx.Client],
) -> None:
    mcp, _ = http
    params = {"name": "demo_hello", "arguments": {"name": "@@deep@@"}}
    body = _clean_mcp_answer(_mcp(mcp, "prompts/get", params, TOO_DEEP_TO_WRITE))
    assert body["error"]["code"] == -32602, body


def test_arguments_too_deep_to_forward_are_not_blamed_on_the_upstream(
    http: tuple[httpx.Client, httpx.Client],
) -> None:
    mcp, _ = http
    # emit takes any object: the arguments pass their schema, then cannot be written.
    body = {"server": "fl", "tool": "emit", "arguments": {"lines": [], "x": "@@deep@@"}}
    refused = _refused_as_documented(_v1(mcp, "/v1/call", deepened(body, TOO_DEEP_TO_WRITE)))
    assert "jsonrpc" not in refused["error"]["details"], refused
    assert "answered" not in refused["error"]["message"], refused


def _deep_result_line() -> str:
    """What the upstream answers: a valid result, but too deep to be written again."""
    result = {"content": [], "structuredContent": {"x": "@@deep@@"}}
    return deepened({"jsonrpc": "2.0", "id": "@@ID@@", "result": result}, TOO_DEEP_TO_WRITE)


@pytest.mark.parametrize("surface", ["/mcp", "/v1/call"])
def test_a_result_too_deep_to_write_is_a_clear_error(
    daemon: Daemon, http: tuple[httpx.Client, httpx.Client], surface: str
) -> None:
    mcp, _ = http
    watch = Watch(daemon)
    call = {"server": "fl", "tool": "emit", "arguments": {"lines": [_deep_result_line()]}}
    if surface == "/v1/call":
        refused = _v1(mcp, surface, json.dumps(call))
        assert refused.headers.get("content-type", "").startswith("application/json"), refused
        assert refused.status_code == 502, refused.text[:200]
        jsonschema.validate(refused.json(), ERROR_SCHEMA)
    else:
        # The answer cannot be written: the error -32603 for its id goes instead, a
        # documented upstream failure (HTTP 500 under 2026-07-28), traced validly.
        params = {"name": "mcpx_call", "arguments": call}
        r = _mcp(mcp, "tools/call", params, 0)
        assert r.headers.get("content-type", "").startswith("application/json"), r.text[:200]
        body = r.json()
        assert (r.status_code, body.get("id")) == (500, 1), body
        assert documented_upstream_failure(body), body
        traced = watch.frames()
        assert body in [line["frame"] for line in traced], "the answer was not traced"
        assert not frame_problems(traced), frame_problems(traced)
    assert not crashes(watch.log(), told="mcpx.client")


def test_a_result_too_deep_to_write_leaves_the_stdio_session_up(daemon: Daemon) -> None:
    call = {"server": "fl", "tool": "emit", "arguments": {"lines": [_deep_result_line()]}}
    meta = modern_meta(client="fuzz")
    lines = [
        modern_request(1, "tools/call", {"name": "mcpx_call", "arguments": call}, meta),
        modern_request(2, "server/discover", {}, meta),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input="".join(json.dumps(x) + "\n" for x in lines).encode(),
        capture_output=True,
        cwd=daemon.home,
        env=daemon.env(),
        timeout=60,
        check=False,
    )
    answers = {f.get("id"): f for f in map(json.loads, done.stdout.decode().splitlines())}
    assert set(answers) == {1, 2}, done.stdout[:300]
    assert documented_upstream_failure(answers[1]), answers[1]  # -32603, mcpx's word


def test_stdio_refusals_are_traced(daemon: Daemon) -> None:
    watch = Watch(daemon)
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", "serve"],
        input=b"not json\n",
        capture_output=True,
        cwd=daemon.home,
        env=daemon.env(),
        timeout=60,
        check=True,
    )
    [written] = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert written["error"]["code"] == -32700
    assert written in [line["frame"] for line in watch.frames()], "not in log.frames"


def test_a_batch_element_with_an_id_of_no_allowed_type_is_answered_validly(
    tmp_path: Path,
) -> None:
    # A daemon of its own: it is checked for invalid frames when it stops.
    with running_daemon(tmp_path, {"demo": DEMO}, SETTINGS) as own:
        watch = Watch(own)
        info = {"name": "fuzz", "version": "1"}
        init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": info}
        with httpx.Client(base_url=own.info["url"], timeout=30) as mcp:
            r = mcp.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
            )
            session = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            mcp.post("/mcp", json=note, headers=session)
            batch = [{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}]
            assert mcp.post("/mcp", json=batch, headers=session).status_code == 200
        problems = frame_problems(watch.frames())
        assert not problems, problems
