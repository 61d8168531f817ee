"""Fixtures for the config tests: an independent oracle for positions in a text."""

from __future__ import annotations

from collections.abc import Callable

import pytest

Locate = Callable[..., str]


def locate(text: str, needle: str, nth: int = 0) -> str:
    """``"line:column"`` (1-based) of the ``nth`` occurrence of ``needle`` in ``text``.

    Found by plain string search, so it checks the scanner rather than repeating it.
    """
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    before = text[:offset]
    line = before.count("\n") + 1
    column = offset - (before.rfind("\n") + 1) + 1
    return f"{line}:{column}"


@pytest.fixture
def at() -> Locate:
    return locate
