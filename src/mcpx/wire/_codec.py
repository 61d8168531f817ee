"""Frames: bytes to JSON-RPC 2.0 messages as plain dicts, and dicts back to bytes.

Invariants:

- Whatever the input, ``loads``, ``classify`` and ``decode`` raise ``ParseError`` (not
  JSON) or ``InvalidRequest`` (JSON, but not a message MCP accepts), never anything else.
- A message's kind follows from its members alone; no table of outstanding ids is needed.
- Ids are strings or integers, never null, booleans or floats; the one exception is an
  error response, which may carry no id (absent or null) when the request's was unreadable.
- ``params`` and ``result`` are objects: MCP never uses positional (array) params.
- Builders add exactly the members asked for and copy nothing.
- An answer that cannot be encoded (an upstream's result nested past the 254 levels the
  encoder writes) is never lost: the error -32603 for its id goes in its place
  (``in_place_of``, ``dumps_answer``), found where the encoding failed, at no cost to the
  answers that encode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, TypeAlias, cast

import orjson

from ._errors import InternalError, InvalidRequest, McpError, ParseError, error_object_problem
from ._errors import json_type as _json_type

__all__ = [
    "Decoded",
    "Frame",
    "Kind",
    "RequestId",
    "classify",
    "decode",
    "dumps",
    "dumps_answer",
    "error",
    "in_place_of",
    "loads",
    "notification",
    "plain_request",
    "request",
    "result",
    "stand_ins",
]

Frame: TypeAlias = dict[str, Any]
RequestId: TypeAlias = str | int

_BATCH_REFUSED: Final = "batches are only accepted from 2025-03-26 peers"


class Kind(Enum):
    """The four shapes of a JSON-RPC message."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESULT = "result"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Decoded:
    """One transport frame, decoded.

    ``batch`` says the frame was a JSON array, so the answers go back as an array too.
    ``errors`` holds the batch elements that were not valid messages, each with its id when
    one could be read (else None); outside a batch a bad frame raises instead.
    """

    messages: list[tuple[Kind, Frame]] = field(default_factory=list)
    errors: list[tuple[RequestId | None, McpError]] = field(default_factory=list)
    batch: bool = False


def dumps(obj: object) -> bytes:
    """Compact JSON as UTF-8, members in insertion order.

    Raises:
        InternalError: ``obj`` holds something JSON cannot carry (a non-string key, an
            integer beyond 64 bits, an unknown type); orjson's error is chained.
    """
    try:
        return orjson.dumps(obj)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise InternalError(f"cannot encode as JSON: {exc}") from exc


def dumps_answer(message: object) -> tuple[bytes, object]:
    """``message`` (a frame, or a batch's list of them) as ``dumps`` writes it, and what
    was written: ``message`` itself, or ``in_place_of`` it when it cannot be encoded.

    Raises:
        InternalError: ``message`` cannot be encoded and is no response.
    """
    try:
        return orjson.dumps(message), message
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        why = InternalError(f"cannot encode as JSON: {exc}")
    instead = in_place_of(message, why)
    return dumps(instead), instead


def in_place_of(message: object, why: McpError) -> object:
    """What is sent in place of ``message`` (a frame, or a batch's list of them), which
    could not be encoded for ``why``: a response becomes the error -32603 for its id
    (``data.origin`` "mcpx": not the upstream's error), saying why; in a batch, only such
    elements do.

    Raises:
        InternalError: ``message`` is no response (a request, a notification): nothing
            can answer in its place.
    """
    if isinstance(message, list):
        return [_encodable(m, why) for m in message]
    return _unsendable(message, why)


def stand_ins(message: object, sent: object) -> list[Frame]:
    """The frames of ``sent`` (``in_place_of(message, ...)``) that stand in for frames of
    ``message``: the ones to trace as sent."""
    if isinstance(message, list) and isinstance(sent, list):
        pairs = list(zip(message, sent, strict=True))
    else:
        pairs = [(message, sent)]
    return [new for old, new in pairs if old is not new and isinstance(new, dict)]


def _encodable(message: object, why: McpError) -> object:
    try:
        orjson.dumps(message)
    except TypeError:
        return _unsendable(message, why)
    return message


def _unsendable(message: object, why: McpError) -> Frame:
    if not (isinstance(message, dict) and ("result" in message or "error" in message)):
        raise InternalError(why.message)
    request_id = message.get("id")
    # An id is a string or an integer, so it always encodes: the answer still reaches
    # the request it belongs to.
    return error(
        request_id if isinstance(request_id, str | int) else None,
        InternalError(
            f"upstream_error: the upstream's answer could not be sent: {why.message}",
            {"origin": "mcpx"},
        ),
    )


def loads(data: bytes | str) -> object:
    """Parse one JSON text.

    Raises:
        ParseError: ``data`` is not valid UTF-8 or not JSON; the message says what and where.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc


def decode(data: bytes | str, *, batch_ok: bool) -> Decoded:
    """Parse and classify one transport frame: a single message, or a batch (JSON array).

    Only 2025-03-26 has batches, so ``batch_ok`` is true only for such a peer. In a batch,
    each element is classified on its own and a bad one does not spoil the rest.

    Raises:
        ParseError: the frame is not JSON.
        InvalidRequest: a single message is malformed, or a batch is empty or not allowed.
    """
    obj = loads(data)
    if not isinstance(obj, list):
        return Decoded([_classified(obj)])
    if not batch_ok:
        raise InvalidRequest(_BATCH_REFUSED)
    if not obj:
        raise InvalidRequest("a batch must not be empty")
    messages: list[tuple[Kind, Frame]] = []
    errors: list[tuple[RequestId | None, McpError]] = []
    for item in obj:
        try:
            messages.append(_classified(item))
        except InvalidRequest as err:
            errors.append((err.request_id, err))
    return Decoded(messages, errors, batch=True)


def plain_request(data: bytes) -> Frame | None:
    """``data`` as one request frame, when it plainly is one: an object with ``jsonrpc``
    "2.0", a string ``method``, an integer or string ``id``, object ``params`` or none,
    and no ``result`` nor ``error`` (``decode`` takes it as a request too). None for
    anything else, which ``decode`` judges: it costs a host's ``tools/call``, most of
    what it sends, one look instead of every rule."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or obj.get("jsonrpc") != "2.0" or "result" in obj:
        return None
    rid = obj.get("id")
    if type(obj.get("method")) is not str or (type(rid) is not int and type(rid) is not str):
        return None  # (type(): a bool is no integer in JSON)
    if "error" in obj or ("params" in obj and type(obj["params"]) is not dict):
        return None
    return obj


def classify(obj: object) -> Kind:
    """Which kind of JSON-RPC 2.0 message ``obj`` is, judged by its members.

    ``method`` makes a request (with ``id``) or a notification (without); otherwise
    ``result`` makes a result and ``error`` an error. Members JSON-RPC does not define are
    ignored. The raised error's ``request_id`` is the frame's id when it could be read.

    Raises:
        InvalidRequest: ``obj`` is not a valid message; the message names the problem.
    """
    if not isinstance(obj, dict):
        raise InvalidRequest(f"a frame must be a JSON object (got {_json_type(obj)})")
    found = _kind_or_problem(obj)
    if isinstance(found, Kind):
        return found
    raise InvalidRequest(found, request_id=_readable_id(obj))


def request(id: RequestId, method: str, params: Frame | None = None) -> Frame:
    """A request frame; ``params`` is left out when None."""
    frame: Frame = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def notification(method: str, params: Frame | None = None) -> Frame:
    """A notification frame; ``params`` is left out when None."""
    frame: Frame = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def result(id: RequestId, result: Frame) -> Frame:
    """A result response frame."""
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error(id: RequestId | None, err: McpError) -> Frame:
    """An error response frame for ``err``.

    With ``id=None`` (the request's id could not be read) the ``id`` member is left out:
    2025-11-25 and later define exactly that, and none of the revisions' schemas allows null.
    """
    frame: Frame = {"jsonrpc": "2.0"}
    if id is not None:
        frame["id"] = id
    frame["error"] = err.to_error()
    return frame


def _classified(obj: object) -> tuple[Kind, Frame]:
    kind = classify(obj)
    return kind, cast(Frame, obj)  # classify accepted it, so it is a dict


def _kind_or_problem(frame: dict[Any, Any]) -> Kind | str:
    version = frame.get("jsonrpc")
    if not (isinstance(version, str) and version == "2.0"):
        return f'jsonrpc must be "2.0" (got {_shown(frame, "jsonrpc")})'
    if "method" in frame:
        return _request_kind(frame)
    if "result" in frame:
        return _result_kind(frame)
    if "error" in frame:
        return _error_kind(frame)
    return "a frame must have a method, a result or an error"


def _request_kind(frame: dict[Any, Any]) -> Kind | str:
    if "result" in frame or "error" in frame:
        return "a frame cannot have both a method and a result or error"
    if not isinstance(frame["method"], str):
        return f"method must be a string (got {_json_type(frame['method'])})"
    if "params" in frame:
        problem = _params_problem(frame["params"])
        if problem is not None:
            return problem
    if "id" not in frame:
        return Kind.NOTIFICATION
    return _id_problem(frame["id"]) or Kind.REQUEST


def _params_problem(params: object) -> str | None:
    if isinstance(params, dict):
        return None
    if isinstance(params, list):
        return "params must be an object: MCP never uses positional (array) params"
    return f"params must be an object (got {_json_type(params)})"


def _result_kind(frame: dict[Any, Any]) -> Kind | str:
    if "error" in frame:
        return "a response has both result and error"
    if not isinstance(frame["result"], dict):
        return f"result must be an object (got {_json_type(frame['result'])})"
    if "id" not in frame:
        return "a result must have an id (a string or an integer)"
    return _id_problem(frame["id"]) or Kind.RESULT


def _error_kind(frame: dict[Any, Any]) -> Kind | str:
    # An error response may lack an id: the request's may have been unreadable.
    rid = frame.get("id")
    if rid is not None and _id_problem(rid):
        return f"id must be a string, an integer or null (got {_json_type(rid)})"
    return error_object_problem(frame["error"]) or Kind.ERROR


def _id_problem(value: object) -> str | None:
    # bool is an int in Python, never in JSON; MCP forbids null ids on requests.
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return f"id must be a string or an integer (got {_json_type(value)})"


def _readable_id(frame: dict[Any, Any]) -> RequestId | None:
    value = frame.get("id")
    return None if _id_problem(value) else cast(RequestId, value)


def _shown(frame: dict[Any, Any], key: str) -> str:
    if key not in frame:
        return "nothing"
    value = frame[key]
    if isinstance(value, str):
        # The value itself helps here ("1.0" vs "2.0"), but a peer controls its length.
        return f"string {value[:20]!r}"
    return _json_type(value)
