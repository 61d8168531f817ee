"""The config file: read one JSON file into raw settings and server definitions.

Layout: ``mcpServers`` (Claude Desktop / Claude Code) and ``servers`` (VS Code), either or
both; ``settings``, by dotted name (``{"pool.callTimeout": "10s"}``), nested by group
(``{"pool": {"callTimeout": "10s"}}``) or a mix; ``$schema`` and ``inputs`` (VS Code),
ignored. Nothing else.

Invariants:

- A file is accepted whole or refused: every setting value is checked against its kind
  and every server entry is read here, so a ``ConfigFile`` holds nothing invalid.
- Every refusal is a ``ConfigError`` reading ``path:line:column: what is wrong``, the
  position being where the offending value (or key) starts in the text.
- ``settings`` keeps the raw JSON values, by setting name, in file order; resolution
  turns them into typed values, so a file and the environment are read by one code path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

from ._jsontext import ConfigError, Document, JsonPath, parse_document
from ._registry import SETTINGS
from ._servers import ServerConfig, parse_server
from ._setting import Origin, OriginKind, SettingError, did_you_mean

__all__ = ["TOP_LEVEL_KEYS", "ConfigFile", "load_config_file", "parse_config_text"]

_SERVER_BLOCKS: Final = ("mcpServers", "servers")
# "$schema" and "inputs" are VS Code's; mcpx has no use for either.
TOP_LEVEL_KEYS: Final = (*_SERVER_BLOCKS, "settings", "$schema", "inputs")
# Every proper prefix of a setting name may be nested: {"pool": {"callTimeout": ...}}.
_GROUPS: Final = frozenset(
    ".".join(parts[:i]) for parts in (n.split(".") for n in SETTINGS) for i in range(1, len(parts))
)


@dataclass(frozen=True)
class ConfigFile:
    """A config file that was read and checked: raw settings by name, servers by the name
    they are offered under (``disabled`` holds those whose ``mcpx.disabled`` is true: they
    are not run or offered)."""

    path: Path
    settings: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    servers: Mapping[str, ServerConfig] = field(default_factory=lambda: MappingProxyType({}))
    disabled: Mapping[str, ServerConfig] = field(default_factory=lambda: MappingProxyType({}))


def load_config_file(path: Path | str) -> ConfigFile:
    """Read and check the config file at ``path``.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 or JSON, or holds something
            mcpx refuses; the message names the path and, where there is one, the line
            and column.
    """
    where = Path(path)
    try:
        # utf-8-sig: editors on Windows may start the file with a byte order mark.
        text = where.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(where, "no such config file") from None
    except UnicodeDecodeError as err:
        raise ConfigError(where, f"is not UTF-8 text (byte {err.start}: {err.reason})") from None
    except OSError as err:
        raise ConfigError(where, f"cannot be read: {err.strerror or err}") from None
    return parse_config_text(text, where)


def parse_config_text(text: str, path: Path | str) -> ConfigFile:
    """Check ``text`` as the contents of the config file at ``path`` (used in messages).

    Raises:
        ConfigError: ``text`` is not JSON or holds something mcpx refuses.
    """
    doc = parse_document(text, Path(path))
    root = doc.value
    if not isinstance(root, dict):
        raise doc.error((), "must be a JSON object")
    for key in root:
        if key not in TOP_LEVEL_KEYS:
            hint = did_you_mean(key, TOP_LEVEL_KEYS)
            raise doc.error((key,), f"is not a config file key{hint}", key=True)
    servers = _servers(doc, root)
    return ConfigFile(
        path=doc.path,
        settings=MappingProxyType(_settings(doc, root.get("settings"))),
        servers=MappingProxyType({n: s for n, s in servers.items() if not s.disabled}),
        disabled=MappingProxyType({n: s for n, s in servers.items() if s.disabled}),
    )


def _servers(doc: Document, root: dict[str, object]) -> dict[str, ServerConfig]:
    """Every server entry by the name it is offered under, disabled ones included."""
    servers: dict[str, ServerConfig] = {}
    first_seen: dict[str, tuple[str, str]] = {}
    for block in _SERVER_BLOCKS:
        entries = root.get(block)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise doc.error((block,), "must be an object of servers by name")
        for key, entry in entries.items():
            server = parse_server(doc, (block, key), entry)
            if server.name in servers:
                other_block, other = first_seen[server.name]
                problem = (
                    f"is also defined in {other_block}; a name must be unique"
                    if key == other == server.name
                    else f"is offered as {server.name!r}, as {other_block}.{other} is; "
                    "a name must be unique (mcpx.namespace)"
                )
                raise doc.error((block, key), problem, key=True)
            servers[server.name] = server
            first_seen[server.name] = (block, key)
    return servers


def _settings(doc: Document, block: object) -> dict[str, object]:
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise doc.error(("settings",), "must be an object of settings by name")
    found: dict[str, tuple[JsonPath, object]] = {}
    _collect(doc, block, ("settings",), "", found)
    source = Origin(OriginKind.FILE, str(doc.path))
    values: dict[str, object] = {}
    for name, (where, value) in found.items():
        try:
            SETTINGS[name].accept(value, source)
        except SettingError as err:
            raise doc.error(where, err.detail) from err
        values[name] = value
    return values


def _collect(
    doc: Document,
    block: dict[str, object],
    where: JsonPath,
    prefix: str,
    found: dict[str, tuple[JsonPath, object]],
) -> None:
    """Map each setting named in ``block`` (dotted or nested) to where its value is."""
    for key, value in block.items():
        name, here = prefix + key, (*where, key)
        if name in SETTINGS:
            if name in found:
                line, column = doc.position(found[name][0], key=True)
                raise doc.error(here, f"sets {name} again (first set at {line}:{column})", key=True)
            found[name] = (here, value)
        elif name in _GROUPS and isinstance(value, dict):
            _collect(doc, value, here, name + ".", found)
        elif name in _GROUPS:
            raise doc.error(here, f"must be an object of {name}.* settings")
        else:
            raise doc.error(here, f"is not a setting{did_you_mean(name, SETTINGS)}", key=True)
