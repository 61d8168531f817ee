"""Resolution: one value per setting from defaults, the config file, the environment, flags.

Invariants:

- Precedence, lowest first: built-in default < config file < environment < flag. For each
  setting only the winning source is read, so a bad ``MCPX_*`` value that a flag overrides
  is not an error.
- Among environment variables, the derived one wins over an alias when both are set.
- ``Settings`` is immutable, holds every registered setting in registry order, and records
  the ``Origin`` of each value; it never reads ``os.environ`` itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mcpx.spec import Policy

from ._kinds import JSONValue
from ._registry import SETTINGS, by_flag, setting
from ._setting import Origin, OriginKind, Setting, SettingError, unknown_setting

if TYPE_CHECKING:
    from ._file import ConfigFile

__all__ = ["Settings", "resolve"]

_DEFAULT = Origin(OriginKind.DEFAULT)


class Settings(Mapping[str, Any]):
    """Every setting's typed value and where it came from; read-only."""

    __slots__ = ("_origins", "_policy", "_values")

    def __init__(self, values: Mapping[str, object], origins: Mapping[str, Origin]) -> None:
        missing = [name for name in SETTINGS if name not in values or name not in origins]
        if missing:
            raise ValueError(f"Settings needs every setting; missing {', '.join(missing)}")
        self._values = MappingProxyType({name: values[name] for name in SETTINGS})
        self._origins = MappingProxyType({name: origins[name] for name in SETTINGS})
        self._policy: Policy | None = None

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise unknown_setting(name, SETTINGS) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        changed = {n: v for n, v in self._values.items() if self._origins[n] != _DEFAULT}
        return f"Settings({changed!r} over defaults)"

    def origin(self, name: str) -> Origin:
        """Where the value of ``name`` came from.

        Raises:
            UnknownSettingError: no setting has that name.
        """
        try:
            return self._origins[name]
        except KeyError:
            raise unknown_setting(name, SETTINGS) from None

    def display(self, name: str) -> str:
        """The value of ``name`` as text, as a user would write it.

        Raises:
            UnknownSettingError: no setting has that name.
        """
        return setting(name).render(self[name])

    def policy(self) -> Policy:
        """The effective spec policy from spec.precedence, spec.first and spec.lenient."""
        # Each of the three was checked against REVISIONS and for repeats when resolved,
        # so building cannot fail here; built once, as the values never change.
        if self._policy is None:
            self._policy = Policy.build(
                self["spec.precedence"], self["spec.first"], self["spec.lenient"]
            )
        return self._policy

    def as_json(self) -> list[dict[str, JSONValue]]:
        """One object per setting, in registry order, for ``mcpx settings --json``."""
        return [_entry(s, self._values[s.name], self._origins[s.name]) for s in SETTINGS.values()]


def _entry(s: Setting, value: object, origin: Origin) -> dict[str, JSONValue]:
    return {
        "name": s.name,
        "kind": s.kind.name,
        "value": s.to_json(value),
        "display": s.render(value),
        "origin": origin.as_json(),
        "env": s.env,
        "flag": s.flag,
        "aliases": list(s.aliases),
        "default": s.describe_default(),
        "doc": s.doc,
    }


def resolve(
    *, file: ConfigFile | None, env: Mapping[str, str], flags: Mapping[str, str]
) -> Settings:
    """Every setting's value from the four sources, highest precedence winning.

    ``flags`` maps a setting name, or a flag as typed (``--port``), to the raw text given;
    a flag key is reported as written in the value's origin.

    Raises:
        SettingError: a value from the winning source is invalid, a flag or file setting
            names no setting, or one setting is given by two flags.
    """
    given = _flags_by_setting(flags)
    file_values: Mapping[str, object] = {} if file is None else file.settings
    for name in file_values:
        setting(name)  # a hand-made ConfigFile may name anything
    values: dict[str, object] = {}
    origins: dict[str, Origin] = {}
    for s in SETTINGS.values():
        values[s.name], origins[s.name] = _one(s, file, file_values, env, given)
    return Settings(values, origins)


def _one(
    s: Setting,
    file: ConfigFile | None,
    file_values: Mapping[str, object],
    env: Mapping[str, str],
    given: Mapping[str, tuple[str, str]],
) -> tuple[object, Origin]:
    if s.name in given:
        text, spelled = given[s.name]
        origin = Origin(OriginKind.FLAG, spelled)
        return s.parse(text, origin), origin
    for var in s.envs:
        if var in env:
            origin = Origin(OriginKind.ENV, var)
            return s.parse(env[var], origin), origin
    if file is not None and s.name in file_values:
        origin = Origin(OriginKind.FILE, str(file.path))
        return s.accept(file_values[s.name], origin), origin
    return s.default_value(), _DEFAULT


def _flags_by_setting(flags: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Setting name -> (text, flag as written), refusing a setting given twice."""
    given: dict[str, tuple[str, str]] = {}
    for key, text in flags.items():
        s = by_flag(key) if key.startswith("--") else setting(key)
        spelled = key if key.startswith("--") else s.flag
        if s.name in given:
            raise SettingError(
                f"{s.name} is given twice, as {given[s.name][1]} and as {spelled}",
                setting=s.name,
                source=Origin(OriginKind.FLAG, spelled),
                value=text,
            )
        given[s.name] = (text, spelled)
    return given
