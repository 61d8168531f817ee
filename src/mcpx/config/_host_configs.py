"""Writing mcpx into an MCP host's own config file: where each host keeps it, and the edit.

Job: for each host mcpx knows (``HOSTS``: Claude Desktop, VS Code, Cursor), the file it
reads its MCP servers from on each platform (``host_config_path``), the entry that starts
``mcpx serve`` there (``serve_entry``), and putting that entry into the file's text
(``put_entry``) and the text on disk (``write_host_config``). Reading other servers *out*
of these files is not this module's job.

- Claude Desktop: ``claude_desktop_config.json`` under ``~/Library/Application
  Support/Claude/`` (macOS), ``%APPDATA%\\Claude\\`` (Windows), ``$XDG_CONFIG_HOME/Claude/``
  or ``~/.config/Claude/`` (elsewhere); servers under ``mcpServers``.
- VS Code: the user profile's ``mcp.json`` (``Code/User/`` in the same directories as
  Claude's); servers under ``servers``, a local one with ``"type": "stdio"``.
- Cursor: ``~/.cursor/mcp.json`` everywhere; servers under ``mcpServers``.

Invariants:

- The platform, home directory, environment and time are parameters: nothing here reads
  them from the process.
- The edit is a splice of the file's own text: everything outside the one entry (other
  servers, other keys, whitespace, key order) is kept byte for byte; the entry is laid out
  in the indentation the file already uses. Keys the user added to an existing entry
  (``env``, ``cwd``…) are kept; only what mcpx needs to start is set.
- A text that already has the entry is not rewritten (``put_entry`` returns ``None``).
- A file that is not strict JSON, or whose shape is not a host's, is refused with
  ``path:line:column`` and never written.
- On disk: the original is copied to ``<file>.mcpx-backup-<stamp>`` first, then the new
  text replaces it atomically (a temporary file beside it, renamed over it), keeping its
  mode; a symlinked file is written through to its target.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ._jsontext import ConfigError, Document, JsonPath, parse_document

__all__ = [
    "BACKUP_INFIX",
    "HOSTS",
    "Host",
    "host_config_path",
    "put_entry",
    "read_host_config",
    "serve_entry",
    "snippet",
    "write_host_config",
]

BACKUP_INFIX: Final = ".mcpx-backup-"
_BOM: Final = "\ufeff"
_DECODER: Final = json.JSONDecoder()
_DEFAULT_INDENT: Final = "  "


@dataclass(frozen=True)
class Host:
    """An MCP host: where its config file is, and how it lists servers there."""

    name: str
    label: str
    key: str  # the object of servers, by name
    # Under the platform's application-data directory; None: ``file`` is under home.
    app_dir: tuple[str, ...] | None
    file: tuple[str, ...]
    stdio_fields: Mapping[str, str] = field(default_factory=dict)


HOSTS: Final[Mapping[str, Host]] = {
    "claude": Host(
        "claude", "Claude Desktop", "mcpServers", ("Claude",), ("claude_desktop_config.json",)
    ),
    "vscode": Host(
        "vscode", "VS Code", "servers", ("Code", "User"), ("mcp.json",), {"type": "stdio"}
    ),
    "cursor": Host("cursor", "Cursor", "mcpServers", None, (".cursor", "mcp.json")),
}


def _app_data(platform: str, home: Path, env: Mapping[str, str]) -> Path:
    """Where desktop applications keep their settings (Electron's ``appData``)."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative value is invalid and ignored.
    return Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"


def host_config_path(host: Host, platform: str, home: Path, env: Mapping[str, str]) -> Path:
    """The file ``host`` reads its MCP servers from on ``platform`` (``sys.platform``)."""
    base = home if host.app_dir is None else _app_data(platform, home, env).joinpath(*host.app_dir)
    return base.joinpath(*host.file)


def serve_entry(host: Host, command: str, profile: str | None = None) -> dict[str, object]:
    """The server entry that has ``host`` start ``command serve`` (in ``profile``)."""
    args = ["serve", *(("--profile", profile) if profile is not None else ())]
    return {**host.stdio_fields, "command": command, "args": args}


def snippet(host: Host, name: str, entry: Mapping[str, object]) -> str:
    """The JSON to paste into ``host``'s config file: its servers object with the entry."""
    return json.dumps({host.key: {name: dict(entry)}}, indent=2)


def read_host_config(path: Path) -> str | None:
    """The text of ``path``; ``None`` if there is no such file.

    Raises:
        ConfigError: it cannot be read, or is not UTF-8.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"is not UTF-8 text (byte {exc.start})") from None


def put_entry(
    text: str | None, path: Path, host: Host, name: str, entry: Mapping[str, object]
) -> str | None:
    """``text`` (the file at ``path``; ``None``: there is none) with server ``name`` set to
    ``entry`` in ``host``'s servers object; ``None`` if it is already so.

    Raises:
        ConfigError: the text is not strict JSON, or not an object whose servers key
            holds an object of objects; it points at the place.
    """
    bom = _BOM if text is not None and text.startswith(_BOM) else ""
    body = text[len(bom) :] if text is not None else ""
    if not body.strip():
        return snippet(host, name, entry) + "\n"
    doc = parse_document(body, path)
    top = doc.value
    if not isinstance(top, dict):
        raise doc.error((), "is not a JSON object")
    if host.key not in top:
        edited = _insert_member(doc, (), host.key, {name: dict(entry)})
    elif not isinstance(top[host.key], dict):
        raise doc.error((host.key,), f"is not an object of servers ({host.label}'s shape)")
    elif name not in top[host.key]:
        edited = _insert_member(doc, (host.key,), name, dict(entry))
    else:
        current = top[host.key][name]
        if not isinstance(current, dict):
            raise doc.error((host.key, name), "is not a server entry (an object)")
        wanted = {**current, **entry}
        if wanted == current:
            return None
        edited = _replace_value(doc, (host.key, name), wanted)
    return bom + edited


def _indent_unit(doc: Document) -> str | None:
    """The file's indentation step: the whitespace before its first top-level key when that
    key starts a line; ``None`` when the file is written on one line (compact)."""
    firsts = sorted(offset for where, offset in doc.keys.items() if len(where) == 1)
    if not firsts:
        return None if "\n" not in doc.text.strip() else _DEFAULT_INDENT
    line_start = doc.text.rfind("\n", 0, firsts[0]) + 1
    lead = doc.text[line_start : firsts[0]]
    if "\n" not in doc.text[: firsts[0]] or lead.strip():
        return None
    return lead or _DEFAULT_INDENT


def _leading(text: str, offset: int) -> str:
    """The whitespace that starts the line ``offset`` is on."""
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _render(value: object, unit: str | None, pad: str) -> str:
    if unit is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + pad)


def _insert_member(doc: Document, where: JsonPath, key: str, value: object) -> str:
    """The text with ``"key": value`` added last to the object at ``where``."""
    text, unit = doc.text, _indent_unit(doc)
    start = doc.values[where]
    _, end = _DECODER.raw_decode(text, start)
    close = end - 1  # the object's "}"
    last = len(text[:close].rstrip()) - 1  # its last character before the "}"
    empty = last == start
    base = _leading(text, start)
    pad = base + (unit or "")
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, unit, pad)}"
    if unit is None:
        return text[: last + 1] + ("" if empty else ", ") + member + text[last + 1 :]
    if empty:
        return text[: start + 1] + "\n" + pad + member + "\n" + base + text[close:]
    return text[: last + 1] + ",\n" + pad + member + text[last + 1 :]


def _replace_value(doc: Document, where: JsonPath, value: object) -> str:
    """The text with the value at ``where`` replaced by ``value``."""
    text, unit = doc.text, _indent_unit(doc)
    start = doc.values[where]
    _, end = _DECODER.raw_decode(text, start)
    pad = _leading(text, doc.keys[where])
    return text[:start] + _render(value, unit, pad) + text[end:]


def _backup_path(path: Path, stamp: str) -> Path:
    candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}")
    n = 1
    while candidate.exists():  # two changes within one stamp: keep both originals
        candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}-{n}")
        n += 1
    return candidate


def write_host_config(path: Path, text: str, stamp: str) -> Path | None:
    """Write ``text`` to ``path`` atomically, creating its directory; the file that was
    there is copied first to ``<path>.mcpx-backup-<stamp>``, whose path is returned
    (``None``: there was no file).

    Raises:
        OSError: the directory, the backup or the file cannot be written (the file is
            then as it was).
    """
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600  # a new file: host configs often hold secrets in their env blocks
    if target.exists():
        backup = _backup_path(target, stamp)
        shutil.copy2(target, backup)
        mode = target.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup
