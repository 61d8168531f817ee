"""The line splitter under the stdio transport: framing, caps, and chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.transport._lines import TRUNCATED, LineSplitter


def split(*chunks: bytes, limit: int = 100, truncate: bool = False) -> list[bytes]:
    splitter = LineSplitter(limit, truncate=truncate)
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    tail = splitter.finish()
    return lines if tail is None else [*lines, tail]


def test_lines_end_at_lf_and_a_cr_before_it_is_dropped() -> None:
    assert split(b'{"a":1}\n{"b":2}\r\n\nlast') == [b'{"a":1}', b'{"b":2}', b"", b"last"]


def test_a_line_over_the_limit_stops_the_splitter() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"short\n" + b"x" * 11 + b"\nafter\n") == [b"short"]
    assert splitter.overflowed
    assert splitter.feed(b"more\n") == []
    assert splitter.finish() is None


def test_a_line_exactly_at_the_limit_is_fine() -> None:
    assert split(b"x" * 10 + b"\n", limit=10) == [b"x" * 10]


def test_overflow_is_found_without_a_newline_ever_arriving() -> None:
    splitter = LineSplitter(10)
    for _ in range(3):
        splitter.feed(b"abcd")
    assert splitter.overflowed


def test_truncation_keeps_the_start_and_marks_it() -> None:
    lines = split(b"0123456789abcdef\nok\n", b"z" * 30, b"z\n", limit=10, truncate=True)
    assert lines == [b"0123456789" + TRUNCATED, b"ok", b"z" * 10 + TRUNCATED]


def test_a_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineSplitter(0)


@given(
    st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=10),
    st.lists(st.integers(0, 400), max_size=10),
    st.booleans(),
)
def test_any_chunking_gives_the_same_lines(
    lines: list[bytes], cuts: list[int], truncate: bool
) -> None:
    raw = b"".join(line + b"\n" for line in lines)
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert split(*chunks, limit=20, truncate=truncate) == split(raw, limit=20, truncate=truncate)
    if not truncate and all(len(line) <= 20 for line in lines):
        expected = [line.removesuffix(b"\r") for line in lines]
        assert split(*chunks, limit=20) == expected
