"""How a setting is declared in few words: the kinds and constructors both halves of the
registry (``_registry``, ``_daemon_settings``) use."""

from __future__ import annotations

from typing import Final

from ._kinds import BooleanKind, DurationKind, IntegerKind, StringListKind
from ._setting import Setting

__all__ = ["BOOLEAN", "STRING_LIST", "duration", "flag", "integer"]

_DURATION: Final = DurationKind()
BOOLEAN: Final = BooleanKind()
STRING_LIST: Final = StringListKind()


def duration(name: str, default: str, doc: str) -> Setting:
    # Defaults are written as a user would write them and parsed once, here.
    return Setting(name, _DURATION, _DURATION.parse(default), doc)


def integer(name: str, default: int, doc: str, minimum: int | None = None) -> Setting:
    return Setting(name, IntegerKind(minimum), default, doc)


def flag(name: str, doc: str) -> Setting:
    return Setting(name, BOOLEAN, False, doc)
