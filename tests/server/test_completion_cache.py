"""Completion from mcpx's catalogue for a server that declared no completions."""

from __future__ import annotations

import pytest

from mcpx.ops._completion import declares_completions, from_catalogue

ENTRY = {
    "capabilities": {"resources": {}},
    "resources": [
        {"uri": "file:///notes/alpha.md"},
        {"uri": "file:///notes/beta.md"},
        {"uri": "file:///notes/alpha.md"},
        {"uri": "file:///other/gamma.md"},
    ],
}


def test_template_values_come_from_listed_uris() -> None:
    ref = {"type": "ref/resource", "uri": "file:///notes/{name}.md"}
    out = from_catalogue("files", ENTRY, ref, {"name": "name", "value": ""})
    assert out["completion"]["values"] == ["alpha", "beta"]  # distinct, in listed order
    assert out["source"] == "cache"
    typed = from_catalogue("files", ENTRY, ref, {"name": "name", "value": "b"})
    assert typed["completion"] == {"values": ["beta"], "total": 1, "hasMore": False}


def test_reserved_expansion_spans_slashes() -> None:
    ref = {"type": "ref/resource", "uri": "file:///{+path}"}
    out = from_catalogue("files", ENTRY, ref, {"name": "path", "value": "notes/"})
    assert out["completion"]["values"] == ["notes/alpha.md", "notes/beta.md"]


def test_prompt_arguments_and_unknown_variables_offer_nothing() -> None:
    prompt = from_catalogue("files", ENTRY, {"type": "ref/prompt", "name": "p"}, {"name": "x"})
    assert prompt["completion"]["values"] == []
    ref = {"type": "ref/resource", "uri": "file:///notes/{name}.md"}
    assert from_catalogue("files", ENTRY, ref, {"name": "nope"})["completion"]["values"] == []


def test_only_a_declaration_is_trusted() -> None:
    assert not declares_completions(ENTRY)
    assert declares_completions({"capabilities": {"completions": {}}})
    # Catalogued before capabilities were recorded: asked, as before.
    assert declares_completions({"resources": []})


@pytest.mark.obligation("S-COMP-2")
def test_a_relayed_completion_carries_at_most_100_values() -> None:
    from mcpx.server._surface import _at_most_100

    long = {"completion": {"values": [str(i) for i in range(150)], "hasMore": False}}
    cut = _at_most_100(long)
    assert cut["completion"] == {
        "values": [str(i) for i in range(100)],
        "hasMore": True,
        "total": 150,
    }
    assert long["completion"]["values"][100] == "100"  # a copy: the upstream's is untouched
    short = {"completion": {"values": ["a"], "total": 7}}
    assert _at_most_100(short) is short
