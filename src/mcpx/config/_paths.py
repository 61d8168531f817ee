"""Where things are on disk: which config file applies, and the state directory.

The config file is the first of, in order:

1. ``--config FILE``, else ``MCPX_CONFIG`` (a relative path is taken from the working
   directory; a named file that does not exist is an error, never a silent fallback);
2. the nearest ``.mcpx.json`` or ``.mcp.json`` in the working directory or above it, where
   ``.mcpx.json`` wins over ``.mcp.json`` in the same directory;
3. ``config.json`` in the platform's user config directory for mcpx, if it exists.

Invariants: nothing here creates, writes or reads the contents of a file (loading is
``_file``'s job, creating the state directory the daemon's); the working directory and
environment are parameters, never read from the process, except that platformdirs reads
the process environment for the user directories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Final

import platformdirs

from ._jsontext import ConfigError
from ._registry import CONFIG_ENV, CONFIG_FLAG
from ._setting import OriginKind

if TYPE_CHECKING:
    from ._resolve import Settings

__all__ = [
    "CONFIG_NAMES",
    "ConfigLocation",
    "FoundBy",
    "find_config_file",
    "locate_config_file",
    "state_dir",
    "user_config_file",
]

# Nearest first within one directory: mcpx's own file wins over the shared one.
CONFIG_NAMES: Final = (".mcpx.json", ".mcp.json")


class FoundBy(StrEnum):
    """The rule that chose the config file."""

    FLAG = "flag"
    ENV = "env"
    NEAREST = "nearest"
    USER = "user"


@dataclass(frozen=True)
class ConfigLocation:
    """A config file and the rule that found it."""

    path: Path
    found_by: FoundBy

    def describe(self) -> str:
        """Why this file, e.g. ``nearest .mcp.json above the working directory``."""
        if self.found_by is FoundBy.FLAG:
            return f"given with {CONFIG_FLAG}"
        if self.found_by is FoundBy.ENV:
            return f"named by {CONFIG_ENV}"
        if self.found_by is FoundBy.NEAREST:
            return f"nearest {self.path.name} above the working directory"
        return "the user config file"

    def __str__(self) -> str:
        return f"{self.path} ({self.describe()})"


def user_config_file() -> Path:
    """``config.json`` in the platform's user config directory for mcpx (may not exist)."""
    return Path(platformdirs.user_config_dir("mcpx")) / "config.json"


def locate_config_file(
    explicit: str | None, env: Mapping[str, str], cwd: Path
) -> ConfigLocation | None:
    """The config file that applies, and the rule that found it; ``None`` if there is none.

    ``explicit`` is the ``--config`` value; an empty ``MCPX_CONFIG`` counts as unset.

    Raises:
        ConfigError: the file named by ``--config`` or ``MCPX_CONFIG`` is not a file.
    """
    if explicit is not None:
        return _named(explicit, cwd, FoundBy.FLAG)
    if env.get(CONFIG_ENV):
        return _named(env[CONFIG_ENV], cwd, FoundBy.ENV)
    nearest = _nearest(cwd)
    if nearest is not None:
        return ConfigLocation(nearest, FoundBy.NEAREST)
    user = user_config_file()
    return ConfigLocation(user, FoundBy.USER) if _is_file(user) else None


def find_config_file(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The path of the config file that applies (see ``locate_config_file``).

    Raises:
        ConfigError: the file named by ``--config`` or ``MCPX_CONFIG`` is not a file.
    """
    found = locate_config_file(explicit, env, cwd)
    return None if found is None else found.path


def _named(given: str, cwd: Path, found_by: FoundBy) -> ConfigLocation:
    path = Path(given).expanduser()
    if not path.is_absolute():
        path = cwd / path
    location = ConfigLocation(path, found_by)
    if not _is_file(path):
        missing = "is not a file" if _exists(path) else "no such config file"
        raise ConfigError(path, f"{missing} ({location.describe()})")
    return location


def _nearest(cwd: Path) -> Path | None:
    start = cwd.absolute()
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if _is_file(candidate):
                return candidate
    return None


def _is_file(path: Path) -> bool:
    # An unreadable directory on the way up is not a reason to fail discovery.
    try:
        return path.is_file()
    except OSError:
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def state_dir(settings: Settings) -> Path:
    """The state directory from state.dir, absolute; creates nothing.

    ``~`` is expanded. A relative path from a config file is taken from that file's
    directory (so a project's file means the same wherever mcpx runs); from anywhere else,
    from the working directory.
    """
    path = Path(settings["state.dir"]).expanduser()
    if path.is_absolute():
        return path
    origin = settings.origin("state.dir")
    if origin.kind is OriginKind.FILE and origin.detail is not None:
        return Path(origin.detail).parent.absolute() / path
    return path.absolute()
