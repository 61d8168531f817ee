"""JSON text with positions: parse a document and say where any value or key in it starts.

``json.loads`` checks the syntax and builds the value; a small scanner then walks the same
text once and records the offset of every value and every object key by its JSON path
(``("mcpServers", "github", "args", 0)``). Errors about the meaning of a value can then
point at it exactly instead of guessing.

Invariants:

- Positions are 1-based line and column counted in characters, lines split on ``\\n``
  only: exactly how ``json.JSONDecodeError`` counts, so syntax and semantic errors agree.
- The scanner runs only on text ``json.loads`` accepted, so it need not diagnose syntax.
- Strict JSON: a key repeated within one object, ``NaN`` and ``Infinity`` are refused
  (``json.loads`` would silently keep the last key and accept the constants).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

__all__ = ["ConfigError", "Document", "JsonPath", "parse_document", "spell"]

JsonPath: TypeAlias = tuple[str | int, ...]

_WHITESPACE: Final = " \t\n\r"
_LITERAL: Final = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|Infinity)|[a-zA-Z]+")
# Valid JSON strings only (json.loads saw them first): a quote, escapes or other, a quote.
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_PLAIN_KEY: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


class ConfigError(ValueError):
    """A config file mcpx refuses: ``path:line:column: what is wrong``."""

    def __init__(
        self, path: Path, problem: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        self.column = column
        where = f"{path}:{line}:{column}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


def spell(where: JsonPath) -> str:
    """A JSON path as a user reads it: ``mcpServers.github.args[0]``."""
    out = ""
    for step in where:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step):
            out += f".{step}" if out else step
        else:
            # Dots and spaces inside a key would read as structure.
            out += f"[{json.dumps(step, ensure_ascii=False)}]"
    return out or "the top level"


@dataclass(frozen=True)
class Document:
    """A parsed JSON text and the offset of each value and key in it."""

    path: Path
    text: str
    value: object
    values: Mapping[JsonPath, int]
    keys: Mapping[JsonPath, int]

    def position(self, where: JsonPath, *, key: bool = False) -> tuple[int, int]:
        """Line and column where the value at ``where`` (or its key) starts.

        Raises:
            KeyError: nothing is at ``where`` (a key was asked for the top level).
        """
        offset = (self.keys if key else self.values)[where]
        return _line_column(self.text, offset)

    def error(self, where: JsonPath, problem: str, *, key: bool = False) -> ConfigError:
        """``path:line:col: <where> <problem>``, pointing at the value (or key) at ``where``."""
        line, column = self.position(where, key=key)
        return ConfigError(self.path, f"{spell(where)} {problem}", line, column)


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - text.rfind("\n", 0, offset)


def parse_document(text: str, path: Path) -> Document:
    """Parse ``text`` (the contents of ``path``) and locate everything in it.

    Raises:
        ConfigError: the text is not strict JSON; the message has the line and column.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(path, f"invalid JSON: {err.msg}", err.lineno, err.colno) from None
    except RecursionError:
        raise ConfigError(path, "invalid JSON: nested too deeply", 1, 1) from None
    except ValueError as err:  # e.g. an integer longer than Python will convert
        raise ConfigError(path, f"invalid JSON: {err}") from None
    scanner = _Scanner(text, path)
    try:
        scanner.value(0, ())
    except RecursionError:
        raise ConfigError(path, "invalid JSON: nested too deeply", 1, 1) from None
    return Document(path, text, value, scanner.values, scanner.keys)


class _Scanner:
    """Walks valid JSON text, recording where each value and key starts."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.values: dict[JsonPath, int] = {}
        self.keys: dict[JsonPath, int] = {}

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _WHITESPACE:
            i += 1
        return i

    def value(self, i: int, where: JsonPath) -> int:
        """Record the value starting at or after ``i``; return the offset just past it."""
        i = self._skip(i)
        self.values[where] = i
        char = self.text[i]
        if char == "{":
            return self._object(i + 1, where)
        if char == "[":
            return self._array(i + 1, where)
        if char == '"':
            return self._string(i)[1]
        return self._literal(i, where)

    def _object(self, i: int, where: JsonPath) -> int:
        i = self._skip(i)
        if self.text[i] == "}":
            return i + 1
        while True:
            i = self._skip(i)
            key, after = self._string(i)
            member = (*where, key)
            if member in self.keys:
                line, column = _line_column(self.text, i)
                raise ConfigError(self.path, f"{spell(member)} is given twice", line, column)
            self.keys[member] = i
            colon = self._skip(after)  # json.loads guarantees the ":" is here
            i = self._skip(self.value(colon + 1, member))
            if self.text[i] == "}":
                return i + 1
            i += 1  # the ","

    def _array(self, i: int, where: JsonPath) -> int:
        i = self._skip(i)
        if self.text[i] == "]":
            return i + 1
        index = 0
        while True:
            i = self._skip(self.value(i, (*where, index)))
            if self.text[i] == "]":
                return i + 1
            i += 1  # the ","
            index += 1

    def _string(self, i: int) -> tuple[str, int]:
        match = _STRING.match(self.text, i)
        assert match is not None, "json.loads accepted a string the scanner cannot see"
        text: str = json.loads(match.group())
        return text, match.end()

    def _literal(self, i: int, where: JsonPath) -> int:
        match = _LITERAL.match(self.text, i)
        assert match is not None, "json.loads accepted a literal the scanner cannot see"
        word = match.group()
        if word in ("NaN", "Infinity", "-Infinity"):
            line, column = _line_column(self.text, i)
            raise ConfigError(
                self.path, f"{spell(where)} is {word}, which JSON does not allow", line, column
            )
        return match.end()
