"""One named setting: its kind, default and doc, and the names derived from it.

Invariants:

- A setting's environment variable and flag are derived from its dotted camelCase name
  (``pool.callTimeout`` -> ``MCPX_POOL_CALL_TIMEOUT``, ``--pool-call-timeout``), never
  written by hand. Aliases add names; they never replace the derived ones.
- A declared default is a valid value of the setting's kind (checked on declaration by a
  render/parse round trip), unless it is ``Computed`` at resolution time.
- Every error about a value names the setting, the source (``env MCPX_POOL_MAX``,
  ``flag --pool-max``, ``file /path``), the bad value and what is valid.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ._kinds import InvalidValue, JSONValue, Kind

__all__ = [
    "Computed",
    "Origin",
    "OriginKind",
    "Setting",
    "SettingError",
    "UnknownSettingError",
    "did_you_mean",
    "env_name",
    "flag_name",
    "unknown_setting",
]

_NAME = re.compile(r"[a-z][a-zA-Z0-9]*(?:\.[a-z][a-zA-Z0-9]*)+", re.ASCII)
# A word is a run of capitals not followed by a lower-case letter (TTL in askTTL), or an
# optional capital and lower-case letters and digits (Timeout in callTimeout).
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", re.ASCII)
_FLAG = re.compile(r"--[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)
_ENV = re.compile(r"MCPX_[A-Z0-9]+(?:_[A-Z0-9]+)*", re.ASCII)


def _words(name: str) -> list[str]:
    return [word.lower() for part in name.split(".") for word in _WORD.findall(part)]


def env_name(name: str) -> str:
    """The environment variable derived from a setting name."""
    return "MCPX_" + "_".join(word.upper() for word in _words(name))


def flag_name(name: str) -> str:
    """The command-line flag derived from a setting name."""
    return "--" + "-".join(_words(name))


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the closest candidate, or ``""`` when none is close."""
    pool = list(candidates)
    # Case-folded first: "pool.calltimeout" is plainly pool.callTimeout.
    folded = {c.lower(): c for c in pool}
    close = difflib.get_close_matches(word.lower(), list(folded), n=1, cutoff=0.6)
    return f"; did you mean {folded[close[0]]}?" if close else ""


class OriginKind(StrEnum):
    """Where a value came from, lowest precedence first."""

    DEFAULT = "default"
    FILE = "file"
    ENV = "env"
    FLAG = "flag"


@dataclass(frozen=True)
class Origin:
    """A value's source: its kind, and the file path, variable or flag as written."""

    kind: OriginKind
    detail: str | None = None

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}" if self.detail else str(self.kind)

    def as_json(self) -> dict[str, JSONValue]:
        return {"kind": str(self.kind), "detail": self.detail}


class SettingError(ValueError):
    """A setting name or value that cannot be used; the message says which and why."""

    def __init__(
        self,
        message: str,
        *,
        setting: str | None = None,
        source: Origin | None = None,
        value: object = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.source = source
        self.value = value
        # The message without "<setting> from <source>", for callers that say those
        # themselves (a config file's error names its own path and position).
        self.detail = detail or message

    def __str__(self) -> str:
        # Pinned so that UnknownSettingError (also a KeyError) does not quote itself.
        return str(self.args[0])


class UnknownSettingError(SettingError, KeyError):
    """A name that is no setting; a ``KeyError`` too, so ``Settings.get`` works."""


def unknown_setting(name: str, known: Iterable[str], what: str = "setting") -> UnknownSettingError:
    """The error for a name that is none of ``known``, with the closest as a hint."""
    return UnknownSettingError(
        f"unknown {what} {name!r}{did_you_mean(name, known)}", setting=name, value=name
    )


@dataclass(frozen=True)
class Computed:
    """A default known only when settings are resolved, because it depends on the machine."""

    compute: Callable[[], object]
    description: str


@dataclass(frozen=True)
class Setting:
    """A named setting, declared once; everything else about it is derived.

    ``aliases`` are extra flags (``--port``) and environment variables
    (``MCPX_MCP_SPEC``), told apart by their spelling. When both a derived variable and
    an alias are set, the derived one wins.
    """

    name: str
    kind: Kind[Any]
    default: object
    doc: str
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"setting name {self.name!r} is not dotted camelCase")
        for alias in self.aliases:
            if not (_FLAG.fullmatch(alias) or _ENV.fullmatch(alias)):
                raise ValueError(f"{self.name}: alias {alias!r} is neither --flag nor MCPX_VAR")
            if alias in (self.env, self.flag):
                raise ValueError(f"{self.name}: alias {alias!r} repeats the derived name")
        if not isinstance(self.default, Computed):
            # A default the kind cannot render and read back would show one value and use
            # another; refuse it where it is declared.
            try:
                back = self.kind.parse(self.kind.render(self.default))
            except InvalidValue as err:
                raise ValueError(f"{self.name}: the default {err.detail}") from err
            if back != self.default:
                raise ValueError(f"{self.name}: default {self.default!r} reads back as {back!r}")

    @property
    def env(self) -> str:
        return env_name(self.name)

    @property
    def flag(self) -> str:
        return flag_name(self.name)

    @property
    def env_aliases(self) -> tuple[str, ...]:
        return tuple(a for a in self.aliases if not a.startswith("--"))

    @property
    def flag_aliases(self) -> tuple[str, ...]:
        return tuple(a for a in self.aliases if a.startswith("--"))

    @property
    def envs(self) -> tuple[str, ...]:
        """Every variable that sets this, in the order they are consulted."""
        return (self.env, *self.env_aliases)

    @property
    def flags(self) -> tuple[str, ...]:
        """Every flag that sets this, the derived one first."""
        return (self.flag, *self.flag_aliases)

    def default_value(self) -> object:
        """The default, computed now if it depends on the machine."""
        if isinstance(self.default, Computed):
            return self.default.compute()
        return self.default

    def describe_default(self) -> str:
        """The default as documentation shows it."""
        if isinstance(self.default, Computed):
            return self.default.description
        return self.kind.render(self.default)

    def parse(self, text: str, source: Origin) -> Any:
        """The typed value of ``text`` from the environment or a flag.

        Raises:
            SettingError: ``text`` is not valid for this setting.
        """
        try:
            return self.kind.parse(text)
        except InvalidValue as err:
            raise self._error(err, source) from err

    def accept(self, value: object, source: Origin) -> Any:
        """The typed value of a JSON value from a config file.

        Raises:
            SettingError: ``value`` is not valid for this setting.
        """
        try:
            return self.kind.accept(value)
        except InvalidValue as err:
            raise self._error(err, source) from err

    def render(self, value: Any) -> str:
        return self.kind.render(value)

    def to_json(self, value: Any) -> JSONValue:
        return self.kind.to_json(value)

    def _error(self, err: InvalidValue, source: Origin) -> SettingError:
        return SettingError(
            f"{self.name} from {source} {err.detail}",
            setting=self.name,
            source=source,
            value=err.value,
            detail=err.detail,
        )
