"""What mcpx declares upstream for a 2026-07-28 host's call: never more than the host did."""

from __future__ import annotations

from mcpx.client._handler import narrowed

OURS = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"tools": {}, "context": {}},
    "roots": {"listChanged": True},
}


def test_only_what_both_declared_survives() -> None:
    host = {"sampling": {}, "elicitation": {"form": {}}, "experimental": {"x": {}}}
    assert narrowed(OURS, host) == {"sampling": {}, "elicitation": {"form": {}}}


def test_a_host_that_declared_nothing_gets_nothing_declared() -> None:
    assert narrowed(OURS, {}) == {}
    assert narrowed(OURS, {"sampling": None, "roots": False}) == {}


def test_no_host_means_ours_unchanged() -> None:
    assert narrowed(OURS, None) is OURS


def test_settings_free_declarations_match_either_spelling() -> None:
    # {} and true both mean "declared"; ours keeps its own spelling.
    assert narrowed({"roots": {}}, {"roots": {"listChanged": True}}) == {"roots": {}}
    assert narrowed(OURS, {"roots": {}}) == {"roots": {}}
