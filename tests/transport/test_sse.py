"""The SSE parser: the WHATWG standard's examples, edge cases, and chunking properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.transport import EventTooLarge, SseEvent, SseParser


def parse(*chunks: bytes | str, max_event: int = 1 << 20) -> list[SseEvent]:
    parser = SseParser(max_event)
    return [event for chunk in chunks for event in parser.feed(chunk)]


def ev(data: str, event: str = "message", id: str = "", retry: int | None = None) -> SseEvent:
    return SseEvent(data=data, event=event, id=id, retry=retry)


# The examples of https://html.spec.whatwg.org/multipage/server-sent-events.html
# ("Interpreting an event stream" and the authoring notes), with what they must give.
STANDARD_EXAMPLES: list[tuple[str | bytes, list[SseEvent]]] = [
    ("data: YHOO\ndata: +2\ndata: 10\n\n", [ev("YHOO\n+2\n10")]),
    (
        ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
        "data:  third event\n\n",
        [ev("first event", id="1"), ev("second event"), ev(" third event")],
    ),
    ("data\n\ndata\ndata\n\ndata:", [ev(""), ev("\n")]),
    ("data:test\n\ndata: test\n\n", [ev("test"), ev("test")]),
    (
        "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
        [ev("73857293", "add"), ev("2153", "remove"), ev("113411", "add")],
    ),
    ("data: first line\ndata: second line\n\n", [ev("first line\nsecond line")]),
]

EDGE_CASES: list[tuple[str | bytes, list[SseEvent]]] = [
    # Line endings: CR, CRLF and LF, mixed.
    ("data: a\r\rdata: b\r\n\r\ndata: c\n\n", [ev("a"), ev("b"), ev("c")]),
    # A leading BOM is dropped once; a second one is data.
    ("\ufeffdata: x\n\n", [ev("x")]),
    ("\ufeff\ufeffdata: x\n\n", []),  # the field name is then "\ufeffdata": unknown
    # Only the first space after the colon is removed; a name without colon has "" value.
    ("data:   spaced\n\n", [ev("  spaced")]),
    ("data\n\n", [ev("")]),
    # Unknown fields and comments are ignored; an event type alone dispatches nothing.
    ("foo: bar\n:comment\nevent: x\n\ndata: y\n\n", [ev("y")]),
    # retry: digits only, kept on the event of its block.
    ("retry: 3000\ndata: a\n\nretry: 1.5\ndata: b\n\n", [ev("a", retry=3000), ev("b")]),
    # An id holding NUL is ignored; ids persist to later events.
    ("id: 7\ndata: a\n\nid: b\x00d\ndata: b\n\n", [ev("a", id="7"), ev("b", id="7")]),
    # An empty id resets it.
    ("id: 7\ndata: a\n\nid:\ndata: b\n\n", [ev("a", id="7"), ev("b")]),
    # Invalid UTF-8 is replaced, not fatal.
    (b"data: \xff\xfe ok\n\n", [ev("\ufffd\ufffd ok")]),
    # An event cut by the end of the stream is never dispatched.
    ("data: complete\n\ndata: cut", [ev("complete")]),
]


@pytest.mark.parametrize(("stream", "expected"), STANDARD_EXAMPLES + EDGE_CASES)
def test_table(stream: str | bytes, expected: list[SseEvent]) -> None:
    assert parse(stream) == expected


def test_id_and_retry_are_tracked_for_reconnection() -> None:
    parser = SseParser(1000)
    assert parser.feed("id: prime\ndata:\n\n") == [ev("", id="prime")]  # a priming event
    assert parser.feed("retry: 250\nid: next\n\n") == []  # no data: nothing dispatched...
    assert (parser.last_event_id, parser.retry) == ("next", 250)  # ...but the id moved
    assert parser.feed("id: unfinished\ndata: x\n") == []
    assert parser.last_event_id == "next"  # an id counts at its blank line only


def test_a_resumed_parser_starts_from_the_given_id() -> None:
    parser = SseParser(1000, last_event_id="41")
    assert parser.feed("data: a\n\n") == [ev("a", id="41")]


def test_an_oversized_event_is_refused_with_the_events_before_it() -> None:
    parser = SseParser(50)
    with pytest.raises(EventTooLarge) as caught:
        parser.feed("data: small\n\ndata: " + "x" * 100 + "\n\n")
    assert caught.value.events == [ev("small")]


def test_an_oversized_event_is_refused_across_data_lines() -> None:
    parser = SseParser(50)
    for _ in range(4):
        parser.feed("data: 0123456789\n")
    with pytest.raises(EventTooLarge):
        parser.feed("data: 0123456789\n")


@pytest.mark.obligation("C-HTTP-37")
def test_keep_alive_comments_never_add_up() -> None:
    parser = SseParser(50)
    for _ in range(1000):
        assert parser.feed(":\r\n") == []
    assert parser.feed("data: fine\n\n") == [ev("fine")]


def test_an_unfinished_line_is_capped_too() -> None:
    parser = SseParser(50)
    parser.feed("data: " + "y" * 40)
    with pytest.raises(EventTooLarge):
        parser.feed("y" * 20)


# -- properties ------------------------------------------------------------------------------

_TEXT = st.text(alphabet=st.sampled_from("ab :é\x00\ufeff1"), max_size=8)
_LINE = st.one_of(
    st.builds(lambda v: f"data:{v}", _TEXT),
    st.builds(lambda v: f"data: {v}", _TEXT),
    st.builds(lambda v: f"event: {v}", _TEXT),
    st.builds(lambda v: f"id: {v}", _TEXT),
    st.builds(lambda v: f"retry: {v}", st.one_of(st.integers(0, 5000).map(str), _TEXT)),
    st.builds(lambda v: f":{v}", _TEXT),
    st.just(""),
    st.just("data"),
    _TEXT,
)
_ENDING = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_LINE, _ENDING), max_size=20))
    text = "".join(line + end for line, end in lines) + draw(st.sampled_from(["", "data: x"]))
    raw = text.encode("utf-8")
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.booleans()):
        raw += b"\xe2\x82"  # a truncated UTF-8 sequence in the final, undispatched line
    return raw


def oracle(raw: bytes) -> list[SseEvent]:
    """A direct reading of the standard over the whole stream at once: the reference."""
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)[:-1]  # the last piece has no line end yet
    events: list[SseEvent] = []
    data: list[str] = []
    kind, eid, last_id, retry = "", "", "", None
    for line in lines:
        if line == "":
            last_id = eid
            if data:
                events.append(ev("\n".join(data), kind or "message", last_id, retry))
            data, kind, retry = [], "", None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "id" and "\x00" not in value:
            eid = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return events


@given(streams())
def test_the_parser_agrees_with_the_oracle(raw: bytes) -> None:
    assert parse(raw) == oracle(raw)


@given(streams())
def test_a_split_anywhere_gives_the_same_events(raw: bytes) -> None:
    whole = parse(raw)
    for cut in range(len(raw) + 1):
        assert parse(raw[:cut], raw[cut:]) == whole


@given(streams(), st.lists(st.integers(0, 64), max_size=12))
def test_any_chunking_gives_the_same_events(raw: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert parse(*chunks) == parse(raw)


@given(streams())
def test_byte_at_a_time_gives_the_same_events(raw: bytes) -> None:
    assert parse(*[raw[i : i + 1] for i in range(len(raw))]) == parse(raw)
