"""2026-07-28 request validation: required _meta keys and mirrored HTTP headers."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.server import check_headers, check_meta
from mcpx.wire import HeaderMismatch, InvalidParams, encode_header_value

V = "io.modelcontextprotocol/protocolVersion"
C = "io.modelcontextprotocol/clientCapabilities"
META = {V: "2026-07-28", C: {}}

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "opts": {
            "type": "object",
            "properties": {"tier": {"type": "string", "x-mcp-header": "Tier"}},
        },
        "query": {"type": "string"},
    },
}


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def call(name: str = "run", **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": META}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def base(method: str = "tools/call", name: str | None = "run") -> dict[str, str]:
    h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


# S-LIFE-18: a missing required _meta field is -32602 naming it.
@pytest.mark.obligation("S-LIFE-18")
@pytest.mark.parametrize(
    ("params", "named"),
    [
        (None, "params"),
        ({}, "_meta"),
        ({"_meta": None}, "_meta"),
        ({"_meta": {C: {}}}, V),
        ({"_meta": {V: "2026-07-28"}}, C),
        ({"_meta": {V: 20260728, C: {}}}, V),
        ({"_meta": {V: "2026-07-28", C: []}}, C),
    ],
)
def test_check_meta_refuses(params: Any, named: str) -> None:
    with pytest.raises(InvalidParams) as info:
        check_meta(params)
    assert info.value.code == -32602
    assert info.value.http_status == 400
    assert named in info.value.message


def test_check_meta_returns_meta() -> None:
    assert check_meta({"_meta": META}) == META


OK_CASES: list[tuple[str, dict[str, str], dict[str, Any]]] = [
    ("no annotated args", base(), call(query="x")),
    ("string", {**base(), "Mcp-Param-Region": "us-west1"}, call(region="us-west1")),
    # S-HTTP-43: header names are case-insensitive.
    ("lowercase names", {k.lower(): v for k, v in base().items()}, call()),
    # S-HTTP-39: decode Base64 before comparing.
    ("base64 name", base(name=b64("wetter-für-köln")), call("wetter-für-köln")),
    (
        "base64 param",
        {**base(), "Mcp-Param-Region": b64("Hello, 世界")},
        call(region="Hello, 世界"),
    ),
    (
        "sentinel-looking value",
        {**base(), "Mcp-Param-Region": encode_header_value("=?base64?x?=")},
        call(region="=?base64?x?="),
    ),
    # S-HTTP-42: integers compare numerically.
    ("42 vs 42.0", {**base(), "Mcp-Param-Limit": "42"}, call(limit=42.0)),
    ("42.0 vs 42", {**base(), "Mcp-Param-Limit": "42.0"}, call(limit=42)),
    ("negative", {**base(), "Mcp-Param-Limit": "-7"}, call(limit=-7)),
    ("boolean true", {**base(), "Mcp-Param-Dry": "true"}, call(dry=True)),
    ("boolean false", {**base(), "Mcp-Param-Dry": "false"}, call(dry=False)),
    ("nested", {**base(), "Mcp-Param-Tier": "gold"}, call(opts={"tier": "gold"})),
    # S-HTTP-41: an absent or null argument means no header is expected.
    ("absent optional", base(), call()),
    ("null optional", base(), call(region=None)),
    # S-HTTP-44: unknown Mcp-Param-* headers are ignored.
    ("unknown param", {**base(), "Mcp-Param-Other": "\x01junk"}, call()),
]


@pytest.mark.obligation("S-HTTP-43", "S-HTTP-39", "S-HTTP-42", "S-HTTP-41", "S-HTTP-44")
@pytest.mark.parametrize(
    ("headers", "frame"), [c[1:] for c in OK_CASES], ids=[c[0] for c in OK_CASES]
)
def test_check_headers_accepts(headers: dict[str, str], frame: dict[str, Any]) -> None:
    check_headers(headers, frame, tool_input_schema=SCHEMA)


def drop(h: dict[str, str], key: str) -> dict[str, str]:
    return {k: v for k, v in h.items() if k != key}


BAD_CASES: list[tuple[str, dict[str, str], dict[str, Any], str]] = [
    # S-HTTP-37: required headers missing.
    (
        "no version",
        drop(base(), "MCP-Protocol-Version"),
        call(),
        "MCP-Protocol-Version header is missing",
    ),
    ("no method", drop(base(), "Mcp-Method"), call(), "Mcp-Method header is missing"),
    ("no name", drop(base(), "Mcp-Name"), call(), "Mcp-Name header is missing"),
    # S-HTTP-33, S-HTTP-38: values that disagree with the body.
    ("version", {**base(), "MCP-Protocol-Version": "2025-11-25"}, call(), "MCP-Protocol-Version"),
    ("method", base("tools/list"), call(), "Mcp-Method header value 'tools/list'"),
    # S-HTTP-43: values are case-sensitive.
    ("method case", base("Tools/Call"), call(), "Mcp-Method"),
    (
        "name",
        base(name="foo"),
        call("bar"),
        "Mcp-Name header value 'foo' does not match body value 'bar'",
    ),
    ("base64 name mismatch", base(name=b64("other")), call("run"), "Mcp-Name header value 'other'"),
    ("raw non-ascii twin", base(name="k\u00f6ln"), call("köln"), "Mcp-Name"),
    ("base64 malformed", base(name="=?base64?!!!?="), call(), "Mcp-Name header is invalid"),
    (
        "base64 not utf-8",
        base(name="=?base64?/w==?="),  # 0xff: not UTF-8
        call(),
        "Mcp-Name header is invalid",
    ),
    (
        "param mismatch",
        {**base(), "Mcp-Param-Region": "eu"},
        call(region="us"),
        "Mcp-Param-Region header value 'eu' does not match body value 'us'",
    ),
    # S-HTTP-41: the body has the value, the header is missing.
    ("param missing", base(), call(region="us"), "Mcp-Param-Region header is missing"),
    ("param without body", {**base(), "Mcp-Param-Region": "us"}, call(), "has no argument region"),
    # S-HTTP-40: a recognised Mcp-Param header with invalid characters.
    (
        "param ctl char",
        {**base(), "Mcp-Param-Region": "us\x01"},
        call(region="us\x01"),
        "Mcp-Param-Region header is invalid",
    ),
    (
        "param non-ascii raw",
        {**base(), "Mcp-Param-Region": "世界"},
        call(region="世界"),
        "Mcp-Param-Region header is invalid",
    ),
    ("number not numeric", {**base(), "Mcp-Param-Limit": "4_2"}, call(limit=42), "Mcp-Param-Limit"),
    ("number differs", {**base(), "Mcp-Param-Limit": "43"}, call(limit=42), "Mcp-Param-Limit"),
    ("boolean spelled True", {**base(), "Mcp-Param-Dry": "True"}, call(dry=True), "Mcp-Param-Dry"),
    ("boolean vs 1", {**base(), "Mcp-Param-Dry": "1"}, call(dry=True), "Mcp-Param-Dry"),
    (
        "nested mismatch",
        {**base(), "Mcp-Param-Tier": "gold"},
        call(opts={"tier": "lead"}),
        "Mcp-Param-Tier",
    ),
]


@pytest.mark.obligation(
    "S-HTTP-37", "S-HTTP-33", "S-HTTP-38", "S-HTTP-43", "S-HTTP-41", "S-HTTP-40"
)
@pytest.mark.parametrize(
    ("headers", "frame", "says"), [c[1:] for c in BAD_CASES], ids=[c[0] for c in BAD_CASES]
)
def test_check_headers_refuses(headers: dict[str, str], frame: dict[str, Any], says: str) -> None:
    with pytest.raises(HeaderMismatch) as info:
        check_headers(headers, frame, tool_input_schema=SCHEMA)
    assert info.value.code == -32020
    assert info.value.http_status == 400
    assert says in info.value.message
    assert info.value.message.startswith("Header mismatch: ")


# S-HTTP-38, S-TASKX-17: Mcp-Name mirrors uri for resources/read and taskId for tasks.
@pytest.mark.obligation("S-HTTP-38", "S-TASKX-17")
@pytest.mark.parametrize(
    ("method", "field"),
    [("resources/read", "uri"), ("prompts/get", "name"), ("tasks/get", "taskId")],
)
def test_name_sources(method: str, field: str) -> None:
    frame = {"id": 1, "method": method, "params": {field: "file:///a b", "_meta": META}}
    check_headers(base(method, b64("file:///a b")), frame, tool_input_schema=None)
    with pytest.raises(HeaderMismatch, match="Mcp-Name"):
        check_headers(base(method, "file:///other"), frame, tool_input_schema=None)


def test_no_name_needed_for_list() -> None:
    frame = {"id": 1, "method": "tools/list", "params": {"_meta": META}}
    check_headers(base("tools/list", None), frame, tool_input_schema=None)


def test_body_name_not_a_string_is_invalid_params() -> None:
    frame = {"id": 1, "method": "tools/call", "params": {"name": 3, "_meta": META}}
    with pytest.raises(InvalidParams, match=r"params\.name"):
        check_headers(base(name="3"), frame, tool_input_schema=None)


def test_invalid_annotations_expect_no_param_headers() -> None:
    bad = {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
    check_headers(base(), call(n=1.5), tool_input_schema=bad)


# S-HTTP-39: whatever the client encodes, the server decodes to the same body value.
@pytest.mark.obligation("S-HTTP-39")
@given(st.text())
def test_encoded_strings_always_match(text: str) -> None:
    try:
        header = encode_header_value(text)
    except InvalidParams:  # lone surrogates have no UTF-8 form
        return
    check_headers(base(name=header), call(text), tool_input_schema=SCHEMA)


# S-HTTP-42: any safe integer matches its decimal and its float spelling.
@pytest.mark.obligation("S-HTTP-42")
@given(st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1))
def test_integers_match_numerically(n: int) -> None:
    check_headers({**base(), "Mcp-Param-Limit": str(n)}, call(limit=n), tool_input_schema=SCHEMA)
    check_headers({**base(), "Mcp-Param-Limit": f"{n}.0"}, call(limit=n), tool_input_schema=SCHEMA)


# RFC 9110 §5.5: whitespace (SP, HTAB) around a field value is not part of it, so it is
# dropped from every mirrored header before the value is decoded and compared.
PADDED_OK_CASES: list[tuple[str, dict[str, str], dict[str, Any]]] = [
    ("version", {**base(), "MCP-Protocol-Version": " 2026-07-28\t"}, call()),
    ("method", base(" \ttools/call  "), call()),
    ("name", base(name="  run \t"), call()),
    ("name, only after", base(name="run\t\t"), call()),
    ("base64 name", base(name="\t" + b64("wetter-für-köln") + " "), call("wetter-für-köln")),
    ("param", {**base(), "Mcp-Param-Region": " us-west1\t"}, call(region="us-west1")),
    (
        "base64 param keeps its own spaces",
        {**base(), "Mcp-Param-Region": "  " + b64(" padded ") + "\t"},
        call(region=" padded "),
    ),
    ("integer", {**base(), "Mcp-Param-Limit": " 42 "}, call(limit=42)),
    ("boolean", {**base(), "Mcp-Param-Dry": "\ttrue "}, call(dry=True)),
    ("nested", {**base(), "Mcp-Param-Tier": " gold "}, call(opts={"tier": "gold"})),
    ("lowercase names", {k.lower(): f" {v} " for k, v in base().items()}, call()),
]


@pytest.mark.obligation("S-HTTP-37", "S-HTTP-38", "S-HTTP-39")
@pytest.mark.parametrize(
    ("headers", "frame"), [c[1:] for c in PADDED_OK_CASES], ids=[c[0] for c in PADDED_OK_CASES]
)
def test_check_headers_ignores_whitespace_around_values(
    headers: dict[str, str], frame: dict[str, Any]
) -> None:
    check_headers(headers, frame, tool_input_schema=SCHEMA)


PADDED_BAD_CASES: list[tuple[str, dict[str, str], dict[str, Any], str]] = [
    ("version", {**base(), "MCP-Protocol-Version": " 2025-11-25 "}, call(), "MCP-Protocol-Version"),
    ("method", base(" tools/list "), call(), "Mcp-Method header value 'tools/list'"),
    (
        "name",
        base(name="  runs \t"),
        call("run"),
        "Mcp-Name header value 'runs' does not match body value 'run'",
    ),
    ("space inside", base(name=" r un "), call("run"), "Mcp-Name header value 'r un'"),
    ("only whitespace", base(name=" \t "), call("run"), "Mcp-Name header value ''"),
    # Padding is never part of a value: a body value's own spaces need Base64.
    ("body's own padding", base(name=" run "), call(" run "), "Mcp-Name header value 'run'"),
    ("tab inside", {**base(), "Mcp-Param-Region": "us\twest"}, call(region="us west"), "Region"),
    ("param", {**base(), "Mcp-Param-Region": " eu "}, call(region="us"), "value 'eu'"),
    # What is inside the sentinel is not padding.
    (
        "space inside base64",
        {**base(), "Mcp-Param-Region": " =?base64? dXM= ?= "},
        call(region="us"),
        "Mcp-Param-Region header is invalid",
    ),
    ("number", {**base(), "Mcp-Param-Limit": " 43 "}, call(limit=42), "Mcp-Param-Limit"),
    # Only SP and HTAB are optional whitespace.
    ("vertical tab", base(name="run\x0b"), call(), "Mcp-Name header is invalid"),
    ("no-break space", base(name="\xa0run"), call(), "Mcp-Name header is invalid"),
    ("newline", {**base(), "Mcp-Param-Region": "us\n"}, call(region="us"), "is invalid"),
]


@pytest.mark.obligation("S-HTTP-38", "S-HTTP-39", "S-HTTP-40")
@pytest.mark.parametrize(
    ("headers", "frame", "says"),
    [c[1:] for c in PADDED_BAD_CASES],
    ids=[c[0] for c in PADDED_BAD_CASES],
)
def test_check_headers_compares_what_is_inside_the_whitespace(
    headers: dict[str, str], frame: dict[str, Any], says: str
) -> None:
    with pytest.raises(HeaderMismatch) as info:
        check_headers(headers, frame, tool_input_schema=SCHEMA)
    assert info.value.code == -32020
    assert says in info.value.message


# S-HTTP-39: whatever the client encodes, padded by anyone on the way, decodes to the body.
@pytest.mark.obligation("S-HTTP-39")
@given(st.text(), st.text(" \t"), st.text(" \t"))
def test_padded_encoded_strings_always_match(text: str, before: str, after: str) -> None:
    try:
        header = encode_header_value(text)
    except InvalidParams:  # lone surrogates have no UTF-8 form
        return
    frame = call(text)
    check_headers(base(name=before + header + after), frame, tool_input_schema=SCHEMA)
