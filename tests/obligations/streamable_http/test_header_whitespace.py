"""Mirrored headers with whitespace around their values (S-HTTP-37/38/39, RFC 9110 §5.5), over
a real socket to the package's one real daemon (``daemon`` in this directory's conftest.py).

Optional whitespace (spaces and tabs) around a field value is not part of the value, so
``Mcp-Name:  mcpx_call \\t`` names ``mcpx_call`` (the official conformance scenario
``server-http-header-validation``, check ``ServerAcceptsWhitespaceHeaderValue``); a value
whose inside differs from the body still mismatches. The requests are written as raw bytes:
an HTTP client library may refuse or trim padded values, and what matters is what reaches
mcpx through its own HTTP server. Every frame a test reads is checked strictly against the
revision (``sent_frames``).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
from typing import Any

import httpx
import pytest

from obligations.streamable_http.helpers import META, _echo, _text
from support.daemon import Daemon
from support.modern import MODERN
from support.schemas import FrameLog

# Leading and trailing padding, as a sender or an intermediary may write it.
PADS = [(b" ", b" "), (b"  ", b" \t"), (b"\t", b"\t"), (b" \t ", b""), (b"", b"  ")]


def _b64(text: str) -> bytes:
    return b"=?base64?" + base64.b64encode(text.encode()) + b"?="


def _post(
    daemon: Daemon, frame: dict[str, Any], fields: list[tuple[bytes, bytes]]
) -> tuple[int, dict[str, Any]]:
    """POST ``frame`` to /mcp with ``fields`` written byte for byte (``Name:value``)."""
    url = httpx.URL(daemon.info["url"])
    assert url.host == "127.0.0.1" and url.port is not None
    body = json.dumps(frame).encode()
    head = [
        b"POST /mcp HTTP/1.1",
        b"Host: 127.0.0.1:%d" % url.port,
        b"Content-Type: application/json",
        b"Accept: application/json",
        b"Content-Length: %d" % len(body),
        b"Connection: close",
        *(name + b":" + value for name, value in fields),
    ]
    with socket.create_connection(("127.0.0.1", url.port), timeout=60) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        data = response.read()
    return response.status, json.loads(data)


def _call(rid: int, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _region(region: str) -> dict[str, Any]:
    return {"name": "test_header_param", "arguments": {"region": region}, "_meta": META}


def _mirrored(name: bytes, method: bytes = b"tools/call") -> list[tuple[bytes, bytes]]:
    return [
        (b"MCP-Protocol-Version", MODERN.encode()),
        (b"Mcp-Method", method),
        (b"Mcp-Name", name),
    ]


def _with_region(value: bytes) -> list[tuple[bytes, bytes]]:
    return [*_mirrored(b"test_header_param"), (b"Mcp-Param-Region", value)]


@pytest.mark.obligation("S-HTTP-37", "S-HTTP-38")
@pytest.mark.parametrize(("before", "after"), PADS)
def test_whitespace_around_mcp_name_and_method_is_not_part_of_the_value(
    daemon: Daemon, before: bytes, after: bytes, sent_frames: FrameLog
) -> None:
    fields = _mirrored(before + b"mcpx_call" + after, before + b"tools/call" + after)
    status, body = _post(daemon, _call(11, _echo("padded", META)), fields)
    assert status == 200, body
    sent_frames.sent(body, MODERN, answering="tools/call")
    assert body["id"] == 11 and _text(body["result"]) == "padded"


@pytest.mark.obligation("S-HTTP-38", "S-HTTP-39")
@pytest.mark.parametrize(("before", "after"), PADS)
def test_whitespace_around_mcp_param_is_not_part_of_the_value(
    daemon: Daemon, before: bytes, after: bytes, sent_frames: FrameLog
) -> None:
    # test_header_param (the conformance fixture, passed through) marks region x-mcp-header.
    for rid, region, header in [
        (21, "eu-west", b"eu-west"),
        # A Base64 value loses its padding before it is decoded; its own spaces stay.
        (22, " eu west ", _b64(" eu west ")),
    ]:
        status, body = _post(
            daemon, _call(rid, _region(region)), _with_region(before + header + after)
        )
        assert status == 200, body
        sent_frames.sent(body, MODERN, answering="tools/call")
        assert body["id"] == rid and _text(body["result"]) == f"region={region}"


@pytest.mark.obligation("S-HTTP-38", "S-HTTP-39")
def test_a_padded_value_whose_inside_differs_still_mismatches(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    cases: list[tuple[dict[str, Any], list[tuple[bytes, bytes]], str]] = [
        (_call(31, _echo("x", META)), _mirrored(b"  mcpx_ call \t"), "Mcp-Name"),
        (_call(32, _echo("x", META)), _mirrored(b" mcpx_call", b"\ttools/list "), "Mcp-Method"),
        (_call(33, _region("eu-west")), _with_region(b" eu west\t"), "Mcp-Param-Region"),
        # Padding is never part of a value, so a body value's own spaces need Base64.
        (_call(34, _region(" eu-west ")), _with_region(b" eu-west "), "Mcp-Param-Region"),
        # The padding goes, not what is inside the sentinel: this is not Base64.
        (
            _call(35, _region("eu-west")),
            _with_region(b" =?base64? ZXUtd2VzdA== ?="),
            "Mcp-Param-Region",
        ),
    ]
    for frame, fields, header in cases:
        status, body = _post(daemon, frame, fields)
        assert status == 400, body
        sent_frames.sent(body, MODERN)
        assert body["id"] == frame["id"]
        assert body["error"]["code"] == -32020, body
        assert body["error"]["message"].startswith(f"Header mismatch: {header} header"), body


@pytest.mark.obligation("S-HTTP-33")
@pytest.mark.parametrize(("before", "after"), PADS)
def test_whitespace_around_the_protocol_version_is_not_part_of_it(
    daemon: Daemon, before: bytes, after: bytes, sent_frames: FrameLog
) -> None:
    fields = [
        (b"MCP-Protocol-Version", before + MODERN.encode() + after),
        (b"Mcp-Method", b"tools/call"),
        (b"Mcp-Name", b"mcpx_call"),
    ]
    status, body = _post(daemon, _call(14, _echo("version padded", META)), fields)
    assert status == 200, body
    sent_frames.sent(body, MODERN, answering="tools/call")
    assert body["id"] == 14 and _text(body["result"]) == "version padded"
