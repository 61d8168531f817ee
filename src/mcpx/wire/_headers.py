"""HTTP header names MCP uses, and the 2026-07-28 encoding of mirrored header values.

Invariants:

- ``encode_header_value`` sends a value as is only when it is visible ASCII or space
  (0x20-0x7E) with no leading or trailing whitespace, and does not itself look like the
  sentinel; everything else becomes ``=?base64?{Base64 of the UTF-8 bytes}?=``.
- ``decode_header_value(encode_header_value(s)) == s`` for every string ``s`` that has a
  UTF-8 form (every string but those holding lone surrogates).
- A received value that looks like the sentinel but does not decode, or that holds
  characters a header value may not, is a ``HeaderMismatch``, never passed through.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ._errors import HeaderMismatch, InvalidParams, json_type

__all__ = [
    "LAST_EVENT_ID",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_NAME_SOURCES",
    "MCP_PARAM_PREFIX",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "decode_header_value",
    "encode_header_value",
    "field_value",
    "header_value_for",
]

# Header names compare case-insensitively; these are the spellings the spec uses.
MCP_PROTOCOL_VERSION: Final = "MCP-Protocol-Version"
MCP_SESSION_ID: Final = "Mcp-Session-Id"
MCP_METHOD: Final = "Mcp-Method"
MCP_NAME: Final = "Mcp-Name"
MCP_PARAM_PREFIX: Final = "Mcp-Param-"
LAST_EVENT_ID: Final = "Last-Event-ID"

# Which body field ``Mcp-Name`` mirrors, per method (the tasks extension adds taskId).
# Client and server both read it: one table, so the two sides cannot disagree.
MCP_NAME_SOURCES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        "tasks/get": "taskId",
        "tasks/update": "taskId",
        "tasks/cancel": "taskId",
    }
)

# The markers are case-sensitive and lowercase.
_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="

# What may be sent as is: visible ASCII and space, not starting or ending with a space.
_PLAIN: Final = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
# What a received value may hold (RFC 9110 as the spec restates it): visible ASCII,
# space and tab. Anything else is refused before it is compared with the body.
_RECEIVABLE: Final = re.compile(r"[\x09\x20-\x7e]*")

# Integers mirrored into headers must survive a JavaScript number: -(2**53 - 1)..2**53 - 1.
_SAFE_INT: Final = 2**53 - 1


def field_value(headers: Mapping[str, str], name: str) -> str | None:
    """Header ``name``'s value without the optional whitespace around it, which is not part
    of it (RFC 9110 §5.5: spaces and tabs; an HTTP server may pass trailing ones on)."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def encode_header_value(value: str) -> str:
    """``value`` as it goes into an ``Mcp-Name`` or ``Mcp-Param-{Name}`` header.

    The empty string is plain and sent as is.

    Raises:
        InvalidParams: ``value`` holds a lone surrogate, so it has no UTF-8 form (no text
            ``loads`` returns does).
    """
    if value == "" or (_PLAIN.fullmatch(value) and not _looks_encoded(value)):
        return value
    try:
        utf8 = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidParams(f"header value is not valid Unicode text: {exc.reason}") from exc
    return f"{_PREFIX}{base64.b64encode(utf8).decode('ascii')}{_SUFFIX}"


def decode_header_value(raw: str) -> str:
    """The value a received ``Mcp-Name`` or ``Mcp-Param-{Name}`` header carries.

    Raises:
        HeaderMismatch: ``raw`` holds characters a header value may not, or looks like the
            Base64 sentinel but its payload is not padded Base64 of UTF-8 text.
    """
    if not _RECEIVABLE.fullmatch(raw):
        raise HeaderMismatch("header value contains invalid characters")
    if not _looks_encoded(raw):
        return raw
    if len(raw) < len(_PREFIX) + len(_SUFFIX):  # "=?base64?=": the markers overlap
        raise HeaderMismatch(f"malformed Base64 header value {raw!r}")
    payload = raw[len(_PREFIX) : len(raw) - len(_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except ValueError as exc:  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise HeaderMismatch(f"malformed Base64 header value {raw[:40]!r}: {exc}") from exc


def header_value_for(arg: object) -> str | None:
    """The ``Mcp-Param-{Name}`` header value for a tool argument, encoded, ready to send.

    Strings are used as is, integers in decimal, booleans as ``true``/``false`` (then
    encoded). None (JSON null, or no value) gives None: the header is omitted. A float is
    accepted only when it is a whole number, as JSON Schema's ``integer`` accepts ``42.0``.

    Raises:
        InvalidParams: ``arg`` is not a string, integer or boolean, or is an integer
            outside the JavaScript safe range.
    """
    if arg is None:
        return None
    if isinstance(arg, str):
        return encode_header_value(arg)
    if isinstance(arg, bool):  # before int: bool is an int in Python
        return "true" if arg else "false"
    if isinstance(arg, float) and arg.is_integer():
        arg = int(arg)
    if isinstance(arg, int):
        return _safe_int(arg)
    raise InvalidParams(
        f"a header parameter must be a string, an integer or a boolean (got {json_type(arg)})"
    )


def _safe_int(value: int) -> str:
    if -_SAFE_INT <= value <= _SAFE_INT:
        return str(value)
    raise InvalidParams(f"integer {value} is outside the JavaScript safe range for a header")


def _looks_encoded(value: str) -> bool:
    # The spec's test for the sentinel: starts with the prefix, ends with the suffix.
    return value.startswith(_PREFIX) and value.endswith(_SUFFIX)
