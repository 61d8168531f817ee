"""downgrade(): every rich newest-shape result, spelled for each revision,
validates strictly, keeps what the revision can carry, and never edits its input."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import mcpx.shapes._downgrade as downgrading
from mcpx import spec
from mcpx.shapes import PENDING_ROWS, MissingRow, downgrade, downgrade_notification, envelope
from mcpx.shapes._copy_on_write import has
from shapes.rich import LINK_URI, SERVER_INFO_KEY, results
from support.schemas import frame_errors

RICH = results()
METHODS = sorted(RICH)
CASES = [(m, r) for m in METHODS for r in spec.REVISIONS]


def _answerable(method: str, rev: str) -> bool:
    """The revision has the method, so its schema names the result type."""
    return spec.defined("request", method, rev, "client")


def _frame(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def _enveloped(method: str, result: dict[str, Any]) -> dict[str, Any]:
    info = {"name": "mcpx", "version": "1"}
    return envelope(method, result, server_info=info, list_max_age_s=60, read_max_age_s=0)


@pytest.mark.parametrize(("method", "rev"), [c for c in CASES if _answerable(*c)])
def test_output_validates_strictly(method: str, rev: str) -> None:
    out = downgrade(method, RICH[method], rev)
    assert frame_errors(_frame(out), rev, sender="server", answering=method) == []


@pytest.mark.parametrize(("method", "rev"), CASES)
def test_input_never_mutated(method: str, rev: str) -> None:
    result = results()[method]
    before = copy.deepcopy(result)
    out = downgrade(method, result, rev)
    assert result == before
    if out is not result:
        out.clear()  # the copy owns its top level: clearing it leaves the input whole
        assert result == before


@pytest.mark.parametrize("method", [m for m in METHODS if _answerable(m, spec.NEWEST)])
def test_newest_gets_the_same_object(method: str) -> None:
    result = RICH[method]
    assert downgrade(method, result, spec.NEWEST) is result


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_nothing_to_change_is_identity_in_every_revision(rev: str) -> None:
    plain = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    assert downgrade("tools/call", plain, rev) is plain


@pytest.mark.parametrize("rev", spec.LEGACY)
def test_older_revisions_get_a_copy(rev: str) -> None:
    result = RICH["tools/list"]
    assert downgrade("tools/list", result, rev) is not result


# -- information kept where the revision can carry it -------------------------


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_tool_fields_follow_the_matrix(rev: str) -> None:
    src = RICH["tools/list"]["tools"][0]
    out = downgrade("tools/list", RICH["tools/list"], rev)["tools"][0]
    for key in ("name", "description", "inputSchema"):
        assert out[key] == src[key]
    for key in ("title", "outputSchema", "annotations", "icons", "_meta"):
        assert (key in out) is has(f"Tool.{key}", rev)
        if key in out:
            assert out[key] == src[key]


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_blocks_are_spelled_another_way_not_dropped(rev: str) -> None:
    src = RICH["tools/call"]["content"]
    full = downgrade("tools/call", RICH["tools/call"], rev)["content"]
    # One block out per block in; the structured JSON may follow as text.
    extra = 0 if has("CallToolResult.structuredContent", rev) else 1
    assert len(full) == len(src) + extra
    out = full[: len(src)]
    link, audio = out[3], out[2]
    if has("CallToolResult.content[type=resource_link]", rev):
        assert link["type"] == "resource_link" and link["uri"] == LINK_URI
    else:
        # Before 2025-06-18: an embedded text/plain resource naming the link.
        assert link["type"] == "resource"
        assert link["resource"]["uri"] == LINK_URI
        assert link["resource"]["mimeType"] == "text/plain"
        assert "report.txt" in link["resource"]["text"]
    if has("CallToolResult.content[type=audio]", rev):
        assert audio["type"] == "audio" and audio["data"] == src[2]["data"]
    else:
        assert audio["type"] == "text" and "audio/wav" in audio["text"]
    # The blocks every revision has keep their payload.
    assert out[0]["text"] == "hello" and out[1]["data"] == src[1]["data"]
    assert out[4]["resource"]["text"] == "abc" and out[5]["resource"]["blob"] == "AAE="


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_prompt_message_blocks_are_spelled_down(rev: str) -> None:
    out = downgrade("prompts/get", RICH["prompts/get"], rev)
    kinds = [m["content"]["type"] for m in out["messages"]]
    assert ("resource_link" in kinds) is has("PromptMessage.content[type=resource_link]", rev)
    assert ("audio" in kinds) is has("PromptMessage.content[type=audio]", rev)
    assert len(kinds) == len(RICH["prompts/get"]["messages"])


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_annotations_keep_audience_and_priority(rev: str) -> None:
    out = downgrade("resources/list", RICH["resources/list"], rev)["resources"][0]
    assert out["annotations"]["audience"] == ["user", "assistant"]
    assert out["annotations"]["priority"] == 0.5
    assert ("lastModified" in out["annotations"]) is has("Annotations.lastModified", rev)


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_structured_content_from_its_floor(rev: str) -> None:
    out = downgrade("tools/call", RICH["tools/call"], rev)
    if has("CallToolResult.structuredContent", rev):
        assert out["structuredContent"] == {"temp": 21.5}
    else:
        # Kept as the JSON text block those revisions read instead.
        assert "structuredContent" not in out
        assert out["content"][-1] == {"type": "text", "text": '{"temp": 21.5}'}


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_non_object_structured_content(rev: str) -> None:
    result = _enveloped("tools/call", {"content": [], "structuredContent": [1, 2]})
    out = downgrade("tools/call", result, rev)
    assert frame_errors(_frame(out), rev, sender="server", answering="tools/call") == []
    if "structuredContent" in out:
        assert out["structuredContent"] == [1, 2]
    else:
        assert out["content"] == [{"type": "text", "text": "[1, 2]"}]


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_structured_content_already_in_text_is_not_repeated(rev: str) -> None:
    result = {"content": [{"type": "text", "text": '{"a": 1}'}], "structuredContent": {"a": 1}}
    out = downgrade("tools/call", result, rev)
    assert out["content"] == result["content"]


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_envelope_only_for_the_newest(rev: str) -> None:
    out = downgrade("tools/list", RICH["tools/list"], rev)
    modern = has("Result.resultType", rev)
    for key in ("resultType", "ttlMs", "cacheScope"):
        assert (key in out) is modern
    assert (SERVER_INFO_KEY in out["_meta"]) is modern
    assert out["_meta"]["com.example/trace"] == "t-1"


def test_a_meta_holding_only_server_info_goes_for_legacy() -> None:
    result = {"content": [], "_meta": {SERVER_INFO_KEY: {"name": "m", "version": "1"}}}
    assert "_meta" not in downgrade("tools/call", result, spec.OLDEST)


@pytest.mark.parametrize("rev", spec.LEGACY)
def test_initialize_capabilities_and_server_info(rev: str) -> None:
    out = downgrade("initialize", RICH["initialize"], rev)
    caps = out["capabilities"]
    assert ("completions" in caps) is spec.defined("capability", "completions", rev, "server")
    assert ("tasks" in caps) is spec.defined("capability", "tasks", rev, "server")
    assert "extensions" not in caps
    assert caps["experimental"] == {"com.example/x": {}}
    info = out["serverInfo"]
    assert info["name"] == "mcpx"
    for key in ("title", "description", "icons", "websiteUrl"):
        assert (key in info) is has(f"Implementation.{key}", rev)


def test_execution_goes_only_to_the_revision_defining_it() -> None:
    listed = {
        "tools": [
            {
                "name": "t",
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"},
            }
        ]
    }
    for rev in spec.REVISIONS:
        out = downgrade("tools/list", listed, rev)
        assert ("execution" in out["tools"][0]) is has("Tool.execution", rev)
    assert listed["tools"][0]["execution"] == {"taskSupport": "optional"}


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_non_object_output_schema_only_where_allowed(rev: str) -> None:
    tools = [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}}]
    out = downgrade("tools/list", _enveloped("tools/list", {"tools": tools}), rev)
    assert ("outputSchema" in out["tools"][0]) is (rev == spec.NEWEST)
    assert frame_errors(_frame(out), rev, sender="server", answering="tools/list") == []


def test_unknown_revision_is_refused() -> None:
    with pytest.raises(spec.UnknownRevisionError):
        downgrade("tools/list", {"tools": []}, "2099-01-01")


def test_a_field_without_a_row_is_an_error_not_a_guess() -> None:
    with pytest.raises(MissingRow):
        has("Tool.nonsense", spec.NEWEST)


@pytest.mark.parametrize("name", sorted(PENDING_ROWS))
def test_pending_rows_are_still_missing_from_the_matrix(name: str) -> None:
    # When the matrix gains one of these, move its caller to spec.defined.
    assert name not in {r.name for r in spec.rows("field")}


# -- notifications ------------------------------------------------------------

PROGRESS = {"progressToken": "p", "progress": 1, "total": 2, "message": "half"}


def test_progress_message_kept_by_default() -> None:
    assert downgrade_notification("notifications/progress", PROGRESS, spec.OLDEST) is PROGRESS


def test_progress_message_removed_when_oldest_is_first_and_strict() -> None:
    policy = spec.Policy.build(first=spec.OLDEST)
    out = downgrade_notification("notifications/progress", PROGRESS, spec.OLDEST, policy)
    assert out == {"progressToken": "p", "progress": 1, "total": 2}
    assert PROGRESS["message"] == "half"
    frame = {"jsonrpc": "2.0", "method": "notifications/progress", "params": out}
    assert frame_errors(frame, spec.OLDEST, sender="server") == []


def test_progress_message_kept_when_oldest_is_lenient() -> None:
    policy = spec.Policy.build(first=spec.OLDEST, lenient=[spec.OLDEST])
    assert (
        downgrade_notification("notifications/progress", PROGRESS, spec.OLDEST, policy) is PROGRESS
    )


@pytest.mark.parametrize("rev", spec.REVISIONS[1:])
def test_progress_message_kept_where_defined(rev: str) -> None:
    policy = spec.Policy.build(first=rev)
    assert downgrade_notification("notifications/progress", PROGRESS, rev, policy) is PROGRESS


@pytest.mark.parametrize("rev", spec.REVISIONS)
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("notifications/message", {"level": "info", "logger": "up", "data": {"x": 1}}),
        ("notifications/tools/list_changed", None),
        ("notifications/resources/list_changed", {}),
        ("notifications/prompts/list_changed", None),
    ],
)
def test_other_notifications_pass_unchanged(
    rev: str, method: str, params: dict[str, Any] | None
) -> None:
    assert downgrade_notification(method, params, rev) is params
    frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        frame["params"] = params
    assert frame_errors(frame, rev, sender="server") == []


@pytest.mark.parametrize("rev", spec.REVISIONS)
@pytest.mark.parametrize(
    "result",
    [
        {"content": []},
        {"content": [{"type": "text", "text": "hi"}], "isError": False},
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        # Not plain: each goes the whole way.
        {"content": [{"type": "text", "text": "a", "annotations": {"lastModified": "x"}}]},
        {"content": [{"type": "text", "text": "a"}], "structuredContent": {"result": "a"}},
        {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}, "isError": True},
        {"content": [{"type": "text", "text": "a"}], "structuredContent": [1, 2]},
        {"content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]},
        {"content": [{"type": "text", "text": "a"}], "resultType": "complete", "ttlMs": 5},
    ],
)
def test_a_plain_tool_result_is_returned_as_the_whole_spelling_would_make_it(
    result: dict[str, Any], rev: str
) -> None:
    # The shortcut for plain results (text blocks only) must answer as the whole
    # spelling does, and hand back the result itself only when that changes nothing.
    from mcpx.shapes._downgrade import _call_tool, _envelope

    whole = _envelope("tools/call", _call_tool(copy.deepcopy(result), rev), rev)
    got = downgrade("tools/call", result, rev)
    assert got == whole
    if got is result:
        assert whole == result


@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_a_plain_result_saying_it_is_complete_is_spelled_as_the_long_way_spells_it(
    rev: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a newer SDK's server answers a legacy client: resultType on a plain result.
    told = {
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"result": "hi"},
        "isError": False,
        "resultType": "complete",
    }
    short = downgrade("tools/call", told, rev)
    monkeypatch.setattr(downgrading, "_plain_call_result", lambda result, rev: False)
    assert short == downgrade("tools/call", told, rev)  # every rule applied
    assert ("resultType" in short) == has("Result.resultType", rev)
    assert frame_errors(_frame(short), rev, sender="server", answering="tools/call") == []
