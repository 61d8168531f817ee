"""A tool's input schema as mcpx checks arguments against it: its dialect, and its
references (never fetched)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpx.ops import OpError
from mcpx.ops._tool_input import check_arguments as _check_arguments


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": schema}


@pytest.mark.obligation("C-SEC-7", "S-MSG-15")
def test_arguments_are_checked_in_the_dialect_the_schema_names() -> None:
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        # draft-07 reads a sibling of $ref as ignored, 2020-12 applies it: "b" tells.
        "definitions": {"any": {}},
        "properties": {"a": {"$ref": "#/definitions/any", "type": "string"}},
    }
    _check_arguments("s", _tool(draft7), {"a": 1})  # draft-07: the sibling type is ignored
    as_2020 = {k: v for k, v in draft7.items() if k != "$schema"}
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool(as_2020), {"a": 1})  # 2020-12, the default: applied
    assert caught.value.status == 400 and caught.value.code == "invalid_input"


@pytest.mark.obligation("C-SEC-7", "S-MSG-15")
def test_an_unknown_dialect_is_a_clear_error_not_a_guess() -> None:
    schema = {"$schema": "https://example.com/my-dialect", "type": "object"}
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool(schema), {"a": 1})
    assert caught.value.status == 502
    assert "unknown $schema dialect 'https://example.com/my-dialect'" in caught.value.message


def test_a_schema_that_is_not_one_is_a_clear_error() -> None:
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool({"type": "object", "properties": {"a": {"type": 5}}}), {})
    assert caught.value.status == 502 and "not a valid schema" in caught.value.message


@pytest.fixture
def hits() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that would serve a schema; the paths it was asked for."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.obligation("C-SEC-8", "S-MSG-17", "S-MSG-18")
def test_a_network_ref_is_never_fetched_and_the_tool_is_refused(
    hits: tuple[str, list[str]],
) -> None:
    url, seen = hits
    schema = {"type": "object", "properties": {"a": {"$ref": f"{url}/schema.json"}}}
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool(schema), {"a": 1})
    assert caught.value.status == 502 and "unresolvable $ref" in caught.value.message
    assert seen == []
    # A reference inside the schema itself still resolves.
    local = {"type": "object", "$defs": {"s": {"type": "string"}}}
    local["properties"] = {"a": {"$ref": "#/$defs/s"}}
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool(local), {"a": 1})
    assert caught.value.status == 400
    _check_arguments("s", _tool(local), {"a": "x"})


@pytest.mark.obligation("S-MSG-18", "C-SEC-8")
def test_a_schema_of_deeply_nested_alternatives_is_refused_before_any_check() -> None:
    bomb: dict[str, Any] = {"type": "integer"}
    for _ in range(16):  # checked as is, a wrong value would cost 2**16 branches
        bomb = {"anyOf": [bomb, bomb]}
    with pytest.raises(OpError) as caught:
        _check_arguments("s", _tool({"type": "object", "properties": {"a": bomb}}), {"a": "x"})
    assert caught.value.status == 502 and "nested over 8 deep" in caught.value.message
    shallow: dict[str, Any] = {"type": "integer"}
    for _ in range(3):
        shallow = {"anyOf": [shallow, {"type": "null"}]}
    _check_arguments("s", _tool({"type": "object", "properties": {"a": shallow}}), {"a": 1})
