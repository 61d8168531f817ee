"""The official MCP registry's ``server.json``, turned into a server entry for mcpx.

A package becomes a command: npm ``npx -y ID@VERSION``, PyPI ``uvx ID==VERSION``, OCI
``docker run --rm -i [-e VAR]… IMAGE[:TAG]``; with no package mcpx can run, the first
remote becomes ``{type, url, headers}``. ``runtimeArguments`` go before the package,
``packageArguments`` after it.

Invariants:

- Nothing is invented: a required environment variable, header or argument with no value
  or default in the file gets a placeholder ``<NAME>`` and is listed in ``needs`` (with
  whether it is a secret), for the user to fill in; optional ones without a value are
  left out and listed too.
- Only the schema versions in ``SCHEMAS`` are read; any other ``$schema`` is refused,
  naming it (a later format may mean something else by the same keys). A file with no
  ``$schema`` (the registry API's own answers) is read as the newest.
- The registry API's wrapped form ``{"server": {...}}`` is read as the server inside.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["SCHEMAS", "Need", "RegistryEntry", "ServerJsonError", "load_server_json"]

_SCHEMA_URL: Final = "https://static.modelcontextprotocol.io/schemas/{}/server.schema.json"
# The dated versions of the camelCase format (registryType, environmentVariables).
SCHEMAS: Final = tuple(_SCHEMA_URL.format(d) for d in ("2025-09-29", "2025-10-17", "2025-12-11"))
_RUNNERS: Final = ("npm", "pypi", "oci")
_REMOTE_TYPES: Final = {"streamable-http": "http", "sse": "sse"}


class ServerJsonError(ValueError):
    """A ``server.json`` mcpx cannot use; the message says where and why."""


@dataclass(frozen=True)
class Need:
    """A value the user must (or may) supply: an env var, header or argument."""

    kind: str  # "env", "header", "argument"
    name: str
    required: bool
    secret: bool
    description: str = ""


@dataclass(frozen=True)
class RegistryEntry:
    """The entry made of a ``server.json``, its suggested name and what it needs."""

    name: str
    entry: dict[str, object]
    source: str  # "npm", "pypi", "oci" or "remote"
    needs: tuple[Need, ...] = field(default_factory=tuple)


def load_server_json(where: str, timeout: float = 30) -> RegistryEntry:
    """Read the ``server.json`` at ``where`` (a file, or an http(s) URL) as an entry.

    Raises:
        ServerJsonError: it cannot be read, is not JSON, has an unknown ``$schema``, or
            has no package mcpx can run and no remote.
    """
    text = _read(where, timeout)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ServerJsonError(
            f"{where}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}"
        ) from None
    if isinstance(doc, dict) and isinstance(doc.get("server"), dict) and "name" not in doc:
        doc = doc["server"]
    if not isinstance(doc, dict):
        raise ServerJsonError(f"{where}: a server.json must be a JSON object")
    return convert(doc, where)


def convert(doc: dict[str, Any], where: str) -> RegistryEntry:
    """The entry for the parsed ``server.json`` ``doc`` (read from ``where``).

    Raises:
        ServerJsonError: see ``load_server_json``.
    """
    schema = doc.get("$schema")
    if schema is not None and schema not in SCHEMAS:
        raise ServerJsonError(
            f"{where}: $schema {schema!r} is not a server.json version mcpx reads "
            f"(it reads {', '.join(SCHEMAS)})"
        )
    name = str(doc.get("name") or "").rsplit("/", 1)[-1]
    needs: list[Need] = []
    for package in doc.get("packages") or []:
        if isinstance(package, dict) and package.get("registryType") in _RUNNERS:
            transport = (package.get("transport") or {}).get("type", "stdio")
            if transport == "stdio":
                entry = _package(package, needs)
                return RegistryEntry(name, entry, str(package["registryType"]), tuple(needs))
    for remote in doc.get("remotes") or []:
        if isinstance(remote, dict) and remote.get("type") in _REMOTE_TYPES and remote.get("url"):
            return RegistryEntry(name, _remote(remote, needs), "remote", tuple(needs))
    raise ServerJsonError(
        f"{where}: no package mcpx can run (npm, pypi or oci over stdio) and no remote "
        "(streamable-http or sse)"
    )


def _read(where: str, timeout: float) -> str:
    if where.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(where, timeout=timeout) as reply:
                data: bytes = reply.read()
        except (urllib.error.URLError, OSError) as err:
            raise ServerJsonError(f"{where}: cannot be fetched: {err}") from None
    else:
        try:
            data = Path(where).expanduser().read_bytes()
        except OSError as err:
            raise ServerJsonError(f"{where}: cannot be read: {err.strerror or err}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ServerJsonError(f"{where}: is not UTF-8 text") from None


def _package(package: dict[str, Any], needs: list[Need]) -> dict[str, object]:
    kind, ident = package["registryType"], str(package.get("identifier") or "")
    version = package.get("version")
    env = _env(package.get("environmentVariables") or [], needs)
    runtime = _arguments(package.get("runtimeArguments") or [], needs)
    after = _arguments(package.get("packageArguments") or [], needs)
    if kind == "npm":
        command, args = "npx", ["-y", *runtime, f"{ident}@{version}" if version else ident]
    elif kind == "pypi":
        command, args = "uvx", [*runtime, f"{ident}=={version}" if version else ident]
    else:
        tagged = (
            ident if version is None or ":" in ident.rsplit("/", 1)[-1] else f"{ident}:{version}"
        )
        # A container sees only the variables passed to it by name.
        passed = [part for var in env for part in ("-e", var)]
        command, args = "docker", ["run", "--rm", "-i", *passed, *runtime, tagged]
    entry: dict[str, object] = {"command": command, "args": [*args, *after]}
    if env:
        entry["env"] = env
    return entry


def _remote(remote: dict[str, Any], needs: list[Need]) -> dict[str, object]:
    entry: dict[str, object] = {"type": _REMOTE_TYPES[remote["type"]], "url": remote["url"]}
    headers = _values(remote.get("headers") or [], "header", needs)
    if headers:
        entry["headers"] = headers
    return entry


def _env(items: list[Any], needs: list[Need]) -> dict[str, str]:
    return _values(items, "env", needs)


def _values(items: list[Any], kind: str, needs: list[Need]) -> dict[str, str]:
    """name -> value for the items that have one (given, default, or a placeholder when
    required); each item without a value is recorded in ``needs``."""
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        name = str(item["name"])
        value = item.get("value", item.get("default"))
        if value is not None and "{" not in str(value):
            out[name] = str(value)
            continue
        required = bool(item.get("isRequired"))
        needs.append(
            Need(
                kind, name, required, bool(item.get("isSecret")), str(item.get("description") or "")
            )
        )
        if required:
            out[name] = f"<{name}>"
    return out


def _arguments(items: list[Any], needs: list[Need]) -> list[str]:
    out: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        value = item.get("value", item.get("default"))
        label = str(item.get("valueHint") or item.get("name") or "value")
        if value is None and not item.get("isRequired"):
            if item.get("type") == "named" and item.get("name"):
                needs.append(Need("argument", str(item["name"]), False, False, _about(item)))
            continue
        if value is None:
            needs.append(Need("argument", label, True, bool(item.get("isSecret")), _about(item)))
            value = f"<{label}>"
        if item.get("type") == "named" and item.get("name"):
            out.append(str(item["name"]))
        out.append(str(value))
    return out


def _about(item: dict[str, Any]) -> str:
    return str(item.get("description") or "")
