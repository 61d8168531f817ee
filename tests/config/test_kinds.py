"""Every kind: parse from text, accept from JSON, render back, and the errors it gives."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.config import (
    SETTINGS,
    BooleanKind,
    ChoiceKind,
    DurationKind,
    IntegerKind,
    InvalidValue,
    Kind,
    Origin,
    OriginKind,
    RevisionKind,
    RevisionListKind,
    SettingError,
    StringKind,
    StringListKind,
)
from mcpx.spec import REVISIONS

DURATION = DurationKind()
ALL_FIVE = ", ".join(REVISIONS)

PARSED: list[tuple[Kind[Any], str, object]] = [
    (DURATION, "120s", 120.0),
    (DURATION, "10m", 600.0),
    (DURATION, "1h", 3600.0),
    (DURATION, "500ms", 0.5),
    (DURATION, "1h30m", 5400.0),
    (DURATION, "1m500ms", 60.5),
    (DURATION, "1h2m3s4ms", 3723.004),
    (DURATION, "0s", 0.0),
    (DURATION, "0", 0.0),
    (DURATION, "45", 45.0),
    (DURATION, "1.5", 1.5),
    (DURATION, "1.5h", 5400.0),
    (DURATION, " 2s ", 2.0),
    (IntegerKind(), "42", 42),
    (IntegerKind(), "-3", -3),
    (IntegerKind(), " +7 ", 7),
    (IntegerKind(1), "1", 1),
    (BooleanKind(), "true", True),
    (BooleanKind(), "FALSE", False),
    (BooleanKind(), "1", True),
    (BooleanKind(), "0", False),
    (BooleanKind(), "Yes", True),
    (BooleanKind(), "no", False),
    (BooleanKind(), "ON", True),
    (BooleanKind(), "off", False),
    (StringKind(), " a b ", " a b "),
    (StringKind(), "", ""),
    (ChoiceKind(("red", "green")), "green", "green"),
    (ChoiceKind(("red", "green")), "RED", "red"),
    (StringListKind(), "a,b", ("a", "b")),
    (StringListKind(), " a , b ,", ("a", "b")),
    (StringListKind(), "", ()),
    (RevisionKind(), "2025-06-18", "2025-06-18"),
    (RevisionKind(), "", None),
    (RevisionKind(), "none", None),
    (RevisionListKind(), "2025-11-25,2024-11-05", ("2025-11-25", "2024-11-05")),
    (RevisionListKind(), "", ()),
]


@pytest.mark.parametrize(("kind", "text", "value"), PARSED)
def test_parse(kind: Kind[Any], text: str, value: object) -> None:
    assert kind.parse(text) == value
    # A JSON string is read exactly as the environment reads it.
    assert kind.accept(text) == value


@pytest.mark.parametrize(("kind", "text", "value"), PARSED)
def test_render_reads_back(kind: Kind[Any], text: str, value: object) -> None:
    assert kind.parse(kind.render(value)) == value
    assert kind.accept(kind.to_json(value)) == value


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0, "0s"),
        (0.5, "500ms"),
        (2.0, "2s"),
        (90.0, "1m30s"),
        (120.0, "2m"),
        (300.0, "5m"),
        (3600.0, "1h"),
        (5400.0, "1h30m"),
        (3723.004, "1h2m3s4ms"),
        (86400.0, "24h"),
        (0.0005, "0.0005s"),
        (1e-7, "0.0000001s"),
    ],
)
def test_duration_renders_compactly(seconds: float, shown: str) -> None:
    assert DURATION.render(seconds) == shown
    assert DURATION.parse(shown) == seconds


@pytest.mark.parametrize(
    ("kind", "value", "shown", "json"),
    [
        (DURATION, 120.0, "2m", 120),
        (DURATION, 0.25, "250ms", 0.25),
        (IntegerKind(), 7, "7", 7),
        (BooleanKind(), True, "true", True),
        (BooleanKind(), False, "false", False),
        (StringKind(), "x", "x", "x"),
        (ChoiceKind(("a", "b")), "b", "b", "b"),
        (StringListKind(), ("a", "b"), "a,b", ["a", "b"]),
        (StringListKind(), (), "", []),
        (RevisionKind(), None, "none", None),
        (RevisionKind(), "2026-07-28", "2026-07-28", "2026-07-28"),
        (RevisionListKind(), ("2025-03-26",), "2025-03-26", ["2025-03-26"]),
    ],
)
def test_render_and_json_forms(kind: Kind[Any], value: object, shown: str, json: object) -> None:
    assert kind.render(value) == shown
    assert kind.to_json(value) == json
    assert type(kind.to_json(value)) is type(json)


@pytest.mark.parametrize(
    ("kind", "json", "value"),
    [
        (DURATION, 90, 90.0),
        (DURATION, 0.5, 0.5),
        (DURATION, "90s", 90.0),
        (IntegerKind(), 3, 3),
        (IntegerKind(), "3", 3),
        (BooleanKind(), False, False),
        (BooleanKind(), "on", True),
        (StringListKind(), ["a", "b,c"], ("a", "b,c")),
        (StringListKind(), [], ()),
        (StringListKind(), "a,b", ("a", "b")),
        (RevisionKind(), None, None),
        (RevisionListKind(), ["2026-07-28"], ("2026-07-28",)),
    ],
)
def test_accept_json(kind: Kind[Any], json: object, value: object) -> None:
    assert kind.accept(json) == value


@pytest.mark.parametrize(
    ("kind", "given", "reason"),
    [
        (DURATION, "-5s", "negative"),
        (DURATION, -1, "negative"),
        (DURATION, "10x", None),
        (DURATION, "s", None),
        (DURATION, "", None),
        (DURATION, "1m1h", None),
        (DURATION, "1h 30m", None),
        (DURATION, "10M", None),
        (DURATION, "inf", None),
        (DURATION, math.inf, "not finite"),
        (DURATION, True, None),
        (DURATION, [1], None),
        (IntegerKind(), "4.0", None),
        (IntegerKind(), "four", None),
        (IntegerKind(), "1_000", None),
        (IntegerKind(), 4.0, None),
        (IntegerKind(), True, None),
        (IntegerKind(1), "0", "below the minimum 1"),
        (IntegerKind(0, 65535), 65536, "above the maximum 65535"),
        (BooleanKind(), "maybe", None),
        (BooleanKind(), 1, None),
        (StringKind(), 3, None),
        (StringKind(allow_empty=False), "", "empty"),
        (ChoiceKind(("a", "b")), "c", None),
        (ChoiceKind(("a", "b")), 1, None),
        (StringListKind(), {"a": 1}, None),
        (StringListKind(), ["a", 2], "item 1 is not a string"),
        (RevisionKind(), "2025-01-01", None),
        (RevisionKind(), 2025, None),
        (RevisionListKind(), "2025-11-25,2025-11-25", "2025-11-25 is listed twice"),
        (RevisionListKind(), "2025-11-25,latest", '"latest" is not a revision'),
        (RevisionListKind(), ["2025-11-25", 7], "item 1 is not a string"),
    ],
)
def test_invalid_values(kind: Kind[Any], given: object, reason: str | None) -> None:
    with pytest.raises(InvalidValue) as caught:
        kind.accept(given)
    assert caught.value.value == given
    assert caught.value.reason == reason
    assert caught.value.expected == kind.expected


# Through a registered setting: the message names the setting, the source, the value as
# given and what is valid.
@pytest.mark.parametrize(
    ("name", "source", "text", "message"),
    [
        (
            "pool.max",
            Origin(OriginKind.ENV, "MCPX_POOL_MAX"),
            "0",
            'pool.max from env MCPX_POOL_MAX has invalid value "0" (below the minimum 1);'
            " expected an integer >= 1",
        ),
        (
            "pool.max",
            Origin(OriginKind.FLAG, "--pool-max"),
            "many",
            'pool.max from flag --pool-max has invalid value "many"; expected an integer >= 1',
        ),
        (
            "pool.callTimeout",
            Origin(OriginKind.FLAG, "--pool-call-timeout"),
            "-5s",
            'pool.callTimeout from flag --pool-call-timeout has invalid value "-5s" (negative);'
            " expected a duration such as 500ms, 90s, 10m or 1h30m, or a number of seconds",
        ),
        (
            "proto.native",
            Origin(OriginKind.ENV, "MCPX_PROTO_NATIVE"),
            "maybe",
            'proto.native from env MCPX_PROTO_NATIVE has invalid value "maybe";'
            " expected true, false, 1, 0, yes, no, on or off",
        ),
        (
            "log.level",
            Origin(OriginKind.FLAG, "--log-level"),
            "verbose",
            'log.level from flag --log-level has invalid value "verbose"; expected one of'
            " debug, info, notice, warning, error, critical, alert, emergency",
        ),
        (
            "upstream.protocol",
            Origin(OriginKind.ENV, "MCPX_UPSTREAM_PROTOCOL"),
            "discover",
            'upstream.protocol from env MCPX_UPSTREAM_PROTOCOL has invalid value "discover";'
            " expected one of prefer-discover, prefer-initialize, force-discover,"
            " force-initialize",
        ),
        (
            "spec.first",
            Origin(OriginKind.ENV, "MCPX_MCP_SPEC"),
            "2025-01-01",
            'spec.first from env MCPX_MCP_SPEC has invalid value "2025-01-01";'
            f" expected one of {ALL_FIVE}, or none",
        ),
        (
            "spec.lenient",
            Origin(OriginKind.FLAG, "--spec-lenient"),
            "2025-06-18,2024-10-07",
            'spec.lenient from flag --spec-lenient has invalid value "2025-06-18,2024-10-07"'
            ' ("2024-10-07" is not a revision); expected a comma-separated list (a JSON array'
            f" in a file) of revisions from {ALL_FIVE}, each at most once",
        ),
        (
            "daemon.address",
            Origin(OriginKind.ENV, "MCPX_DAEMON_ADDRESS"),
            "",
            'daemon.address from env MCPX_DAEMON_ADDRESS has invalid value "" (empty);'
            " expected a non-empty string",
        ),
    ],
)
def test_setting_errors_name_setting_source_value_and_valid(
    name: str, source: Origin, text: str, message: str
) -> None:
    with pytest.raises(SettingError) as caught:
        SETTINGS[name].parse(text, source)
    assert str(caught.value) == message
    assert caught.value.setting == name
    assert caught.value.source == source
    assert isinstance(caught.value.__cause__, InvalidValue)


def test_a_file_source_is_named_with_its_path() -> None:
    source = Origin(OriginKind.FILE, "/p/.mcpx.json")
    with pytest.raises(SettingError) as caught:
        SETTINGS["pool.max"].accept(0, source)
    assert str(caught.value) == (
        "pool.max from file /p/.mcpx.json has invalid value 0 (below the minimum 1);"
        " expected an integer >= 1"
    )


def test_an_unknown_revision_lists_all_five() -> None:
    for name in ("spec.first", "spec.precedence", "spec.lenient"):
        with pytest.raises(SettingError) as caught:
            SETTINGS[name].parse("2024-01-01", Origin(OriginKind.FLAG, SETTINGS[name].flag))
        for rev in REVISIONS:
            assert rev in str(caught.value)


@given(st.integers(min_value=0, max_value=10**13))
def test_duration_round_trip_on_whole_milliseconds(millis: int) -> None:
    seconds = millis / 1000
    shown = DURATION.render(seconds)
    assert DURATION.parse(shown) == seconds
    assert DURATION.accept(DURATION.to_json(seconds)) == seconds


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_duration_round_trip_on_any_float(seconds: float) -> None:
    assert DURATION.parse(DURATION.render(seconds)) == seconds


_ITEM = st.text(st.characters(exclude_characters=",", exclude_categories=["Cs"]), min_size=1)


@given(st.lists(_ITEM.map(str.strip).filter(bool)).map(tuple))
def test_string_list_round_trip(items: tuple[str, ...]) -> None:
    kind = StringListKind()
    assert kind.parse(kind.render(items)) == items


@given(st.permutations(REVISIONS).flatmap(lambda revs: st.just(tuple(revs[: len(revs) // 2 + 1]))))
def test_revision_list_round_trip(revs: tuple[str, ...]) -> None:
    kind = RevisionListKind()
    assert kind.parse(kind.render(revs)) == revs
    assert kind.accept(kind.to_json(revs)) == revs


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_integer_round_trip(number: int) -> None:
    kind = IntegerKind()
    assert kind.parse(kind.render(number)) == number
