"""mcpx.wire request ids and header values (2026-07-28 Streamable HTTP value encoding)."""

from __future__ import annotations

import pytest

from mcpx.wire import (
    LAST_EVENT_ID,
    MCP_METHOD,
    MCP_NAME,
    MCP_PARAM_PREFIX,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    HeaderMismatch,
    InvalidParams,
    RequestIds,
    decode_header_value,
    encode_header_value,
    header_value_for,
)


def test_request_ids_count_up_from_one() -> None:
    ids = RequestIds()
    assert [next(ids) for _ in range(3)] == [1, 2, 3]
    assert ids.next() == 4


def test_request_ids_negative_count_down_from_minus_one() -> None:
    ids = RequestIds(negative=True)
    assert [next(ids) for _ in range(3)] == [-1, -2, -3]
    assert ids.next() == -4


def test_request_ids_are_unique_and_counters_independent() -> None:
    up, down = RequestIds(), RequestIds(negative=True)
    taken = [up.next() for _ in range(500)] + [down.next() for _ in range(500)]
    assert len(set(taken)) == 1000
    assert 0 not in taken


@pytest.mark.parametrize(
    ("negative", "mine", "not_mine"),
    [
        (False, [1, 2, 3], [0, 4, -1, True, "1", 1.0, None]),
        (True, [-1, -2, -3], [0, -4, 1, "-1", -1.0, None]),
    ],
)
def test_request_ids_know_what_they_issued(
    negative: bool, mine: list[object], not_mine: list[object]
) -> None:
    ids = RequestIds(negative=negative)
    assert not any(ids.issued(v) for v in mine)
    for _ in range(3):
        ids.next()
    assert all(ids.issued(v) for v in mine)
    assert not any(ids.issued(v) for v in not_mine)


def test_header_names() -> None:
    assert MCP_PROTOCOL_VERSION == "MCP-Protocol-Version"
    assert MCP_SESSION_ID == "Mcp-Session-Id"
    assert MCP_METHOD == "Mcp-Method"
    assert MCP_NAME == "Mcp-Name"
    assert MCP_PARAM_PREFIX == "Mcp-Param-"
    assert LAST_EVENT_ID == "Last-Event-ID"


# The spec's own table (streamable-http.mdx, "Encoding examples"), plus edge cases.
ENCODED: list[tuple[str, str]] = [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("a b", "a b"),
    ("~!@#$%^&*()_+`-={}|[]\\:\";'<>?,./", "~!@#$%^&*()_+`-={}|[]\\:\";'<>?,./"),
    ("x", "x"),
    ("", ""),
    (" lead", "=?base64?IGxlYWQ=?="),
    ("trail ", "=?base64?dHJhaWwg?="),
    (" ", "=?base64?IA==?="),
    ("tab\there", "=?base64?dGFiCWhlcmU=?="),
    ("\tlead", "=?base64?CWxlYWQ=?="),
    ("del\x7f", "=?base64?ZGVsfw==?="),
    ("é", "=?base64?w6k=?="),
    ("=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="),
    ("=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="),
    # markers are case-sensitive: this does not look encoded, so it goes as is
    ("=?BASE64?SGk=?=", "=?BASE64?SGk=?="),
]


@pytest.mark.parametrize(("value", "encoded"), ENCODED)
def test_encode_header_value(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


@pytest.mark.parametrize(("value", "encoded"), ENCODED)
def test_decode_header_value(value: str, encoded: str) -> None:
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("=?base64?SGk?=", "malformed Base64"),  # padding missing
        ("=?base64?S Gk=?=", "malformed Base64"),
        ("=?base64?SGk=\t?=", "malformed Base64"),
        ("=?base64?!!!!?=", "malformed Base64"),
        ("=?base64?SG=k?=", "malformed Base64"),
        ("=?base64?/w==?=", "malformed Base64"),  # 0xff is not UTF-8
        ("=?base64?7aCA?=", "malformed Base64"),  # an encoded surrogate is not UTF-8
        ("=?base64?=", "malformed Base64"),  # the markers overlap
        ("line1\nline2", "invalid characters"),
        ("caf\u00e9", "invalid characters"),
        ("nul\x00", "invalid characters"),
        ("del\x7f", "invalid characters"),
    ],
)
def test_decode_malformed_header_value_is_header_mismatch(raw: str, problem: str) -> None:
    with pytest.raises(HeaderMismatch) as caught:
        decode_header_value(raw)
    assert caught.value.code == -32020
    assert problem in caught.value.message
    assert caught.value.http_status == 400


def test_decode_accepts_a_tab_inside_a_plain_value() -> None:
    assert decode_header_value("a\tb") == "a\tb"


def test_encode_refuses_a_lone_surrogate() -> None:
    with pytest.raises(InvalidParams, match="not valid Unicode"):
        encode_header_value("a\ud800b")


@pytest.mark.parametrize(
    ("arg", "header"),
    [
        (None, None),
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("", ""),
        (42, "42"),
        (-7, "-7"),
        (0, "0"),
        (True, "true"),
        (False, "false"),
        (42.0, "42"),
        (-0.0, "0"),
        (2**53 - 1, "9007199254740991"),
        (-(2**53 - 1), "-9007199254740991"),
    ],
)
def test_header_value_for(arg: object, header: str | None) -> None:
    assert header_value_for(arg) == header


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        (2**53, "outside the JavaScript safe range"),
        (-(2**53), "outside the JavaScript safe range"),
        (1.5, "(got float)"),
        (float("nan"), "(got float)"),
        (float("inf"), "(got float)"),
        ([1], "(got array)"),
        ({"a": 1}, "(got object)"),
    ],
)
def test_header_value_for_refuses_what_a_header_cannot_carry(arg: object, problem: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        header_value_for(arg)
    assert problem in caught.value.message
