"""What mcpx refuses to be asked, and what it checks before answering upstream (sans-IO
tables per revision, and ``QuestionRouter`` with nobody to ask)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from mcpx.client import QuestionOrigin
from mcpx.questions import Broker, CallsInFlight, QuestionRouter
from mcpx.questions._answers import broker_result, exposable_roots
from mcpx.questions._undeclared import check_askable
from mcpx.spec import at_or_after
from mcpx.wire import InvalidParams, McpError, MethodNotFound

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 5}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "human"}


def _declared(rev: str) -> dict[str, Any]:
    return QuestionRouter.__new__(QuestionRouter).capabilities(rev)


def _refusal(method: str, params: dict[str, Any], rev: str) -> type[McpError] | None:
    try:
        check_askable(method, params, _declared(rev))
    except McpError as exc:
        return type(exc)
    return None


# C-SAMP-3 C-SREQ-4: tools/toolChoice without sampling.tools (never declared) is -32602
# in every revision; C-SAMP-8: includeContext is never refused (the client may ignore it).
@pytest.mark.obligation("C-SAMP-3", "C-SREQ-4", "C-SAMP-8")
@pytest.mark.parametrize("rev", REVISIONS)
def test_sampling_refusals_by_revision(rev: str) -> None:
    sampling = "sampling/createMessage"
    assert _refusal(sampling, SAMPLE, rev) is None
    assert _refusal(sampling, {**SAMPLE, "tools": []}, rev) is InvalidParams
    assert _refusal(sampling, {**SAMPLE, "toolChoice": {"mode": "none"}}, rev) is InvalidParams
    for context in ("none", "thisServer", "allServers"):
        assert _refusal(sampling, {**SAMPLE, "includeContext": context}, rev) is None


# C-ELIC-4 C-SREQ-4: form (or no mode) wherever elicitation was declared; url only where
# elicitation.url was (2025-11-25 on); any other mode never; elicitation itself only
# from 2025-06-18 (before: -32601, as for any undeclared kind).
@pytest.mark.obligation("C-ELIC-4", "C-SREQ-4")
@pytest.mark.parametrize("rev", REVISIONS)
def test_elicitation_refusals_by_revision(rev: str) -> None:
    elicit = "elicitation/create"
    form = {"message": "name?", "requestedSchema": FORM}
    url = {"mode": "url", "message": "go", "url": "https://example.test", "elicitationId": "1"}
    if rev in ("2024-11-05", "2025-03-26"):
        assert _refusal(elicit, form, rev) is MethodNotFound
        return
    assert _refusal(elicit, form, rev) is None
    assert _refusal(elicit, {**form, "mode": "form"}, rev) is None
    assert _refusal(elicit, url, rev) is (None if at_or_after(rev, "2025-11-25") else InvalidParams)
    for mode in ("telepathy", None, 3, "URL"):
        assert _refusal(elicit, {**form, "mode": mode}, rev) is InvalidParams


# C-SREQ-4: refused before anyone is asked: nothing reaches the broker.
@pytest.mark.obligation("C-SREQ-4")
@pytest.mark.anyio
async def test_a_refused_question_is_never_held(tmp_path: Path) -> None:
    broker = Broker(tmp_path / "q.db")
    native = QuestionRouter(broker, CallsInFlight(), lambda: None)
    with pytest.raises(InvalidParams, match=r"sampling\.tools"):
        await native.answer(
            "sampling/createMessage", {**SAMPLE, "tools": []}, QuestionOrigin("s", "2025-11-25")
        )
    with pytest.raises(MethodNotFound):
        await native.answer(
            "elicitation/create", {"message": "?"}, QuestionOrigin("s", "2025-03-26")
        )
    assert broker.pending() == []


# C-ROOTS-3 C-ROOTS-4: only file:// URIs without ".." segments (decoded) are exposed; the
# others are dropped one by one, each logged with why.
@pytest.mark.obligation("C-ROOTS-3", "C-ROOTS-4")
def test_roots_are_cut_to_file_uris_without_traversal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "mcpx.questions")
    given = {
        "roots": [
            {"uri": "file:///srv/work", "name": "work"},
            {"uri": "https://example.com/x"},
            {"uri": "file:///srv/../etc"},
            {"uri": "file:///srv/%2E%2E/etc"},
            {"uri": "file:///srv/..\\etc"},
            {"uri": "file:///srv/a..b"},
            {"name": "no uri"},
        ],
        "_meta": {"k": "v"},
    }
    kept = exposable_roots(given, "s")
    assert kept == {
        "roots": [{"uri": "file:///srv/work", "name": "work"}, {"uri": "file:///srv/a..b"}],
        "_meta": {"k": "v"},
    }
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "'https://example.com/x' not sent: not a file:// URI" in said
    assert said.count("path traversal") == 3
    assert exposable_roots({}, "s") == {"roots": []}


# C-ELIC-1 (ElicitResult.action is required): a url elicitation's answer is consent only.
@pytest.mark.obligation("C-ELIC-1")
def test_a_url_elicitation_answer_is_an_accept() -> None:
    url = {"mode": "url", "message": "go", "url": "https://example.test", "elicitationId": "1"}
    elicit = "elicitation/create"
    assert broker_result(elicit, url, {}) == {"action": "accept"}
    assert broker_result(elicit, url, {"action": "accept"}) == {"action": "accept"}
    for wrong in ({"token": "x"}, {"action": "decline"}):
        with pytest.raises(InvalidParams, match="url elicitation takes no content"):
            broker_result(elicit, url, wrong)


# C-ELIC-9: a form answer holds only the schema's fields, of ElicitResult's value types,
# matching the schema; a form with no schema still becomes an ElicitResult.
@pytest.mark.obligation("C-ELIC-9")
def test_form_answers_are_checked() -> None:
    form = {"message": "name?", "requestedSchema": FORM}
    elicit = "elicitation/create"
    assert broker_result(elicit, form, {"name": "ada"}) == {
        "action": "accept",
        "content": {"name": "ada"},
    }
    for wrong, field in (({"name": "a", "age": 3}, "age"), ({}, "(answer)"), ({"name": 3}, "name")):
        with pytest.raises(InvalidParams) as caught:
            broker_result(elicit, form, wrong)
        assert caught.value.data == {"field": field}
    with pytest.raises(InvalidParams, match="string, number, boolean"):
        broker_result(elicit, {"message": "?"}, {"x": {"nested": 1}})
    assert broker_result(elicit, {"message": "?"}, {"x": ["a"]})["action"] == "accept"


# C-SAMP-1: a sampling answer is a CreateMessageResult (role, one block, model), nothing
# more; C-ROOTS-3: a roots answer is a list of roots.
@pytest.mark.obligation("C-SAMP-1", "C-ROOTS-3")
@pytest.mark.parametrize(
    ("method", "content", "field"),
    [
        ("sampling/createMessage", {"text": "hi"}, "text"),
        ("sampling/createMessage", {**SAMPLED, "role": "system"}, "role"),
        ("sampling/createMessage", {**SAMPLED, "model": None}, "model"),
        ("sampling/createMessage", {**SAMPLED, "stopReason": 1}, "stopReason"),
        ("sampling/createMessage", {**SAMPLED, "content": "ok"}, "content"),
        ("sampling/createMessage", {**SAMPLED, "content": {"type": "video"}}, "content.type"),
        ("sampling/createMessage", {**SAMPLED, "content": {"type": "image"}}, "content.data"),
        (
            "sampling/createMessage",
            {**SAMPLED, "content": {"type": "text", "text": "x", "extra": 1}},
            "content.extra",
        ),
        ("roots/list", {}, "roots"),
        ("roots/list", {"roots": [{"name": "x"}]}, "roots.0.uri"),
        ("roots/list", {"roots": [{"uri": "file:///a", "size": 1}]}, "roots.0.size"),
        ("roots/list", {"roots": [{"uri": "file:///a", "name": 1}]}, "roots.0.name"),
    ],
)
def test_wrong_sampling_and_roots_answers_name_the_member(
    method: str, content: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        broker_result(method, SAMPLE, content)
    assert caught.value.data == {"field": field}


def test_right_sampling_and_roots_answers_are_the_result() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    for content in (SAMPLED, {**SAMPLED, "content": image, "stopReason": "endTurn"}):
        assert broker_result("sampling/createMessage", SAMPLE, content) == content
    roots = {"roots": [{"uri": "file:///a", "name": "a"}]}
    assert broker_result("roots/list", {}, roots) == roots
