"""Revisions, eras, predicates and the spec policy, as tables."""

from __future__ import annotations

import pytest

from mcpx.spec import (
    HEADERLESS,
    NEWEST,
    OLDEST,
    REVISIONS,
    Era,
    Policy,
    PolicyError,
    UnknownRevisionError,
    at_or_after,
    before,
    between,
    era_of,
    only,
    parse_revision,
)

NEWEST_FIRST = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def test_the_five_revisions_in_order() -> None:
    assert tuple(reversed(NEWEST_FIRST)) == REVISIONS
    assert OLDEST == "2024-11-05"
    assert HEADERLESS == "2025-03-26"
    assert NEWEST == "2026-07-28"


@pytest.mark.parametrize(
    ("rev", "era"),
    [(r, Era.LEGACY) for r in REVISIONS[:4]] + [("2026-07-28", Era.MODERN)],
)
def test_eras(rev: str, era: Era) -> None:
    assert era_of(rev) is era


@pytest.mark.parametrize(
    ("rev", "floor", "expected"),
    [
        ("2025-06-18", "2025-06-18", True),
        ("2025-11-25", "2025-06-18", True),
        ("2025-03-26", "2025-06-18", False),
        ("2026-07-28", "2024-11-05", True),
    ],
)
def test_at_or_after_and_before_are_complements(rev: str, floor: str, expected: bool) -> None:
    assert at_or_after(rev, floor) is expected
    assert before(rev, floor) is not expected


def test_between_and_only() -> None:
    assert between("2025-06-18", "2025-03-26", "2025-11-25")
    assert between("2025-03-26", "2025-03-26", "2025-03-26")
    assert not between("2026-07-28", "2024-11-05", "2025-11-25")
    assert only("2025-03-26", "2025-03-26")
    assert only("2025-03-26", "2024-11-05", "2025-03-26")
    assert not only("2025-06-18", "2025-03-26")


@pytest.mark.parametrize("bad", ["1999-01-01", "", "2025-11-25 ", None, 20250618, "latest"])
def test_unknown_revisions_are_refused_with_the_valid_list(bad: object) -> None:
    with pytest.raises(UnknownRevisionError) as info:
        parse_revision(bad)
    for rev in REVISIONS:
        assert rev in str(info.value)
    with pytest.raises(UnknownRevisionError):
        at_or_after("2025-13-01", "2024-11-05")


def test_default_policy_is_newest_first_and_strict() -> None:
    policy = Policy.build()
    assert list(policy.precedence) == NEWEST_FIRST
    assert policy.first() == "2026-07-28"
    assert all(policy.strict(r) for r in REVISIONS)
    assert Policy() == policy


@pytest.mark.parametrize(
    ("given", "first", "expected"),
    [
        (["2024-11-05"], None, ["2024-11-05", *NEWEST_FIRST[:4]]),
        (["2025-03-26", "2024-11-05"], None, ["2025-03-26", "2024-11-05", *NEWEST_FIRST[:3]]),
        ([], "2024-11-05", ["2024-11-05", *NEWEST_FIRST[:4]]),
        (
            ["2025-06-18"],
            "2026-07-28",
            ["2026-07-28", "2025-06-18", *NEWEST_FIRST[1:2], *NEWEST_FIRST[3:]],
        ),
        (NEWEST_FIRST, "2026-07-28", NEWEST_FIRST),
    ],
)
def test_partial_precedence_is_completed_and_first_moves_one(
    given: list[str], first: str | None, expected: list[str]
) -> None:
    policy = Policy.build(given, first)
    assert list(policy.precedence) == expected
    assert sorted(policy.precedence) == sorted(REVISIONS)
    assert policy.first() == expected[0]


def test_lenient_and_wins() -> None:
    policy = Policy.build(lenient=["2026-07-28"])
    assert not policy.strict("2026-07-28")
    assert policy.strict("2025-11-25")
    assert policy.wins("2024-11-05", "2026-07-28") == "2026-07-28"
    assert Policy.build(first="2024-11-05").wins("2024-11-05", "2026-07-28") == "2024-11-05"
    assert policy.as_json()["lenient"] == ["2026-07-28"]
    assert "2026-07-28" not in policy.as_json()["strict"]


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"precedence": ["2025-13-01"]}, "spec.precedence"),
        ({"first": "1999-01-01"}, "spec.first"),
        ({"lenient": ["draft"]}, "spec.lenient"),
    ],
)
def test_policy_refuses_unknown_revisions_naming_the_setting(
    kwargs: dict[str, object], where: str
) -> None:
    with pytest.raises(UnknownRevisionError, match=where):
        Policy.build(**kwargs)  # type: ignore[arg-type]


def test_policy_refuses_duplicates() -> None:
    with pytest.raises(PolicyError, match="2024-11-05"):
        Policy.build(["2024-11-05", "2024-11-05"])
