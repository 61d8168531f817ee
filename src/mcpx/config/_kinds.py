"""Kinds of setting value: how each is read from text and from JSON, and written back.

A kind knows nothing of setting names or sources. It raises ``InvalidValue`` with the
offending piece and what would be valid; ``Setting`` adds the name and the source.

Invariants, for every valid typed value ``v`` of a kind ``k``:

- ``k.parse(k.render(v)) == v`` (what ``mcpx settings`` shows can be pasted back);
- ``k.accept(k.to_json(v)) == v`` (what ``--json`` prints can go in a config file);
- typed values are immutable: lists are tuples, an unset revision is ``None``.

A JSON string in a file is read as the environment reads it (``"10m"``, ``"a,b"``).
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import ClassVar, Generic, TypeAlias, TypeVar

from mcpx.spec import REVISIONS, UnknownRevisionError, parse_revision

__all__ = [
    "BooleanKind",
    "ChoiceKind",
    "DurationKind",
    "IntegerKind",
    "InvalidValue",
    "JSONValue",
    "Kind",
    "RevisionKind",
    "RevisionListKind",
    "StringKind",
    "StringListKind",
    "show",
]

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"

T = TypeVar("T")


def show(value: object) -> str:
    """A value spelled as JSON, so a string is quoted and ``0`` is not ``"0"``."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class InvalidValue(ValueError):
    """A value a kind cannot take; ``Setting`` turns it into a ``SettingError``."""

    def __init__(self, value: object, expected: str, reason: str | None = None) -> None:
        self.value = value
        self.expected = expected
        self.reason = reason
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        """The tail of every message: the bad value, why, and what is valid."""
        why = f" ({self.reason})" if self.reason else ""
        return f"has invalid value {show(self.value)}{why}; expected {self.expected}"


class Kind(ABC, Generic[T]):
    """How one kind of value is read, checked and written back."""

    name: ClassVar[str]

    @property
    @abstractmethod
    def expected(self) -> str:
        """What is valid, as the words that follow "expected"."""

    @abstractmethod
    def parse(self, text: str) -> T:
        """The typed value of ``text`` as given in the environment or on the command line.

        Raises:
            InvalidValue: ``text`` is not a value of this kind.
        """

    def accept(self, value: object) -> T:
        """The typed value of a JSON value from a config file.

        Raises:
            InvalidValue: ``value`` is not a value of this kind.
        """
        if isinstance(value, str):
            return self.parse(value)
        return self._from_json(value)

    @abstractmethod
    def render(self, value: T) -> str:
        """``value`` as text that ``parse`` reads back."""

    @abstractmethod
    def to_json(self, value: T) -> JSONValue:
        """``value`` as JSON that ``accept`` reads back."""

    def _from_json(self, value: object) -> T:
        # Only kinds with a native JSON form (number, bool, array, null) override this.
        raise self._invalid(value)

    def _invalid(self, value: object, reason: str | None = None) -> InvalidValue:
        return InvalidValue(value, self.expected, reason)


# Units in the order they must appear; "m" must not swallow the "m" of "ms".
_AMOUNT = r"[0-9]+(?:\.[0-9]+)?"
_DURATION = re.compile(
    rf"(?:(?P<h>{_AMOUNT})h)?(?:(?P<m>{_AMOUNT})m(?!s))?"
    rf"(?:(?P<s>{_AMOUNT})s)?(?:(?P<ms>{_AMOUNT})ms)?"
)
_BARE = re.compile(_AMOUNT)
_UNIT = {"h": Decimal(3600), "m": Decimal(60), "s": Decimal(1), "ms": Decimal("0.001")}
_MS_PER = (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1))


class DurationKind(Kind[float]):
    """A span of time, held as float seconds: ``500ms``, ``90s``, ``10m``, ``1h30m``, ``2``."""

    name = "duration"

    @property
    def expected(self) -> str:
        return "a duration such as 500ms, 90s, 10m or 1h30m, or a number of seconds"

    def parse(self, text: str) -> float:
        spelled = text.strip()
        if spelled.startswith("-"):
            raise self._invalid(text, "negative")
        if _BARE.fullmatch(spelled):
            return float(Decimal(spelled))
        match = _DURATION.fullmatch(spelled)
        if not spelled or match is None:
            raise self._invalid(text)
        # Decimal so that 1h30m500ms sums exactly before the one rounding to float.
        total = sum(
            (Decimal(amount) * _UNIT[unit] for unit, amount in match.groupdict().items() if amount),
            Decimal(0),
        )
        return float(total)

    def _from_json(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._invalid(value)
        if not math.isfinite(value):
            raise self._invalid(value, "not finite")
        if value < 0:
            raise self._invalid(value, "negative")
        return float(value)

    def render(self, value: float) -> str:
        millis = round(value * 1000)
        if millis / 1000 != value:
            # Finer than a millisecond: plain seconds, never exponent notation.
            return f"{Decimal(repr(value)):f}s"
        parts = []
        for unit, size in _MS_PER:
            count, millis = divmod(millis, size)
            if count:
                parts.append(f"{count}{unit}")
        return "".join(parts) or "0s"

    def to_json(self, value: float) -> JSONValue:
        return int(value) if value.is_integer() else value


class IntegerKind(Kind[int]):
    """A whole number, optionally bounded."""

    name = "integer"

    def __init__(self, minimum: int | None = None, maximum: int | None = None) -> None:
        self.minimum = minimum
        self.maximum = maximum

    @property
    def expected(self) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        bound = f" >= {low}" if low is not None else f" <= {high}" if high is not None else ""
        return f"an integer{bound}"

    def parse(self, text: str) -> int:
        if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
            raise self._invalid(text)
        return self._bounded(int(text), text)

    def _from_json(self, value: object) -> int:
        # bool is an int to Python but never a count to a user.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._invalid(value)
        return self._bounded(value, value)

    def _bounded(self, number: int, given: object) -> int:
        if self.minimum is not None and number < self.minimum:
            raise self._invalid(given, f"below the minimum {self.minimum}")
        if self.maximum is not None and number > self.maximum:
            raise self._invalid(given, f"above the maximum {self.maximum}")
        return number

    def render(self, value: int) -> str:
        return str(value)

    def to_json(self, value: int) -> JSONValue:
        return value


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class BooleanKind(Kind[bool]):
    """On or off: ``true/false/1/0/yes/no/on/off`` in any case, or a JSON boolean."""

    name = "boolean"

    @property
    def expected(self) -> str:
        return "true, false, 1, 0, yes, no, on or off"

    def parse(self, text: str) -> bool:
        word = text.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise self._invalid(text)

    def _from_json(self, value: object) -> bool:
        if isinstance(value, bool):
            return value
        raise self._invalid(value)

    def render(self, value: bool) -> str:
        return "true" if value else "false"

    def to_json(self, value: bool) -> JSONValue:
        return value


class StringKind(Kind[str]):
    """Text taken as given (no trimming: it may be a path or an address)."""

    name = "string"

    def __init__(self, *, allow_empty: bool = True) -> None:
        self.allow_empty = allow_empty

    @property
    def expected(self) -> str:
        return "a string" if self.allow_empty else "a non-empty string"

    def parse(self, text: str) -> str:
        if not text and not self.allow_empty:
            raise self._invalid(text, "empty")
        return text

    def render(self, value: str) -> str:
        return value

    def to_json(self, value: str) -> JSONValue:
        return value


class ChoiceKind(Kind[str]):
    """One of a fixed set of words, matched without regard to case."""

    name = "choice"

    def __init__(self, values: Sequence[str]) -> None:
        self.values = tuple(values)
        self._folded = {v.lower(): v for v in self.values}

    @property
    def expected(self) -> str:
        return f"one of {', '.join(self.values)}"

    def parse(self, text: str) -> str:
        try:
            return self._folded[text.strip().lower()]
        except KeyError:
            raise self._invalid(text) from None

    def render(self, value: str) -> str:
        return value

    def to_json(self, value: str) -> JSONValue:
        return value


class _ListKind(Kind[tuple[str, ...]]):
    """Comma-separated as text, a JSON array of strings in a file, a tuple when typed."""

    def _items(self, text: str) -> list[str]:
        # Blank items carry nothing ("a,,b", a trailing comma); "" is the empty list.
        return [item.strip() for item in text.split(",") if item.strip()]

    def _array(self, value: object) -> list[str]:
        if not isinstance(value, list):
            raise self._invalid(value)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self._invalid(value, f"item {i} is not a string")
        return value

    def render(self, value: tuple[str, ...]) -> str:
        return ",".join(value)

    def to_json(self, value: tuple[str, ...]) -> JSONValue:
        return list(value)


class StringListKind(_ListKind):
    """Several strings, such as origins or server names."""

    name = "string list"

    @property
    def expected(self) -> str:
        return "a comma-separated list (a JSON array of strings in a file)"

    def parse(self, text: str) -> tuple[str, ...]:
        return tuple(self._items(text))

    def _from_json(self, value: object) -> tuple[str, ...]:
        return tuple(self._array(value))


_UNSET = "none"


class RevisionKind(Kind[str | None]):
    """One MCP revision, or unset (``none``, an empty string, JSON ``null``)."""

    name = "revision"

    @property
    def expected(self) -> str:
        return f"one of {', '.join(REVISIONS)}, or {_UNSET}"

    def parse(self, text: str) -> str | None:
        spelled = text.strip()
        if spelled.lower() in ("", _UNSET):
            return None
        try:
            return parse_revision(spelled)
        except UnknownRevisionError as err:
            raise self._invalid(text) from err

    def _from_json(self, value: object) -> str | None:
        if value is None:
            return None
        raise self._invalid(value)

    def render(self, value: str | None) -> str:
        return _UNSET if value is None else value

    def to_json(self, value: str | None) -> JSONValue:
        return value


class RevisionListKind(_ListKind):
    """MCP revisions in a chosen order, each at most once."""

    name = "revision list"

    @property
    def expected(self) -> str:
        return (
            "a comma-separated list (a JSON array in a file) of revisions from "
            f"{', '.join(REVISIONS)}, each at most once"
        )

    def parse(self, text: str) -> tuple[str, ...]:
        return self._revisions(self._items(text), text)

    def _from_json(self, value: object) -> tuple[str, ...]:
        return self._revisions(self._array(value), value)

    def _revisions(self, items: Iterable[str], given: object) -> tuple[str, ...]:
        seen: list[str] = []
        for item in items:
            try:
                rev = parse_revision(item)
            except UnknownRevisionError as err:
                raise self._invalid(given, f"{show(item)} is not a revision") from err
            if rev in seen:
                raise self._invalid(given, f"{rev} is listed twice")
            seen.append(rev)
        return tuple(seen)
