"""Property tests for mcpx.wire: no input escapes as anything but an McpError, round trips."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import mcpx.wire
from mcpx.wire import (
    InvalidRequest,
    Kind,
    McpError,
    ParseError,
    classify,
    decode,
    decode_header_value,
    dumps,
    encode_header_value,
    error,
    header_value_for,
    loads,
    notification,
    plain_request,
    request,
    result,
)

# Bounded and deterministic enough for CI; no example database written into the tree.
bounded = settings(deadline=None, database=None)

int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)  # what orjson carries
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    int64,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=4)
ids = st.one_of(st.text(), int64)

# Frames built from the members JSON-RPC knows, each present or not, each any JSON value:
# far more of them get past the first checks than random values do.
near_frames = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), json_values),
        "id": st.one_of(ids, json_values),
        "method": st.one_of(st.text(), json_values),
        "params": st.one_of(json_objects, json_values),
        "result": st.one_of(json_objects, json_values),
        "error": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={"code": int64 | json_values, "message": st.text() | json_values},
            ),
            json_values,
        ),
    },
)


def _check_decode(data: bytes, batch_ok: bool) -> None:
    try:
        decoded = decode(data, batch_ok=batch_ok)
    except (ParseError, InvalidRequest) as err:
        assert type(err) in (ParseError, InvalidRequest)
        assert err.remote is False
        return
    if decoded.batch:
        assert batch_ok
        assert decoded.messages or decoded.errors
    else:
        assert len(decoded.messages) == 1
        assert decoded.errors == []
    for kind, frame in decoded.messages:
        assert classify(frame) is kind


@bounded
@given(st.binary(), st.booleans())
def test_random_bytes_only_raise_parse_error_or_invalid_request(data: bytes, ok: bool) -> None:
    _check_decode(data, ok)


@bounded
@given(st.one_of(json_values, near_frames, st.lists(near_frames, max_size=4)), st.booleans())
def test_random_json_only_raises_invalid_request(value: Any, ok: bool) -> None:
    _check_decode(dumps(value), ok)


@bounded
@given(st.one_of(json_values, near_frames, st.lists(near_frames, max_size=2)), st.booleans())
def test_plain_request_takes_only_what_decode_takes_as_one_request(value: Any, ok: bool) -> None:
    data = dumps(value)
    plain = plain_request(data)
    if plain is None:
        return
    assert decode(data, batch_ok=ok).messages == [(Kind.REQUEST, plain)]


def test_plain_request_takes_a_plain_call_and_leaves_the_rest_to_decode() -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    assert plain_request(dumps(call) + b"\n") == call
    assert plain_request(dumps({**call, "id": "a"})) == {**call, "id": "a"}
    for other in (
        {**call, "id": True},  # a bool is no integer in JSON
        {**call, "id": None},
        {**call, "id": 1.0},
        {**call, "params": []},
        {**call, "result": {}},
        {**call, "error": {}},
        {**call, "jsonrpc": "1.0"},
        {k: v for k, v in call.items() if k != "id"},  # a notification
        [call],  # a batch
    ):
        assert plain_request(dumps(other)) is None, other
    assert plain_request(b"{") is None and plain_request(b"\n") is None


@bounded
@given(st.one_of(json_values, near_frames))
def test_classify_returns_a_kind_or_raises_invalid_request(value: object) -> None:
    try:
        kind = classify(value)
    except InvalidRequest as err:
        assert err.code == -32600
        assert err.message
        return
    assert isinstance(kind, Kind)
    assert isinstance(value, dict)
    assert value["jsonrpc"] == "2.0"


valid_frames = st.one_of(
    st.tuples(st.builds(request, ids, st.text(), st.none() | json_objects), st.just(Kind.REQUEST)),
    st.tuples(
        st.builds(notification, st.text(), st.none() | json_objects),
        st.just(Kind.NOTIFICATION),
    ),
    st.tuples(st.builds(result, ids, json_objects), st.just(Kind.RESULT)),
    st.tuples(
        st.builds(
            error,
            st.none() | ids,
            st.builds(
                McpError,
                st.text(),
                json_values,
                code=int64,
            ),
        ),
        st.just(Kind.ERROR),
    ),
)


@bounded
@given(valid_frames)
def test_valid_frames_round_trip(frame_and_kind: tuple[dict[str, Any], Kind]) -> None:
    frame, kind = frame_and_kind
    assert loads(dumps(frame)) == frame
    assert classify(frame) is kind
    assert decode(dumps(frame), batch_ok=False).messages == [(kind, frame)]


@bounded
@given(st.lists(valid_frames, min_size=1, max_size=5))
def test_valid_batches_round_trip(frames: list[tuple[dict[str, Any], Kind]]) -> None:
    decoded = decode(dumps([f for f, _ in frames]), batch_ok=True)
    assert decoded.batch is True
    assert decoded.errors == []
    assert decoded.messages == [(k, f) for f, k in frames]


@bounded
@given(st.text())
def test_header_values_round_trip(value: str) -> None:
    encoded = encode_header_value(value)
    assert decode_header_value(encoded) == value
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert encoded == encoded.strip()


@bounded
@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E)))
def test_plain_visible_ascii_is_sent_as_is(value: str) -> None:
    looks_encoded = value.startswith("=?base64?") and value.endswith("?=")
    assert (encode_header_value(value) == value) is not looks_encoded


@bounded
@given(st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1))
def test_safe_integers_render_in_decimal(value: int) -> None:
    rendered = header_value_for(value)
    assert rendered is not None
    assert int(decode_header_value(rendered)) == value


BANNED = {"anyio", "asyncio", "httpx", "starlette"}


def test_wire_sources_import_no_async_or_http_library() -> None:
    package = Path(mcpx.wire.__file__).parent
    found: set[str] = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    assert "orjson" in found  # the scan sees real imports
    assert not found & BANNED


def test_importing_wire_loads_no_async_or_http_library() -> None:
    code = f"import sys, mcpx.wire; print(sorted(set({sorted(BANNED)!r}) & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
