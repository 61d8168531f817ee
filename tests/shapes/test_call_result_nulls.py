"""An upstream's CallToolResult with members set to null: relayed without them.

Some servers (the official Python SDK 1.23.3's ``tasks/result``) send
``"annotations": null`` and ``"_meta": null`` on content blocks, which no revision's schema
allows; mcpx must not relay the invalid frame (tests/peers/test_task_peers.py meets it).
"""

from __future__ import annotations

from mcpx.shapes import call_result_problem, without_nulls


def test_null_members_are_dropped_at_every_level() -> None:
    result = {
        "content": [
            {"type": "text", "text": "done", "annotations": None, "_meta": None},
            {"type": "resource", "resource": {"uri": "a://b", "text": "x", "_meta": None}},
        ],
        "isError": None,
        "_meta": None,
        "structuredContent": None,
    }
    assert call_result_problem(result) is None
    assert without_nulls(result) == {
        "content": [
            {"type": "text", "text": "done"},
            {"type": "resource", "resource": {"uri": "a://b", "text": "x"}},
        ],
        "structuredContent": None,  # any JSON value in 2026-07-28: kept as sent
    }
    assert result["content"][0]["annotations"] is None  # a copy: the input is not edited


def test_a_clean_result_is_handed_back_as_it_is() -> None:
    result = {"content": [{"type": "text", "text": "done", "annotations": {"priority": 1}}]}
    assert without_nulls(result) is result
