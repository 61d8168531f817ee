"""Where other MCP hosts keep their servers, and reading them out (for ``mcpx import``).

- Claude Desktop: ``claude_desktop_config.json`` in ``Claude/`` under the platform's
  application-data directory (``~/Library/Application Support`` on macOS, ``%APPDATA%``
  on Windows, ``$XDG_CONFIG_HOME`` or ``~/.config`` elsewhere); ``mcpServers``.
- VS Code: the user ``settings.json`` (``mcp.servers``) and ``mcp.json`` (``servers``) in
  ``Code/User/`` there, and the workspace's ``.vscode/mcp.json`` (``servers``).
- Cursor: ``~/.cursor/mcp.json`` and the workspace's ``.cursor/mcp.json``; ``mcpServers``.

Invariants:

- The platform, home, working directory and environment are parameters.
- Files are read as JSONC, as VS Code writes them: comments and trailing commas are
  blanked out with spaces before parsing (strings untouched), so every position in an
  error is the position in the file as it is; a file that still does not parse is
  refused with ``path:line:column``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mcpx.config import ConfigError

__all__ = ["HOST_NAMES", "HostFile", "blank_jsonc", "host_files", "read_servers"]

HOST_NAMES: Final = ("claude", "vscode", "cursor")


@dataclass(frozen=True)
class HostFile:
    """A file a host keeps servers in, and the path to its object of servers."""

    host: str
    path: Path
    block: tuple[str, ...]


def _app_data(platform: str, home: Path, env: Mapping[str, str]) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = env.get("XDG_CONFIG_HOME", "")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"


def host_files(
    host: str, *, platform: str, home: Path, cwd: Path, env: Mapping[str, str]
) -> list[HostFile]:
    """The files ``host`` (one of ``HOST_NAMES``) may keep servers in, user's first."""
    data = _app_data(platform, home, env)
    if host == "claude":
        return [HostFile(host, data / "Claude" / "claude_desktop_config.json", ("mcpServers",))]
    if host == "vscode":
        user = data / "Code" / "User"
        return [
            HostFile(host, user / "settings.json", ("mcp", "servers")),
            HostFile(host, user / "mcp.json", ("servers",)),
            HostFile(host, cwd / ".vscode" / "mcp.json", ("servers",)),
        ]
    if host == "cursor":
        return [
            HostFile(host, home / ".cursor" / "mcp.json", ("mcpServers",)),
            HostFile(host, cwd / ".cursor" / "mcp.json", ("mcpServers",)),
        ]
    raise ValueError(f"unknown host {host!r}")


def blank_jsonc(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments and trailing commas turned to spaces
    (newlines kept), outside strings; the same length, every position unmoved."""
    out = list(text)
    i, n = 0, len(text)
    last_comma: int | None = None  # a comma with only blanks after it so far
    while i < n:
        char = text[i]
        if char == '"':
            i = _string_end(text, i)
            last_comma = None
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            _blank(out, i, end)
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            _blank(out, i, end)
            i = end
            continue
        if char in "}]" and last_comma is not None:
            out[last_comma] = " "
        if char == ",":
            last_comma = i
        elif char not in " \t\r\n":
            last_comma = None
        i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return i


def _blank(out: list[str], start: int, end: int) -> None:
    for j in range(start, end):
        if out[j] not in "\r\n":
            out[j] = " "


def read_servers(path: Path, block: tuple[str, ...] | None) -> dict[str, object]:
    """The servers, by name, in the file at ``path`` under ``block``; with no ``block``,
    under ``mcpServers``, ``servers`` or ``mcp.servers``, whichever it has. A file
    without the block has none.

    Raises:
        ConfigError: the file cannot be read or does not parse (with line and column),
            or the block is not an object.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise ConfigError(path, f"cannot be read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "is not UTF-8 text") from None
    try:
        doc = json.loads(blank_jsonc(text))
    except json.JSONDecodeError as err:
        raise ConfigError(path, f"invalid JSON: {err.msg}", err.lineno, err.colno) from None
    if not isinstance(doc, dict):
        raise ConfigError(path, "is not a JSON object", 1, 1)
    candidates = [block] if block else [("mcpServers",), ("servers",), ("mcp", "servers")]
    for steps in candidates:
        found: object = doc
        for step in steps:
            found = found.get(step) if isinstance(found, dict) else None
        if found is None:
            continue
        if not isinstance(found, dict):
            raise ConfigError(path, f"{'.'.join(steps)} is not an object of servers by name")
        return dict(found)
    return {}
