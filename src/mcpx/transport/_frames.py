"""Turning one received JSON text into JSON-RPC frames, the only parsing transports do.

Transports know no MCP semantics, but they must know a frame when they see one: a JSON
object, or (a 2025-03-26 batch) a non-empty array of objects, split into its objects.
Whether a frame is a *valid* message is the session's business.

Invariants:

- ``parse_frames`` returns at least one dict or raises ``BadFrame``; never anything else.
- ``answers`` compares ids as JSON does: ``1`` and ``"1"`` differ, and so do ``1`` and
  ``true`` (Python's ``True == 1`` must not make a boolean id answer request 1).
"""

from __future__ import annotations

from typing import Any

from mcpx.wire import ParseError, RequestId, loads

__all__ = ["BadFrame", "answers", "is_response", "parse_frames", "request_id_of", "snippet"]


class BadFrame(ValueError):
    """A received text is not a JSON-RPC frame (not JSON, or not an object or batch)."""


def parse_frames(data: bytes | str) -> list[dict[str, Any]]:
    """The frames one JSON text carries: an object, or each object of a batch array.

    Raises:
        BadFrame: ``data`` is not JSON, or not an object or a non-empty array of objects.
    """
    try:
        obj = loads(data)
    except ParseError as exc:
        raise BadFrame(str(exc)) from exc
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list) and obj and all(isinstance(item, dict) for item in obj):
        return list(obj)
    raise BadFrame(f"expected a JSON object or a batch of objects, got {_kind(obj)}")


def is_response(frame: dict[str, Any]) -> bool:
    """The frame is a JSON-RPC response (a result or an error), judged by its members."""
    return (
        frame.get("jsonrpc") == "2.0"
        and "method" not in frame
        and ("result" in frame or "error" in frame)
    )


def answers(frame: dict[str, Any], request_id: RequestId) -> bool:
    """The frame is the response to ``request_id``."""
    if not is_response(frame) or "id" not in frame:
        return False
    rid = frame["id"]
    return type(rid) is type(request_id) and rid == request_id


def request_id_of(frame: dict[str, Any]) -> RequestId | None:
    """The id of a request frame (one that expects an answer), else None."""
    rid = frame.get("id")
    if "method" not in frame or isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    return rid


def snippet(data: bytes | str, limit: int = 80) -> str:
    """The start of ``data`` for an error message: never the whole of a large body."""
    head = data[: limit * 4 + 8]  # enough for `limit` characters after stripping, no more
    text = (head.decode("utf-8", "replace") if isinstance(head, bytes) else head).strip()
    cut = len(text) > limit or len(head) < len(data)
    return repr(text[:limit] + ("..." if cut else ""))


def _kind(obj: object) -> str:
    if isinstance(obj, list):
        return "an empty array" if not obj else "an array holding a non-object"
    if obj is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number"}.get(
        type(obj), type(obj).__name__
    )
