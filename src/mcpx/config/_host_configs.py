"""MCP hosts' own config files: where each host keeps its servers, reading them as the
host does, and writing mcpx into them.

``HOSTS`` is the one table of the hosts mcpx knows (Claude Desktop, VS Code, Cursor) and of
every file each keeps MCP servers in, with its role: ``mcpx import`` reads them all
(``host_files``), ``mcpx install-host`` writes one per host (``host_config_path``): VS
Code's user ``mcp.json``, not its ``settings.json`` (``mcp.servers``, read only).
``put_entry`` splices the entry that starts ``mcpx serve`` (``serve_entry``) into a
file's text and ``write_host_config`` puts the text on disk.

Invariants:

- The platform, home and working directories, environment and time are parameters.
- Files are JSONC, as the hosts write them: a byte order mark, comments and trailing
  commas are blanked out with spaces before parsing (strings untouched), so positions are
  the file's own; a file that still does not parse, or whose shape is not a host's, is
  refused with ``path:line:column`` and never written.
- The edit is a splice of the file's text: everything outside the one entry (other keys,
  comments, whitespace, order) is kept byte for byte, and the result must read back as
  the old value with the one change. An entry with comments inside it is not replaced
  (they would be lost): refused, saying what to do. Keys the user added to an existing
  entry (``env``, ``cwd``…) are kept; a text that already has the entry is not rewritten.
- On disk: the original is copied to ``<file>.mcpx-backup-<stamp>`` first, then the new
  text replaces it atomically (a temporary file beside it, renamed over it), keeping its
  mode; a symlinked file is written through to its target.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Final

from ._jsontext import ConfigError, Document, JsonPath, parse_document

__all__ = [
    "BACKUP_INFIX",
    "HOSTS",
    "Host",
    "HostFile",
    "HostPath",
    "Role",
    "Under",
    "blank_jsonc",
    "host_config_path",
    "host_files",
    "parse_jsonc",
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
# A string, to its closing quote (or the end of an unterminated one).
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)


class Under(StrEnum):
    """The directory a host file's path starts from."""

    APP_DATA = "app data"  # the platform's application-data directory (Electron's appData)
    HOME = "home"
    WORKSPACE = "workspace"  # the project the host has open (mcpx: the working directory)


class Role(StrEnum):
    """What mcpx does with a host file."""

    WRITTEN = "written by install-host, read by import"  # exactly one per host
    READ = "read by import only"


@dataclass(frozen=True)
class HostFile:
    """One file a host keeps MCP servers in: where, its role, and its servers' place."""

    role: Role
    under: Under
    path: str  # under ``under``, "/"-separated
    servers: str  # the dotted path to its object of servers, by name

    @property
    def servers_path(self) -> tuple[str, ...]:
        return tuple(self.servers.split("."))


@dataclass(frozen=True)
class Host:
    """An MCP host: the files it keeps servers in, and how a local server is spelled."""

    name: str
    label: str
    files: tuple[HostFile, ...]
    stdio_fields: Mapping[str, str] = field(default_factory=dict)

    @property
    def install_file(self) -> HostFile:
        return next(f for f in self.files if f.role is Role.WRITTEN)

    @property
    def key(self) -> str:
        """The servers key of the file install-host writes."""
        return self.install_file.servers


_W, _R = Role.WRITTEN, Role.READ
HOSTS: Final[Mapping[str, Host]] = {
    "claude": Host(
        "claude",
        "Claude Desktop",
        (HostFile(_W, Under.APP_DATA, "Claude/claude_desktop_config.json", "mcpServers"),),
    ),
    "vscode": Host(
        "vscode",
        "VS Code",
        (
            HostFile(_R, Under.APP_DATA, "Code/User/settings.json", "mcp.servers"),
            HostFile(_W, Under.APP_DATA, "Code/User/mcp.json", "servers"),
            HostFile(_R, Under.WORKSPACE, ".vscode/mcp.json", "servers"),
        ),
        {"type": "stdio"},
    ),
    "cursor": Host(
        "cursor",
        "Cursor",
        (
            HostFile(_W, Under.HOME, ".cursor/mcp.json", "mcpServers"),
            HostFile(_R, Under.WORKSPACE, ".cursor/mcp.json", "mcpServers"),
        ),
    ),
}


@dataclass(frozen=True)
class HostPath:
    """A host file where it is on this machine: whose, its path, its servers' path."""

    host: str
    path: Path
    servers: tuple[str, ...]


def _app_data(platform: str, home: Path, env: Mapping[str, str]) -> Path:
    """Where desktop applications keep their settings (Electron's ``appData``)."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    xdg = env.get("XDG_CONFIG_HOME", "")
    # The XDG spec: a relative value is invalid and ignored.
    return Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"


def _locate(
    file: HostFile, platform: str, home: Path, cwd: Path | None, env: Mapping[str, str]
) -> Path:
    bases = {Under.APP_DATA: _app_data(platform, home, env), Under.HOME: home}
    base = bases.get(file.under, cwd)
    assert base is not None, "a workspace file needs the working directory"
    return base.joinpath(*file.path.split("/"))


def host_files(
    host: Host, platform: str, home: Path, cwd: Path, env: Mapping[str, str]
) -> list[HostPath]:
    """Every file ``host`` may keep servers in on ``platform``, in the table's order (the
    user's before the workspace's)."""
    return [
        HostPath(host.name, _locate(f, platform, home, cwd, env), f.servers_path)
        for f in host.files
    ]


def host_config_path(host: Host, platform: str, home: Path, env: Mapping[str, str]) -> Path:
    """The file install-host writes ``host``'s entry to on ``platform`` (``sys.platform``)."""
    return _locate(host.install_file, platform, home, None, env)


def serve_entry(host: Host, command: str, profile: str | None = None) -> dict[str, object]:
    """The server entry that has ``host`` start ``command serve`` (in ``profile``)."""
    args = ["serve", *(("--profile", profile) if profile is not None else ())]
    return {**host.stdio_fields, "command": command, "args": args}


def snippet(host: Host, name: str, entry: Mapping[str, object]) -> str:
    """The JSON to paste into ``host``'s config file: its servers object with the entry."""
    return json.dumps({host.key: {name: dict(entry)}}, indent=2)


# --- reading: JSONC ------------------------------------------------------------------


def blank_jsonc(text: str) -> str:
    """``text`` with a byte order mark, ``//`` and ``/* */`` comments and trailing commas
    turned to spaces (newlines kept), outside strings; the same length, nothing moved."""
    out = list(text)
    if text.startswith(_BOM):
        out[0] = " "
    i, n = 0, len(text)
    last_comma: int | None = None  # a comma with only blanks after it so far
    while i < n:
        char = text[i]
        if char == '"':
            string = _STRING.match(text, i)
            assert string is not None  # the pattern matches from any quote
            i = string.end()
            last_comma = None
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            line = text[i + 1] == "/"
            end = text.find("\n" if line else "*/", i + 2)
            end = n if end < 0 else end + (0 if line else 2)
            out[i:end] = [c if c in "\r\n" else " " for c in text[i:end]]
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


def parse_jsonc(text: str, path: Path) -> Document:
    """``text`` (the file at ``path``) read as JSONC: its ``Document`` is that of the
    blanked text (``blank_jsonc``), whose positions are the file's own.

    Raises:
        ConfigError: it does not parse, with the line and column.
    """
    return parse_document(blank_jsonc(text), path)


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


# --- the edit ------------------------------------------------------------------------

_Splice = tuple[int, int, str]  # text[start:end] becomes the string


def put_entry(
    text: str | None, path: Path, host: Host, name: str, entry: Mapping[str, object]
) -> str | None:
    """``text`` (the file at ``path``; ``None``: there is none) with server ``name`` set to
    ``entry`` in ``host``'s servers object; ``None`` if it is already so.

    Raises:
        ConfigError: the text is not JSONC, or not an object whose servers key holds an
            object of objects, or the entry to change has comments in it; it points at
            the place.
    """
    if text is None or not text.lstrip(_BOM).strip():
        return snippet(host, name, entry) + "\n"
    doc = parse_jsonc(text, path)
    top, key, value = doc.value, host.key, dict(entry)
    if not isinstance(top, dict):
        raise doc.error((), "is not a JSON object")
    expected = copy.deepcopy(top)
    if key not in top:
        expected[key] = {name: value}
        splices = _insert_member(doc, text, (), key, {name: value})
    elif not isinstance(top[key], dict):
        raise doc.error((key,), f"is not an object of servers ({host.label}'s shape)")
    elif name not in top[key]:
        expected[key][name] = value
        splices = _insert_member(doc, text, (key,), name, value)
    else:
        current = top[key][name]
        if not isinstance(current, dict):
            raise doc.error((key, name), "is not a server entry (an object)")
        expected[key][name] = {**current, **entry}
        if expected[key][name] == current:
            return None
        splices = [_replace_value(doc, text, (key, name), expected[key][name])]
    return _spliced(doc, text, splices, expected)


def _spliced(doc: Document, text: str, splices: list[_Splice], expected: object) -> str:
    """The splices made in ``text``, checked: it must read back as ``expected``."""
    for start, end, new in sorted(splices, reverse=True):
        text = text[:start] + new + text[end:]
    try:
        same = parse_jsonc(text, doc.path).value == expected
    except ConfigError:
        same = False
    if not same:  # a layout this module misjudged: refused rather than written
        raise ConfigError(
            doc.path, "could not be edited safely; add the entry by hand (--print shows it)"
        )
    return text


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


def _insert_member(
    doc: Document, text: str, where: JsonPath, key: str, value: object
) -> list[_Splice]:
    """Adding ``"key": value`` last to the object at ``where``. ``doc`` is ``text`` blanked:
    positions come from it, and what the splices keep (comments) from ``text``."""
    blank, unit = doc.text, _indent_unit(doc)
    start = doc.values[where]
    close = _DECODER.raw_decode(blank, start)[1] - 1  # the object's "}"
    last = len(blank[:close].rstrip()) - 1  # the end of its last member, or its "{"
    pad = _leading(blank, start) + (unit or "")
    member = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, unit, pad)}"
    if last == start:
        if unit is None:
            return [(start + 1, start + 1, member)]
        if text[start + 1 : close].strip():  # only a comment in it: kept, after the member
            return [(start + 1, start + 1, "\n" + pad + member)]
        return [(start + 1, close, "\n" + pad + member + "\n" + _leading(blank, start))]
    if unit is None:
        return [(last + 1, last + 1, ", " + member)]
    eol = blank.find("\n", last + 1)
    eol = len(blank) if eol < 0 else eol
    rest = text[last + 1 : eol].rstrip("\r")
    open_comment = not rest.lstrip(" \t,").startswith("//") and rest.rfind("/*") > rest.rfind("*/")
    if blank[last + 1 : eol].strip() or not rest.strip() or open_comment:
        return [(last + 1, last + 1, ",\n" + pad + member)]
    # The last member's line ends in a comma or a comment: the new member goes on the next
    # line, leaving the comment with the member it was written beside.
    at = last + 1 + len(rest)
    comma = [] if rest.lstrip().startswith(",") else [(last + 1, last + 1, ",")]
    return [*comma, (at, at, "\n" + pad + member)]


def _replace_value(doc: Document, text: str, where: JsonPath, value: object) -> _Splice:
    """Replacing the value at ``where`` by ``value``.

    Raises:
        ConfigError: the value has comments (or trailing commas) in it.
    """
    start = doc.values[where]
    end = _DECODER.raw_decode(doc.text, start)[1]
    if text[start:end] != doc.text[start:end]:
        raise doc.error(
            where,
            "has comments (or trailing commas) inside it, which rewriting it would lose: "
            "move them out of this entry (or delete the entry) and run install-host "
            "again, or change the entry by hand (--print shows it)",
        )
    pad = _leading(doc.text, doc.keys[where])
    return (start, end, _render(value, _indent_unit(doc), pad))


# --- writing -------------------------------------------------------------------------


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
