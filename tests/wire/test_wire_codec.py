"""mcpx.wire codec: classification of every shape, decode and batches, builders, dumps/loads."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx.wire import (
    Decoded,
    InternalError,
    InvalidParams,
    InvalidRequest,
    Kind,
    McpError,
    ParseError,
    classify,
    decode,
    dumps,
    error,
    loads,
    notification,
    request,
    result,
)

V = {"jsonrpc": "2.0"}

BAD: list[tuple[object, str]] = [
    # not an object at all
    ([], "a frame must be a JSON object (got array)"),
    ("x", "a frame must be a JSON object (got string)"),
    (1, "a frame must be a JSON object (got integer)"),
    (None, "a frame must be a JSON object (got null)"),
    # jsonrpc member
    ({"method": "m"}, 'jsonrpc must be "2.0" (got nothing)'),
    ({"jsonrpc": "1.0", "method": "m"}, "jsonrpc must be \"2.0\" (got string '1.0')"),
    ({"jsonrpc": 2.0, "method": "m"}, 'jsonrpc must be "2.0" (got float)'),
    ({"jsonrpc": 2, "method": "m"}, 'jsonrpc must be "2.0" (got integer)'),
    ({"jsonrpc": None, "method": "m"}, 'jsonrpc must be "2.0" (got null)'),
    # neither a message nor a response
    ({}, 'jsonrpc must be "2.0"'),
    (V, "a frame must have a method, a result or an error"),
    ({**V, "id": 1}, "a frame must have a method, a result or an error"),
    # requests and notifications
    ({**V, "id": None, "method": "m"}, "id must be a string or an integer (got null)"),
    ({**V, "id": True, "method": "m"}, "id must be a string or an integer (got boolean)"),
    ({**V, "id": False, "method": "m"}, "id must be a string or an integer (got boolean)"),
    ({**V, "id": 1.5, "method": "m"}, "id must be a string or an integer (got float)"),
    ({**V, "id": 1.0, "method": "m"}, "id must be a string or an integer (got float)"),
    ({**V, "id": [1], "method": "m"}, "id must be a string or an integer (got array)"),
    ({**V, "id": {}, "method": "m"}, "id must be a string or an integer (got object)"),
    ({**V, "id": 1, "method": 1}, "method must be a string (got integer)"),
    ({**V, "id": 1, "method": None}, "method must be a string (got null)"),
    ({**V, "method": ["m"]}, "method must be a string (got array)"),
    ({**V, "id": 1, "method": "m", "params": []}, "MCP never uses positional (array) params"),
    ({**V, "method": "m", "params": [1, 2]}, "params must be an object"),
    ({**V, "id": 1, "method": "m", "params": None}, "params must be an object (got null)"),
    ({**V, "id": 1, "method": "m", "params": "p"}, "params must be an object (got string)"),
    ({**V, "method": "m", "params": 3}, "params must be an object (got integer)"),
    ({**V, "id": 1, "method": "m", "result": {}}, "cannot have both a method and a result"),
    ({**V, "method": "m", "error": {}}, "cannot have both a method and a result or error"),
    # results
    ({**V, "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}, "both result and error"),
    ({**V, "result": {}}, "a result must have an id"),
    ({**V, "id": None, "result": {}}, "id must be a string or an integer (got null)"),
    ({**V, "id": True, "result": {}}, "id must be a string or an integer (got boolean)"),
    ({**V, "id": 1, "result": []}, "result must be an object (got array)"),
    ({**V, "id": 1, "result": None}, "result must be an object (got null)"),
    ({**V, "id": 1, "result": "ok"}, "result must be an object (got string)"),
    # errors
    ({**V, "id": True, "error": {"code": 1, "message": "m"}}, "or null (got boolean)"),
    ({**V, "id": 2.5, "error": {"code": 1, "message": "m"}}, "an integer or null (got float)"),
    ({**V, "id": 1, "error": "boom"}, "error must be an object (got string)"),
    ({**V, "id": 1, "error": None}, "error must be an object (got null)"),
    ({**V, "id": 1, "error": {"message": "m"}}, "error.code must be an integer (got nothing)"),
    ({**V, "id": 1, "error": {"code": True, "message": "m"}}, "error.code must be an integer"),
    ({**V, "id": 1, "error": {"code": 1.0, "message": "m"}}, "error.code must be an integer"),
    ({**V, "id": 1, "error": {"code": "1", "message": "m"}}, "error.code must be an integer"),
    ({**V, "id": 1, "error": {"code": 1}}, "error.message must be a string (got nothing)"),
    ({**V, "id": 1, "error": {"code": 1, "message": 2}}, "error.message must be a string"),
]


@pytest.mark.parametrize(("frame", "problem"), BAD)
def test_bad_shapes_are_invalid_requests(frame: object, problem: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        classify(frame)
    assert caught.value.code == -32600
    assert problem in caught.value.message
    assert caught.value.remote is False


# a JSON array is a batch to decode, not a bad single frame
@pytest.mark.parametrize(("frame", "problem"), [b for b in BAD if not isinstance(b[0], list)])
def test_bad_frames_raise_from_decode_too(frame: object, problem: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        decode(dumps(frame), batch_ok=False)
    assert problem in caught.value.message


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [
        ({**V, "id": 7, "method": "m", "params": []}, 7),
        ({**V, "id": "abc", "method": 5}, "abc"),
        ({**V, "id": -3, "result": []}, -3),
        ({**V, "id": None, "method": "m"}, None),
        ({**V, "id": True, "method": "m"}, None),
        ({"id": 9, "method": "m"}, 9),
        ({**V, "method": "m", "params": []}, None),
    ],
)
def test_invalid_request_carries_the_readable_id(frame: object, request_id: object) -> None:
    with pytest.raises(InvalidRequest) as caught:
        classify(frame)
    assert caught.value.request_id == request_id


GOOD: list[tuple[dict[str, Any], Kind]] = [
    ({**V, "id": 1, "method": "ping"}, Kind.REQUEST),
    ({**V, "id": 0, "method": "ping"}, Kind.REQUEST),
    ({**V, "id": -1, "method": "ping"}, Kind.REQUEST),
    ({**V, "id": "", "method": "ping"}, Kind.REQUEST),
    ({**V, "id": "a-b", "method": "tools/call", "params": {"name": "x"}}, Kind.REQUEST),
    ({**V, "id": 2**70, "method": "m"}, Kind.REQUEST),
    ({**V, "id": 1, "method": "m", "params": {}}, Kind.REQUEST),
    ({**V, "method": "notifications/initialized"}, Kind.NOTIFICATION),
    ({**V, "method": "notifications/progress", "params": {"progress": 1}}, Kind.NOTIFICATION),
    ({**V, "method": ""}, Kind.NOTIFICATION),
    ({**V, "id": 1, "result": {}}, Kind.RESULT),
    ({**V, "id": "x", "result": {"tools": [], "nextCursor": None}}, Kind.RESULT),
    ({**V, "id": 1, "error": {"code": -32601, "message": "Method not found"}}, Kind.ERROR),
    ({**V, "id": "x", "error": {"code": 1, "message": "", "data": None}}, Kind.ERROR),
    ({**V, "error": {"code": -32700, "message": "Parse error"}}, Kind.ERROR),
    ({**V, "id": None, "error": {"code": -32700, "message": "Parse error"}}, Kind.ERROR),
    # members JSON-RPC does not define are ignored
    ({**V, "method": "m", "extra": [1]}, Kind.NOTIFICATION),
    ({**V, "id": 1, "result": {}, "params": "ignored"}, Kind.RESULT),
]


@pytest.mark.parametrize(("frame", "kind"), GOOD)
def test_good_shapes_classify(frame: dict[str, Any], kind: Kind) -> None:
    assert classify(frame) is kind


# orjson cannot carry an integer beyond 64 bits, so that frame stays out
@pytest.mark.parametrize(("frame", "kind"), [g for g in GOOD if g[0].get("id") != 2**70])
def test_good_frames_decode_singly(frame: dict[str, Any], kind: Kind) -> None:
    decoded = decode(dumps(frame), batch_ok=False)
    assert decoded == Decoded(messages=[(kind, frame)], errors=[], batch=False)


def test_decode_accepts_str() -> None:
    decoded = decode('{"jsonrpc":"2.0","method":"m"}', batch_ok=False)
    assert decoded.messages == [(Kind.NOTIFICATION, {"jsonrpc": "2.0", "method": "m"})]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"", "line 1 column 1"),
        (b"{", "line 1 column 2"),
        (b'{"jsonrpc": "2.0",}', "line 1"),
        (b"\xff\xfe", "UTF-8"),
        (b'{"a": "\xed\xa0\x80"}', "UTF-8"),
        ("\ud800", "UTF-8"),
        (b"NaN", "line 1"),
        (b"[" * 2000, "depth"),
        (b"1e400", "infinity"),
    ],
)
@pytest.mark.parametrize("batch_ok", [True, False])
def test_not_json_is_a_parse_error(data: bytes | str, where: str, batch_ok: bool) -> None:
    with pytest.raises(ParseError) as caught:
        decode(data, batch_ok=batch_ok)
    assert caught.value.code == -32700
    assert caught.value.message.startswith("invalid JSON: ")
    assert where in caught.value.message


def test_batch_refused_unless_allowed() -> None:
    data = dumps([{**V, "method": "m"}])
    with pytest.raises(InvalidRequest, match="batches are only accepted from 2025-03-26 peers"):
        decode(data, batch_ok=False)
    assert decode(data, batch_ok=True).batch is True


@pytest.mark.parametrize("batch_ok", [True, False])
def test_empty_batch_is_invalid(batch_ok: bool) -> None:
    with pytest.raises(InvalidRequest) as caught:
        decode(b"[]", batch_ok=batch_ok)
    assert caught.value.code == -32600
    expected = "a batch must not be empty" if batch_ok else "batches are only accepted"
    assert expected in caught.value.message


def test_batch_bad_elements_do_not_spoil_the_rest() -> None:
    ping = {**V, "id": 1, "method": "ping"}
    note = {**V, "method": "notifications/initialized"}
    reply = {**V, "id": -1, "result": {}}
    frames: list[object] = [
        ping,
        {**V, "id": 2, "method": "m", "params": []},
        note,
        [ping],
        {**V, "id": None, "method": "m"},
        reply,
        7,
    ]
    decoded = decode(dumps(frames), batch_ok=True)
    assert decoded.batch is True
    assert decoded.messages == [
        (Kind.REQUEST, ping),
        (Kind.NOTIFICATION, note),
        (Kind.RESULT, reply),
    ]
    assert [rid for rid, _ in decoded.errors] == [2, None, None, None]
    assert all(type(err) is InvalidRequest for _, err in decoded.errors)
    messages = [err.message for _, err in decoded.errors]
    assert "positional" in messages[0]
    assert messages[1] == "a frame must be a JSON object (got array)"
    assert messages[2] == "id must be a string or an integer (got null)"
    assert messages[3] == "a frame must be a JSON object (got integer)"


def test_batch_of_only_bad_elements_still_decodes() -> None:
    decoded = decode(b"[1, 2]", batch_ok=True)
    assert decoded.messages == []
    assert len(decoded.errors) == 2
    assert decoded.batch is True


def test_request_builder() -> None:
    assert request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    params = {"name": "x"}
    frame = request("a", "tools/call", params)
    assert frame == {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": params}
    assert frame["params"] is params
    assert request(1, "m", {}) == {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}


def test_notification_builder() -> None:
    assert notification("n") == {"jsonrpc": "2.0", "method": "n"}
    assert notification("n", {"a": 1}) == {"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}


def test_result_builder() -> None:
    assert result(-4, {"tools": []}) == {"jsonrpc": "2.0", "id": -4, "result": {"tools": []}}


def test_error_builder() -> None:
    err = InvalidParams("bad cursor", {"cursor": "x"})
    assert error(3, err) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "bad cursor", "data": {"cursor": "x"}},
    }
    # an unreadable request id: the member is left out, not set to null
    assert error(None, ParseError("nope")) == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "nope"},
    }


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (request(1, "m", {"a": 1}), Kind.REQUEST),
        (request("s", "m"), Kind.REQUEST),
        (notification("n"), Kind.NOTIFICATION),
        (result(1, {}), Kind.RESULT),
        (error(1, McpError("x", code=5)), Kind.ERROR),
        (error(None, InvalidRequest("x")), Kind.ERROR),
    ],
)
def test_built_frames_classify(frame: dict[str, Any], kind: Kind) -> None:
    assert classify(frame) is kind
    assert decode(dumps(frame), batch_ok=False).messages == [(kind, frame)]


def test_dumps_is_compact_and_keeps_member_order() -> None:
    frame = request(1, "m", {"b": 1, "a": [1.5, None, True, "é"]})
    expected = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"b":1,"a":[1.5,null,true,"é"]}}'
    assert dumps(frame) == expected.encode()


@pytest.mark.parametrize("obj", [{1: "non-string key"}, {"big": 2**70}, {"x": object()}])
def test_dumps_of_what_json_cannot_carry_is_internal_error(obj: object) -> None:
    with pytest.raises(InternalError, match="cannot encode as JSON") as caught:
        dumps(obj)
    assert caught.value.code == -32603
    assert isinstance(caught.value.__cause__, TypeError)


def test_loads_bytes_and_str() -> None:
    assert loads(b'{"a":[1,2.5,"x"]}') == {"a": [1, 2.5, "x"]}
    assert loads(' "é" ') == "é"
    with pytest.raises(ParseError, match="invalid JSON"):
        loads(b"{'a': 1}")
