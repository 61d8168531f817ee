"""Editing the config file: add, replace or remove one server entry, or set its
``mcpx.disabled``, keeping every byte outside the edited entry as it was.

Theory of operation: the text is parsed with positions (``_jsontext.Document``), and an
edit is one splice of the text at those positions: a member's text is inserted after the
last member of its object (with the whitespace that member had before it), replaced
where its value is, or cut out with one neighbouring comma. New text is laid out in the
file's own manner: its line ending, the indentation of the object it goes into and the
file's indentation unit, or on one line when the file is all on one line.

Invariants:

- The edit functions (``with_server``, ``without_server``, ``with_disabled``) are pure:
  text in, text out. Each checks that the new text parses to exactly the old value with
  the one change made (anything else is refused, never written).
- ``plan_edit`` refuses a result that does not load as a config file (``parse_config_text``);
  ``write_edit`` writes through a temporary file in the same directory, renamed over the
  file (never half a file, for the daemon's follower or anyone), with the file's mode (a
  new file gets 0600: entries may hold secrets), and refuses if the file changed since it
  was read. A symlinked config file is edited where it points.
- A byte order mark the file starts with is kept.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ._file import parse_config_text
from ._jsontext import ConfigError, Document, JsonPath, parse_document
from ._paths import ConfigLocation, user_config_file

__all__ = [
    "ConfigEdit",
    "EditRefused",
    "NoSuchServer",
    "ServerExists",
    "edit_target",
    "plan_edit",
    "with_disabled",
    "with_server",
    "without_server",
    "write_edit",
]

_BLOCKS: Final = ("mcpServers", "servers")
_BOM: Final = "\ufeff"
_INDENT: Final = re.compile(r"[ \t]*")


class EditRefused(ValueError):
    """An edit mcpx will not make; the message says why."""


class ServerExists(EditRefused):
    """The name is already configured (and the edit was not forced)."""


class NoSuchServer(EditRefused):
    """No server entry has that name."""


@dataclass(frozen=True)
class ConfigEdit:
    """A checked edit of the config file at ``path``: its text before and after."""

    path: Path
    before: str  # "" when the file does not exist yet
    after: str
    bom: bool = False

    @property
    def created(self) -> bool:
        return not self.before

    @property
    def changed(self) -> bool:
        return self.before != self.after


def edit_target(location: ConfigLocation | None) -> Path:
    """The file an edit goes to: the config file that applies, else the user config file
    (created by the edit)."""
    return location.path if location is not None else user_config_file()


def plan_edit(path: Path, change: Callable[[str, Path], str]) -> ConfigEdit:
    """Read ``path`` (may not exist), apply ``change`` to its text, check the result loads.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or the result would not load.
        EditRefused: ``change`` refused.
    """
    before, bom = _read(path)
    after = change(before, path)
    if after != before:
        parse_config_text(after, path)
    return ConfigEdit(path, before, after, bom)


def write_edit(edit: ConfigEdit) -> None:
    """Write ``edit`` atomically, unless the file changed since it was planned.

    Raises:
        EditRefused: the file changed meanwhile (nothing written).
        OSError: the file or its directory cannot be written (nothing written).
    """
    if not edit.changed:
        return
    if _read(edit.path)[0] != edit.before:
        raise EditRefused(f"{edit.path} changed while it was being edited; run the command again")
    data = ((_BOM if edit.bom else "") + edit.after).encode("utf-8")
    _replace(Path(os.path.realpath(edit.path)), data)


def with_server(
    text: str, path: Path, name: str, entry: Mapping[str, object], *, force: bool = False
) -> str:
    """``text`` with the server ``name`` defined as ``entry``: replaced where it is (only
    with ``force``), else added to ``mcpServers`` (else ``servers``, else a new
    ``mcpServers``).

    Raises:
        ConfigError: ``text`` is not JSON.
        ServerExists: ``name`` is configured and ``force`` is false.
        EditRefused: the server block is not an object.
    """
    value = dict(entry)
    if not text.strip():
        return json.dumps({"mcpServers": {name: value}}, indent=2, ensure_ascii=False) + "\n"
    doc = _document(text, path)
    expected = copy.deepcopy(doc.value)
    assert isinstance(expected, dict)
    where = _where(doc, name)
    if where is not None:
        if not force:
            raise ServerExists(
                f"{path}: {where[0]} already has a server named {name!r} (--force replaces it)"
            )
        expected[where[0]][name] = value
        return _checked(_replace_value(doc, where, value), path, expected)
    block = next((b for b in _BLOCKS if b in expected), None)
    if block is None:
        expected["mcpServers"] = {name: value}
        return _checked(_insert_member(doc, (), "mcpServers", {name: value}), path, expected)
    if not isinstance(expected[block], dict):
        raise EditRefused(f"{path}: {block} is not an object of servers by name")
    expected[block][name] = value
    return _checked(_insert_member(doc, (block,), name, value), path, expected)


def without_server(text: str, path: Path, name: str) -> str:
    """``text`` without the server ``name``.

    Raises:
        ConfigError: ``text`` is not JSON.
        NoSuchServer: no entry has that name.
    """
    doc, where, expected = _configured(text, path, name)
    del expected[where[0]][name]
    return _checked(_remove_member(doc, where), path, expected)


def with_disabled(text: str, path: Path, name: str, disabled: bool) -> str:
    """``text`` with the server ``name``'s ``mcpx.disabled`` set to ``disabled`` (enabling
    a server that has no ``mcpx.disabled`` changes nothing).

    Raises:
        ConfigError: ``text`` is not JSON.
        NoSuchServer: no entry has that name.
        EditRefused: the entry or its ``mcpx`` block is not an object.
    """
    doc, where, expected = _configured(text, path, name)
    entry = expected[where[0]][name]
    if not isinstance(entry, dict):
        raise EditRefused(f"{path}: the entry {name!r} is not an object")
    block = entry.get("mcpx")
    if block is None:
        if not disabled:
            return text
        entry["mcpx"] = {"disabled": True}
        return _checked(_insert_member(doc, where, "mcpx", {"disabled": True}), path, expected)
    if not isinstance(block, dict):
        raise EditRefused(f"{path}: the mcpx block of {name!r} is not an object")
    if block.get("disabled", False) is disabled:
        return text
    block["disabled"] = disabled
    mcpx = (*where, "mcpx")
    if "disabled" in _at(doc.value, mcpx):  # type: ignore[operator]
        return _checked(_replace_value(doc, (*mcpx, "disabled"), disabled), path, expected)
    return _checked(_insert_member(doc, mcpx, "disabled", disabled), path, expected)


# --- reading and writing -------------------------------------------------------------


def _read(path: Path) -> tuple[str, bool]:
    """The file's text (line endings untouched) and whether it starts with a BOM."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "", False
    except OSError as err:
        raise ConfigError(path, f"cannot be read: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(path, f"is not UTF-8 text (byte {err.start}: {err.reason})") from None
    return (text[1:], True) if text.startswith(_BOM) else (text, False)


def _replace(target: Path, data: bytes) -> None:
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- splicing ------------------------------------------------------------------------


def _document(text: str, path: Path) -> Document:
    doc = parse_document(text, path)
    if not isinstance(doc.value, dict):
        raise doc.error((), "must be a JSON object")
    return doc


def _where(doc: Document, name: str) -> JsonPath | None:
    root = doc.value
    assert isinstance(root, dict)
    for block in _BLOCKS:
        entries = root.get(block)
        if isinstance(entries, dict) and name in entries:
            return (block, name)
    return None


def _configured(text: str, path: Path, name: str) -> tuple[Document, JsonPath, dict[Any, Any]]:
    """The document, where the server ``name`` is in it, and a copy of its value to edit.

    Raises:
        ConfigError: ``text`` is not JSON.
        NoSuchServer: no entry has that name.
    """
    doc = _document(text, path)
    where = _where(doc, name)
    if where is None:
        raise NoSuchServer(f"{path}: no server named {name!r} is configured")
    expected = copy.deepcopy(doc.value)
    assert isinstance(expected, dict)
    return doc, where, expected


def _at(value: object, where: JsonPath) -> object:
    for step in where:
        value = value[step]  # type: ignore[index]
    return value


def _checked(after: str, path: Path, expected: object) -> str:
    # The splice is checked against the value it was meant to produce: a layout this
    # module misjudged is refused rather than written.
    if json.loads(after) != expected:
        raise EditRefused(f"{path}: could not edit the file's text safely; edit it by hand")
    return after


def _end(text: str, start: int) -> int:
    return json.JSONDecoder().raw_decode(text, start)[1]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_indent(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    match = _INDENT.match(text, start)
    assert match is not None  # the pattern matches the empty string
    return match.group()


def _unit(doc: Document) -> str:
    """The file's indentation unit: that of the top level's first member, else two spaces."""
    root = doc.value
    assert isinstance(root, dict)
    for key in root:
        indent = _line_indent(doc.text, doc.keys[(key,)])
        text_before = doc.text[: doc.keys[(key,)]].rstrip(" \t")
        if indent and text_before.endswith("\n"):
            return indent
        break
    return "  "


def _one_line(doc: Document) -> bool:
    return "\n" not in doc.text.strip()


def _dumped(value: object, indent: str | None, doc: Document) -> str:
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    text = json.dumps(value, indent=_unit(doc), ensure_ascii=False)
    return text.replace("\n", _newline(doc.text) + indent)


def _member(key: str, value: object, indent: str | None, doc: Document) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {_dumped(value, indent, doc)}"


def _insert_member(doc: Document, obj: JsonPath, key: str, value: object) -> str:
    text = doc.text
    members = list(_at(doc.value, obj))  # type: ignore[call-overload]
    opening = doc.values[obj]
    if members:
        last = (*obj, members[-1])
        lead_end = doc.keys[last]
        lead_start = max(text.rfind(",", 0, lead_end), text.rfind("{", 0, lead_end)) + 1
        lead = text[lead_start:lead_end]
        indent = _line_indent(text, lead_end) if "\n" in lead else None
        if indent is None and text[lead_start - 1] == "{":
            lead = " "  # one line, one member: what follows "{" says nothing of ", "
        at = _end(text, doc.values[last])
        return text[:at] + "," + lead + _member(key, value, indent, doc) + text[at:]
    closing = _end(text, opening) - 1
    if _one_line(doc):
        inner = _member(key, value, None, doc)
    else:
        base = _line_indent(text, opening)
        nl = _newline(text)
        inner = nl + base + _unit(doc) + _member(key, value, base + _unit(doc), doc) + nl + base
    return text[: opening + 1] + inner + text[closing:]


def _replace_value(doc: Document, where: JsonPath, value: object) -> str:
    start = doc.values[where]
    end = _end(doc.text, start)
    indent = None if _one_line(doc) else _line_indent(doc.text, doc.keys[where])
    return doc.text[:start] + _dumped(value, indent, doc) + doc.text[end:]


def _remove_member(doc: Document, where: JsonPath) -> str:
    text = doc.text
    obj, key = where[:-1], where[-1]
    members = list(_at(doc.value, obj))  # type: ignore[call-overload]
    i = members.index(key)
    end = _end(text, doc.values[where])
    if len(members) == 1:
        opening = doc.values[obj]
        return text[: opening + 1] + text[_end(text, opening) - 1 :]
    if i < len(members) - 1:
        return text[: doc.keys[where]] + text[doc.keys[(*obj, members[i + 1])] :]
    previous_end = _end(text, doc.values[(*obj, members[i - 1])])
    return text[:previous_end] + text[end:]
