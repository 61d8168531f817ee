"""mcpx.wire errors: codes, the registry round trip, HTTP statuses, the data helpers."""

from __future__ import annotations

import copy
import pickle

import pytest

from mcpx.wire import (
    NO_DATA,
    HeaderMismatch,
    InternalError,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
    MissingRequiredClientCapability,
    ParseError,
    ResourceNotFound,
    UnsupportedProtocolVersion,
    UrlElicitationRequired,
    http_status,
)

CODES: list[tuple[type[McpError], int]] = [
    (ParseError, -32700),
    (InvalidRequest, -32600),
    (MethodNotFound, -32601),
    (InvalidParams, -32602),
    (InternalError, -32603),
    (ResourceNotFound, -32002),
    (UrlElicitationRequired, -32042),
    (HeaderMismatch, -32020),
    (MissingRequiredClientCapability, -32021),
    (UnsupportedProtocolVersion, -32022),
]

# data values a peer may send, including JSON null (present, not absent)
DATA: list[object] = [NO_DATA, None, 0, "why", [1, "two"], {"nested": {"deep": [True]}}]


@pytest.mark.parametrize(("cls", "code"), CODES)
def test_each_class_has_its_fixed_code(cls: type[McpError], code: int) -> None:
    err = cls("boom")
    assert err.code == code
    assert isinstance(err, McpError)
    assert err.remote is False
    assert str(err) == "boom"


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize(("cls", "code"), CODES)
def test_registry_round_trip(cls: type[McpError], code: int, data: object) -> None:
    sent = cls("something failed", data)
    back = McpError.from_error(sent.to_error())
    assert type(back) is cls
    assert back.code == code
    assert back.message == "something failed"
    assert back.data == data
    assert back.remote is True
    assert sent.remote is False


def test_to_error_leaves_out_absent_data_but_keeps_null() -> None:
    assert InvalidParams("bad").to_error() == {"code": -32602, "message": "bad"}
    assert InvalidParams("bad", None).to_error() == {"code": -32602, "message": "bad", "data": None}
    assert InvalidParams("bad").has_data is False
    assert InvalidParams("bad", None).has_data is True


@pytest.mark.parametrize("code", [-32000, -32019, -32099, -1, 0, 42, -32768])
def test_unknown_code_rebuilds_a_plain_mcp_error(code: int) -> None:
    back = McpError.from_error({"code": code, "message": "custom", "data": {"x": 1}})
    assert type(back) is McpError
    assert (back.code, back.message, back.data, back.remote) == (code, "custom", {"x": 1}, True)
    assert back.to_error() == {"code": code, "message": "custom", "data": {"x": 1}}


def test_from_error_dispatches_on_the_code_not_the_class() -> None:
    back = ParseError.from_error({"code": -32601, "message": "nope"})
    assert type(back) is MethodNotFound


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (None, "error must be an object (got null)"),
        ([], "error must be an object (got array)"),
        ({"message": "m"}, "error.code must be an integer (got nothing)"),
        ({"code": True, "message": "m"}, "error.code must be an integer (got boolean)"),
        ({"code": -32600.0, "message": "m"}, "error.code must be an integer (got float)"),
        ({"code": "-32600", "message": "m"}, "error.code must be an integer (got string)"),
        ({"code": 1}, "error.message must be a string (got nothing)"),
        ({"code": 1, "message": None}, "error.message must be a string (got null)"),
    ],
)
def test_malformed_error_object_is_a_local_invalid_request(obj: object, problem: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        McpError.from_error(obj)
    assert caught.value.code == -32600
    assert caught.value.message == problem
    assert caught.value.remote is False


def test_bare_mcp_error_needs_a_code() -> None:
    with pytest.raises(TypeError, match="needs a code"):
        McpError("no code")
    assert McpError("with code", code=-32099).code == -32099


def test_subclass_code_cannot_be_changed() -> None:
    with pytest.raises(ValueError, match="always has code -32700"):
        ParseError("x", code=-32600)
    assert ParseError("x", code=-32700).code == -32700


@pytest.mark.parametrize("code", [True, 1.0, "1"])
def test_code_must_be_an_int(code: object) -> None:
    with pytest.raises(TypeError, match="must be an int"):
        McpError("x", code=code)  # type: ignore[arg-type]


HTTP: list[tuple[int, int]] = [
    (-32700, 400),
    (-32600, 400),
    (-32601, 404),
    (-32602, 400),
    (-32603, 500),
    (-32002, 404),
    (-32042, 400),
    (-32020, 400),
    (-32021, 400),
    (-32022, 400),
    (-429, 429),  # mcpx's Throttled
    # anything else: the receiver failed, and a 400/404 would send a probing client
    # back to the legacy transport
    (-32000, 500),
    (-32001, 500),
    (-32099, 500),
    (-32768, 500),
    (-1, 500),
    (0, 500),
    (1, 500),
]


@pytest.mark.parametrize(("code", "status"), HTTP)
def test_http_status(code: int, status: int) -> None:
    assert http_status(code) == status
    assert McpError("x", code=code).http_status == status


def test_unsupported_protocol_version_constructor() -> None:
    err = UnsupportedProtocolVersion.for_versions(("2026-07-28", "2025-11-25"), "1900-01-01")
    assert err.to_error() == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"},
    }
    assert err.supported == ["2026-07-28", "2025-11-25"]
    assert err.requested == "1900-01-01"
    assert err.http_status == 400


@pytest.mark.parametrize("data", [NO_DATA, None, "x", {"supported": "2025-06-18"}, {}])
def test_unsupported_protocol_version_tolerates_odd_remote_data(data: object) -> None:
    err = McpError.from_error({"code": -32022, "message": "m", "data": data})
    assert isinstance(err, UnsupportedProtocolVersion)
    assert err.supported == []
    assert err.requested is None


def test_unsupported_protocol_version_keeps_only_strings_from_supported() -> None:
    data = {"supported": ["2025-06-18", 7, None], "requested": 3}
    err = McpError.from_error({"code": -32022, "message": "m", "data": data})
    assert isinstance(err, UnsupportedProtocolVersion)
    assert err.supported == ["2025-06-18"]
    assert err.requested is None


def test_missing_required_client_capability_constructor() -> None:
    err = MissingRequiredClientCapability.for_capabilities({"elicitation": {}})
    assert err.to_error()["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert err.required_capabilities == {"elicitation": {}}
    assert McpError.from_error({"code": -32021, "message": "m"}).to_error() == {
        "code": -32021,
        "message": "m",
    }


def test_missing_required_client_capability_tolerates_odd_remote_data() -> None:
    err = McpError.from_error({"code": -32021, "message": "m", "data": [1]})
    assert isinstance(err, MissingRequiredClientCapability)
    assert err.required_capabilities == {}


@pytest.mark.parametrize("clone", [lambda e: pickle.loads(pickle.dumps(e)), copy.copy])
@pytest.mark.parametrize(
    "err",
    [
        McpError("plain", {"a": 1}, code=-32099, remote=True),
        InvalidRequest("bad id", request_id=7),
        UnsupportedProtocolVersion.for_versions(["2026-07-28"], "x"),
    ],
)
def test_errors_survive_pickle_and_copy(err: McpError, clone: object) -> None:
    assert callable(clone)
    back = clone(err)
    assert type(back) is type(err)
    assert (back.code, back.message, back.data, back.remote, back.request_id) == (
        err.code,
        err.message,
        err.data,
        err.remote,
        err.request_id,
    )


def test_repr_tells_local_from_remote() -> None:
    assert repr(ParseError("x")) == "ParseError('x', code=-32700, local)"
    remote = McpError.from_error({"code": -32700, "message": "x"})
    assert repr(remote) == "ParseError('x', code=-32700, remote)"
    assert repr(NO_DATA) == "NO_DATA"
