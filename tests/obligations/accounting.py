"""Which obligations the tests prove, and which ``docs/recorded-readings.md`` accounts for.

A test proves an id with the ``obligation`` marker: ``@pytest.mark.obligation("S-HTTP-37")``
on a test function or a ``Test…`` class, in a ``pytestmark`` of a test module or class, or in
``marks=`` of a ``pytest.param``. The test files are read with ``ast``, not imported, so the
count is the same whether the whole suite runs or one file does, and a marker is seen even in
a module that needs peers to import.

Invariants: a marker is counted only where pytest applies it to a test; one anywhere else,
or one whose ids are not string literals, is a ``Misplaced`` (so no id is counted by a
marker that proves nothing). An id in the readings counts as accounted for wherever it is
written there; the "Not yet proved by a test" section lists ids that no test proves yet,
one a line, each with its reason.

For the counts of MUST rows proved: ``PYTHONPATH=tests .venv/bin/python -m obligations.accounting``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from obligations.checklists import Obligation
from obligations.manifest import OBLIGATIONS

TESTS = Path(__file__).resolve().parents[1]
READINGS = TESTS.parent / "docs" / "recorded-readings.md"
NOT_YET = "Not yet proved by a test"

ID = re.compile(r"\b[SC]-[A-Z]+-\d+\b")
_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")


@dataclass(frozen=True)
class Misplaced:
    """A marker that proves nothing where it is, and why."""

    where: str
    why: str


@dataclass
class Proofs:
    """Each id's proving tests (``path::name``), and the markers that prove nothing."""

    by_id: dict[str, list[str]] = field(default_factory=dict)
    misplaced: list[Misplaced] = field(default_factory=list)


def _is_marker(node: ast.AST) -> bool:
    """``pytest.mark.obligation`` itself (called or not)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "obligation"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "pytest"
    )


def _is_test(node: ast.AST, in_class: bool) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name.startswith("test")
    return isinstance(node, ast.ClassDef) and node.name.startswith("Test") and not in_class


def _marks_of(value: ast.expr) -> list[ast.expr]:
    """The marks a ``pytestmark =`` or ``marks=`` value names."""
    return list(value.elts) if isinstance(value, ast.List | ast.Tuple) else [value]


def _applied(tree: ast.Module) -> Iterator[tuple[ast.expr, str]]:
    """Every mark expression pytest applies to a test, with the test's name."""

    def walk(body: list[ast.stmt], owner: str | None) -> Iterator[tuple[ast.expr, str]]:
        for node in body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                for mark in _marks_of(node.value):
                    yield mark, owner or "<module>"
            if not _is_test(node, owner is not None):
                continue
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            name = f"{owner}::{node.name}" if owner else node.name
            for deco in node.decorator_list:
                yield deco, name
                # pytest.param(..., marks=...) inside a parametrize decorator
                for sub in ast.walk(deco):
                    if isinstance(sub, ast.Call):
                        for kw in sub.keywords:
                            if kw.arg == "marks":
                                for mark in _marks_of(kw.value):
                                    yield mark, name
            if isinstance(node, ast.ClassDef):
                yield from walk(node.body, name)

    yield from walk(tree.body, None)


def read_file(path: Path, proofs: Proofs, rel: str) -> None:
    """Add the markers of one Python file to ``proofs``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    counted: set[int] = set()
    if _TEST_FILE.match(path.name):
        for mark, test in _applied(tree):
            if not (isinstance(mark, ast.Call) and _is_marker(mark.func)):
                continue
            counted.add(id(mark.func))
            where = f"{rel}::{test}"
            ids = [a.value for a in mark.args if isinstance(a, ast.Constant)]
            if (
                not mark.args
                or mark.keywords
                or len(ids) != len(mark.args)
                or not all(isinstance(i, str) for i in ids)
            ):
                why = "its ids must be string literals, at least one, no keywords"
                proofs.misplaced.append(Misplaced(where, why))
                continue
            for ident in ids:
                assert isinstance(ident, str)
                proofs.by_id.setdefault(ident, []).append(where)
    for node in ast.walk(tree):
        if _is_marker(node) and id(node) not in counted:
            line = getattr(node, "lineno", 0)
            why = "not applied to a test (a test function or class, pytestmark, marks=)"
            proofs.misplaced.append(Misplaced(f"{rel}:{line}", why))


def collect(root: Path = TESTS) -> Proofs:
    """The markers of every Python file under ``root``."""
    proofs = Proofs()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts:
            read_file(path, proofs, path.relative_to(root).as_posix())
    return proofs


@dataclass(frozen=True)
class Readings:
    """Ids ``docs/recorded-readings.md`` names, and those it lists as not yet proved."""

    named: frozenset[str]
    not_yet: dict[str, str]  # id -> its line


def read_readings(path: Path = READINGS) -> Readings:
    """The ids of the readings file, and the lines of its "Not yet proved" section."""
    text = path.read_text(encoding="utf-8")
    not_yet: dict[str, str] = {}
    level = 0
    for line in text.splitlines():
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading:
            depth = len(heading.group(1))
            if heading.group(2).strip() == NOT_YET:
                level = depth
            elif level and depth <= level:
                level = 0
            continue
        if level:
            for ident in ID.findall(line):
                not_yet[ident] = line.strip()
    return Readings(frozenset(ID.findall(text)), not_yet)


def must_counts(
    proved: set[str], manifest: dict[str, Obligation] = OBLIGATIONS
) -> dict[str, tuple[int, int]]:
    """Per checklist: (MUST rows proved by a marked test, MUST rows)."""
    out: dict[str, tuple[int, int]] = {}
    for side, prefix in (("server", "S-"), ("client", "C-")):
        must = {i for i, o in manifest.items() if i.startswith(prefix) and o.must}
        out[side] = (len(must & proved), len(must))
    return out


def main() -> int:
    proofs = collect()
    for side, (proved, total) in must_counts(set(proofs.by_id)).items():
        print(f"{side}: {proved} of {total} MUST rows proved by a marked test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
