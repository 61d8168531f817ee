"""Obligations counted both ways: every checklist id is proved or recorded, every marker is real.

The manifest (``manifest.py``) holds every id of the two checklists. Each id must be proved
by a test carrying ``@pytest.mark.obligation(id)`` or be named in ``docs/recorded-readings.md``
with its reason (a reading, or a line under "Not yet proved by a test"); each marker must name
an id of the manifest and sit on a test. The markers are read from the test files with
``ast`` (``accounting.py``), so these tests give the same answer alone or in the whole suite.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from obligations.accounting import (
    NOT_YET,
    READINGS,
    TESTS,
    collect,
    must_counts,
    read_readings,
)
from obligations.checklists import MANIFEST, Obligation, parse, read_checklists, spec_notes
from obligations.manifest import OBLIGATIONS

ID_SHAPE = re.compile(r"^[SC]-[A-Z]+-[1-9]\d*$")
KEYWORD = re.compile(r"\b(MUST|SHOULD|MAY)\b")
REGENERATE = "write it again: .venv/bin/python tests/obligations/checklists.py"


def test_the_manifest_is_the_checklists() -> None:
    for ident, o in OBLIGATIONS.items():
        assert ID_SHAPE.match(ident), ident
        assert KEYWORD.search(o.level), (ident, o.level)
        assert o.revisions and o.behaviour and "\n" not in o.behaviour, ident
    root = spec_notes()
    if root is None:  # CI and a checkout beside ../shared compare; elsewhere the copy stands
        return
    rows = read_checklists(root)
    missing = sorted(set(rows) - set(OBLIGATIONS))
    gone = sorted(set(OBLIGATIONS) - set(rows))
    changed = sorted(i for i in set(rows) & set(OBLIGATIONS) if rows[i] != OBLIGATIONS[i])
    assert not (missing or gone or changed), (
        f"{MANIFEST.name} differs from the checklists in {root}: new {missing}, "
        f"removed {gone}, changed {changed}; {REGENERATE}"
    )
    assert list(rows) == list(OBLIGATIONS), f"the order differs; {REGENERATE}"


def test_every_obligation_is_proved_by_a_test_or_recorded() -> None:
    proved = set(collect().by_id)
    readings = read_readings()
    open_ = [i for i in OBLIGATIONS if i not in proved and i not in readings.named]
    assert not open_, (
        f"obligations neither proved nor recorded ({len(open_)}): {open_}. Mark the test "
        f'that proves each (@pytest.mark.obligation("{open_[0]}")), or name it in '
        f"{READINGS.name} with its reason (under '{NOT_YET}' if no test proves it yet)"
    )


def test_every_marker_names_an_obligation_and_sits_on_a_test() -> None:
    proofs = collect()
    assert not proofs.misplaced, [f"{m.where}: {m.why}" for m in proofs.misplaced]
    unknown = {i: w for i, w in proofs.by_id.items() if i not in OBLIGATIONS}
    assert not unknown, f"markers name ids no checklist has: {unknown}"
    unknown_read = sorted(read_readings().named - set(OBLIGATIONS))
    assert not unknown_read, f"{READINGS.name} names ids no checklist has: {unknown_read}"


def test_what_is_listed_as_not_yet_proved_is_not_proved() -> None:
    # The section the failures above point to is there to be written in.
    assert re.search(rf"^#+ {NOT_YET}$", READINGS.read_text(encoding="utf-8"), re.M), NOT_YET
    proved = collect().by_id
    not_yet = read_readings().not_yet
    stale = {i: proved[i] for i in not_yet if i in proved}
    assert not stale, f"proved now, so take them out of '{NOT_YET}': {stale}"
    bare = [line for line in not_yet.values() if len(re.sub(r"[\W\d_]+", "", line)) < 20]
    assert not bare, f"each line of '{NOT_YET}' gives its reason: {bare}"


def test_markers_are_found_wherever_pytest_applies_them(tmp_path: Path) -> None:
    """The reader itself: counted where pytest applies the marker, refused elsewhere."""
    source = textwrap.dedent(
        """
        import pytest

        pytestmark = [pytest.mark.obligation("S-LIFE-1")]

        @pytest.mark.obligation("S-LIFE-2", "S-LIFE-3")
        def test_a() -> None: ...

        @pytest.mark.obligation("S-LIFE-4")
        class TestB:
            pytestmark = pytest.mark.obligation("S-LIFE-5")

            @pytest.mark.obligation("S-LIFE-6")
            async def test_c(self) -> None: ...

        @pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.obligation("S-LIFE-7"))])
        def test_d(x: int) -> None: ...

        @pytest.mark.obligation("S-LIFE-8")
        def helper() -> None: ...

        @pytest.mark.obligation(IDS)
        def test_e() -> None: ...

        mark = pytest.mark.obligation
        """
    )
    (tmp_path / "test_sample.py").write_text(source)
    proofs = collect(tmp_path)
    assert proofs.by_id == {
        "S-LIFE-1": ["test_sample.py::<module>"],
        "S-LIFE-2": ["test_sample.py::test_a"],
        "S-LIFE-3": ["test_sample.py::test_a"],
        "S-LIFE-4": ["test_sample.py::TestB"],
        "S-LIFE-5": ["test_sample.py::TestB"],
        "S-LIFE-6": ["test_sample.py::TestB::test_c"],
        "S-LIFE-7": ["test_sample.py::test_d"],
    }
    assert sorted(m.where for m in proofs.misplaced) == [
        "test_sample.py:19",  # helper(): not a test
        "test_sample.py:25",  # a bare reference, applied to nothing
        "test_sample.py::test_e",  # ids that are not string literals
    ]
    # The same markers in a module pytest does not collect prove nothing.
    elsewhere = tmp_path / "support"
    elsewhere.mkdir()
    (elsewhere / "helpers.py").write_text(source)
    proofs = collect(elsewhere)
    assert proofs.by_id == {}
    assert len(proofs.misplaced) == source.count("pytest.mark.obligation")


def test_checklist_rows_become_one_line_behaviours() -> None:
    text = (
        "| id | obligation | level | revisions | source | test |\n"
        "|---|---|---|---|---|---|\n"
        "| S-X-1 | Do this (e.g. that). Then more. | MUST / SHOULD | all | a.mdx | t |\n"
        "| S-X-2 | " + "word " * 60 + "| SHOULD (schema: MUST) | 2026-07-28 only | b | t |\n"
    )
    rows = parse(text)
    assert rows["S-X-1"] == Obligation("MUST / SHOULD", "all", "Do this (e.g. that).")
    assert rows["S-X-1"].must
    long = rows["S-X-2"]
    assert long.behaviour.endswith("…") and len(long.behaviour) <= 140
    assert not long.must  # a MUST only in a parenthesised remark does not count
    assert must_counts({"S-X-1"}, rows) == {"server": (1, 1), "client": (0, 0)}


def test_the_tests_tree_is_where_the_accounting_looks() -> None:
    assert (TESTS / "obligations" / "test_manifest.py").is_file()
    assert READINGS.is_file()
