"""Validation of a 2026-07-28 request: its required ``_meta`` and its mirrored headers.

Invariants:

- A request without ``_meta`` or a required ``_meta`` key is malformed: -32602 naming
  the key (S-LIFE-18), never guessed around.
- On Streamable HTTP every header that mirrors the body must agree with it, or the request
  is refused with -32020 naming the header (S-HTTP-33/37/38): a router in front of mcpx may
  have acted on the header, so a disagreement is a security problem, not a typo.
- ``Mcp-Name`` and ``Mcp-Param-*`` values are decoded from the Base64 sentinel before
  they are compared (S-HTTP-39); a value with invalid characters is refused (S-HTTP-40).
- Optional whitespace (spaces and tabs) around a mirrored header's value is not part of it
  (RFC 9110 §5.5): it is dropped before the value is decoded or compared, so a Base64
  sentinel may be padded too. What is inside the value is compared as it came.
- Header names compare case-insensitively, values case-sensitively (S-HTTP-43).
  ``Mcp-Param-*`` headers no annotated parameter claims are ignored (S-HTTP-44).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from mcpx.config import LOG_LEVELS
from mcpx.shapes import InvalidHeaderAnnotation, ParamHeader, param_headers
from mcpx.wire import (
    MCP_METHOD,
    MCP_NAME,
    MCP_NAME_SOURCES,
    MCP_PROTOCOL_VERSION,
    HeaderMismatch,
    InvalidParams,
    decode_header_value,
)

from ._conn import META_CAPABILITIES, META_LOG_LEVEL, META_VERSION

__all__ = ["NAME_SOURCES", "check_headers", "check_meta"]

# Which body field Mcp-Name mirrors, per method: the one table in wire.
NAME_SOURCES: Final[Mapping[str, str]] = MCP_NAME_SOURCES
# RFC 9110 §5.5: OWS, the optional whitespace around a field value (SP and HTAB only).
_OWS: Final = " \t"
# A JSON number, as a header would spell one; Decimal alone would also take "4_2" or "NaN".
_NUMBER: Final = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def check_meta(params: object) -> Mapping[str, Any]:
    """The request's ``_meta``, once it holds what 2026-07-28 requires.

    Raises:
        InvalidParams: no ``params``/``_meta`` object, or a required key is missing or
            of the wrong type.
    """
    if not isinstance(params, Mapping):
        raise InvalidParams("Invalid params: a 2026-07-28 request needs params with _meta")
    meta = params.get("_meta")
    if not isinstance(meta, Mapping):
        raise InvalidParams("Invalid params: params._meta is required in MCP 2026-07-28")
    for key, kind in ((META_VERSION, str), (META_CAPABILITIES, Mapping)):
        if key not in meta:
            raise InvalidParams(f"Invalid params: params._meta is missing required {key!r}")
        if not isinstance(meta[key], kind):
            want = "a string" if kind is str else "an object"
            raise InvalidParams(f"Invalid params: params._meta[{key!r}] must be {want}")
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise InvalidParams(
            f"Invalid params: params._meta[{META_LOG_LEVEL!r}] must be one of "
            f"{', '.join(LOG_LEVELS)}"
        )
    return meta


def check_headers(
    headers: Mapping[str, str],
    frame: Mapping[str, Any],
    *,
    tool_input_schema: Mapping[str, Any] | None,
) -> None:
    """Check a 2026-07-28 Streamable HTTP request's headers against its body.

    ``tool_input_schema`` is the called tool's ``inputSchema`` for ``tools/call`` (None
    when unknown: then no ``Mcp-Param-*`` header is expected).

    Raises:
        HeaderMismatch: a required header is missing, disagrees with the body, or holds
            invalid characters or malformed Base64.
        InvalidParams: the body field a header mirrors is missing or not a string.
    """
    # The HTTP server may hand a value on with its OWS (httptools keeps what trails it).
    lower = {k.lower(): v.strip(_OWS) for k, v in headers.items()}
    method = frame.get("method")
    params = frame.get("params")
    params = params if isinstance(params, Mapping) else {}
    meta = params.get("_meta")
    version = meta.get(META_VERSION) if isinstance(meta, Mapping) else None
    _exact(lower, MCP_PROTOCOL_VERSION, version)
    _exact(lower, MCP_METHOD, method)
    if isinstance(method, str) and method in NAME_SOURCES:
        _check_name(lower, params, NAME_SOURCES[method])
    if method == "tools/call" and tool_input_schema is not None:
        args = params.get("arguments")
        _check_params(lower, tool_input_schema, args if isinstance(args, Mapping) else {})


def _mismatch(header: str, why: str) -> HeaderMismatch:
    return HeaderMismatch(f"Header mismatch: {header} header {why}")


def _exact(lower: Mapping[str, str], header: str, body: object) -> None:
    raw = lower.get(header.lower())
    if raw is None:
        raise _mismatch(header, "is missing")
    if raw != body:
        raise _mismatch(header, f"value {raw!r} does not match body value {body!r}")


def _decoded(header: str, raw: str) -> str:
    try:
        return decode_header_value(raw)
    except HeaderMismatch as exc:
        raise _mismatch(header, f"is invalid: {exc.message}") from exc


def _check_name(lower: Mapping[str, str], params: Mapping[str, Any], field: str) -> None:
    body = params.get(field)
    if not isinstance(body, str):
        raise InvalidParams(f"Invalid params: params.{field} must be a string")
    raw = lower.get(MCP_NAME.lower())
    if raw is None:
        raise _mismatch(MCP_NAME, "is missing")
    value = _decoded(MCP_NAME, raw)
    if value != body:
        raise _mismatch(MCP_NAME, f"value {value!r} does not match body value {body!r}")


def _check_params(
    lower: Mapping[str, str], schema: Mapping[str, Any], args: Mapping[str, Any]
) -> None:
    try:
        annotated = param_headers(schema)
    except InvalidHeaderAnnotation:
        # An HTTP client MUST drop a tool with bad annotations, so none mirrors them.
        return
    for ph in annotated:
        _check_param(lower.get(ph.header.lower()), ph, _at(args, ph.path))


def _check_param(raw: str | None, ph: ParamHeader, body: object) -> None:
    where = f"argument {'.'.join(ph.path)}"
    if raw is None:
        if body is not None:  # absent or null in the body: no header expected (S-HTTP-41)
            raise _mismatch(ph.header, f"is missing but {where} is in the body")
        return
    value = _decoded(ph.header, raw)
    if body is None:
        # A header the body does not back is what a router might have acted on.
        raise _mismatch(ph.header, f"value {value!r} has no {where} in the body")
    if not _same(value, body):
        raise _mismatch(ph.header, f"value {value!r} does not match body value {body!r}")


def _at(args: Mapping[str, Any], path: tuple[str, ...]) -> object:
    node: object = args
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _same(value: str, body: object) -> bool:
    if isinstance(body, bool):  # before int: bool is an int in Python
        return value == ("true" if body else "false")
    if isinstance(body, int | float):
        # Compared as numbers, so "42" matches 42.0 and "42.0" matches 42 (S-HTTP-42).
        return _NUMBER.fullmatch(value) is not None and Decimal(value) == Decimal(body)
    return isinstance(body, str) and value == body
