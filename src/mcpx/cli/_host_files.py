"""Reading the servers out of other MCP hosts' files (for ``mcpx import``).

Where each host keeps them, and how they are read (JSONC, positions the file's own), is
``mcpx.config``'s one table (``HOSTS``, ``host_files``) and reader (``parse_jsonc``); this
module finds the object of servers in what was read.
"""

from __future__ import annotations

from pathlib import Path

from mcpx.config import ConfigError, parse_jsonc, read_host_config

__all__ = ["read_servers"]

# Where a file mcpx was only pointed at may keep its servers, in order.
_ANY_HOST: tuple[tuple[str, ...], ...] = (("mcpServers",), ("servers",), ("mcp", "servers"))


def read_servers(path: Path, block: tuple[str, ...] | None) -> dict[str, object]:
    """The servers, by name, in the file at ``path`` under ``block``; with no ``block``,
    under ``mcpServers``, ``servers`` or ``mcp.servers``, whichever it has. A file
    without the block has none.

    Raises:
        ConfigError: the file cannot be read or does not parse (with line and column),
            or the block is not an object.
    """
    text = read_host_config(path)
    if text is None:
        raise ConfigError(path, "cannot be read: no such file")
    doc = parse_jsonc(text, path).value
    if not isinstance(doc, dict):
        raise ConfigError(path, "is not a JSON object", 1, 1)
    for steps in [block] if block else _ANY_HOST:
        found: object = doc
        for step in steps:
            found = found.get(step) if isinstance(found, dict) else None
        if found is None:
            continue
        if not isinstance(found, dict):
            raise ConfigError(path, f"{'.'.join(steps)} is not an object of servers by name")
        return dict(found)
    return {}
