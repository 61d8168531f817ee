"""Upstream server definitions, read in the shapes MCP hosts already write.

Taken unchanged: Claude Desktop / Claude Code ``{command, args, env, cwd}``, ``{url,
headers}`` and ``{type: "sse" | "http" | "streamable-http", url, headers}``; VS Code
``{type: "stdio", command, args, env, cwd}`` and ``{type: "http" | "sse", url, headers}``.
mcpx adds optional keys of its own: ``scope``, ``protocol`` and ``auth`` beside the host's
keys, and an ``mcpx`` block for what it offers of the server: ``tools`` and
``excludeTools`` (glob filters), ``namespace`` (the name it is offered under),
``description``, ``disabled``, ``profiles`` and ``default``.

Invariants:

- The transport is always known: from ``type``, else inferred (command -> stdio, url ->
  http). A stdio server has a command and no url or headers; an http or sse server has a
  url and no command, args, env or cwd.
- Every key mcpx reads is checked for its type, and an error points at the offending
  value. Keys mcpx does not read (``disabled``, ``envFile``, whatever a host adds) are
  kept in ``raw`` and ignored. A key whose value is ``null`` counts as absent.
- ``name`` is what the server is known by everywhere (pool, catalogue, /v1, MCP): its
  ``mcpx.namespace``, else its key. ``key`` is where it is in the file.
- A server is in the default profile unless ``mcpx.default`` is false; an entry that lists
  ``profiles`` and says nothing of ``default`` is only in those profiles.
- A tool is offered when it matches an allow-list glob (or there is no allow-list) and
  no ``excludeTools`` glob; globs are ``fnmatch`` patterns, case-sensitive.
- ``raw`` is the entry as written; nothing here rewrites values (``${input:...}``
  placeholders and relative paths stay as they are).
- What is shown of a server never holds a credential: ``shown_url`` is the url as
  ``redact_url`` shows it, and ``repr`` names the keys of ``env``, ``headers`` and
  ``auth`` without their values (any of them may be a secret).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, cast
from urllib.parse import urlsplit

from ._jsontext import ConfigError, Document, JsonPath
from ._oauth_block import check_oauth
from ._redact import REDACTED, redact_headers, redact_url
from ._registry import UPSTREAM_PROTOCOLS

__all__ = ["AUTH_TYPES", "MCPX_KEYS", "SCOPES", "TRANSPORTS", "ServerConfig", "parse_server"]

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["shared", "identity"]

TRANSPORTS: Final = ("stdio", "http", "sse")
# Each spelling of "type" that hosts write, and the transport it names.
_TYPES: Final[Mapping[str, Transport]] = MappingProxyType(
    {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"}
)
SCOPES: Final = ("shared", "identity")
AUTH_TYPES: Final = ("bearer", "basic", "header", "query", "env", "oauth")
_LOCAL_ONLY: Final = ("command", "args", "env", "cwd")
_REMOTE_ONLY: Final = ("url", "headers")
_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})
# The keys of a server's mcpx block; any other is refused (a typo would silently offer all).
MCPX_KEYS: Final = (
    "tools",
    "excludeTools",
    "namespace",
    "description",
    "disabled",
    "profiles",
    "default",
)
# A namespace is a server name: it prefixes prompts (<name>_<prompt>) and mcpx:// URIs.
_NAMESPACE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _nothing() -> Mapping[str, str]:
    return _EMPTY


@dataclass(frozen=True)
class ServerConfig:
    """One upstream server as configured.

    ``scope`` is ``"shared"`` (one instance for every caller) or ``"identity"`` (one
    instance per caller identity). ``protocol`` overrides upstream.protocol for this
    server. ``auth`` is the auth block as written, its ``type`` checked.
    """

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_nothing)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=_nothing)
    scope: Scope = "shared"
    protocol: str | None = None
    auth: Mapping[str, object] | None = None
    raw: Mapping[str, object] = field(default_factory=_nothing)
    key: str = ""
    tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    description: str | None = None
    disabled: bool = False
    profiles: tuple[str, ...] = ()
    in_default: bool = True

    def offers_tool(self, name: str) -> bool:
        """Whether the tool ``name`` passes this server's filters."""
        if self.tools and not any(fnmatch.fnmatchcase(name, p) for p in self.tools):
            return False
        return not any(fnmatch.fnmatchcase(name, p) for p in self.exclude_tools)

    @property
    def filtered(self) -> bool:
        return bool(self.tools or self.exclude_tools)

    @property
    def shown_url(self) -> str | None:
        """The url as it may be shown: userinfo and query values hidden."""
        return None if self.url is None else redact_url(self.url)

    def __repr__(self) -> str:
        auth = None if self.auth is None else {"type": self.auth.get("type"), "...": REDACTED}
        return (
            f"ServerConfig(name={self.name!r}, transport={self.transport!r}, "
            f"command={self.command!r}, args={self.args!r}, env={redact_headers(self.env)}, "
            f"cwd={self.cwd!r}, url={self.shown_url!r}, headers={redact_headers(self.headers)}, "
            f"scope={self.scope!r}, protocol={self.protocol!r}, auth={auth})"
        )


def parse_server(doc: Document, where: JsonPath, value: object) -> ServerConfig:
    """The server defined by ``value``, found at ``where`` in ``doc`` (its name is last).

    Raises:
        ConfigError: the entry is not an object, its transport cannot be told, or a key
            mcpx reads has the wrong type; the message points at the offending value.
    """
    key = str(where[-1])
    if not key:
        raise doc.error(where, "needs a non-empty server name", key=True)
    if not isinstance(value, dict):
        raise doc.error(where, "must be an object")
    entry = _Entry(doc, where, value)
    transport = _transport(entry)
    _refuse_foreign_keys(entry, transport)
    offer = _mcpx_block(entry)
    return ServerConfig(
        name=offer.string("namespace") or key,
        key=key,
        tools=offer.strings("tools"),
        exclude_tools=offer.strings("excludeTools"),
        description=offer.string("description"),
        disabled=offer.boolean("disabled", False),
        profiles=offer.strings("profiles"),
        in_default=offer.boolean("default", not offer.has("profiles")),
        transport=transport,
        command=entry.string("command"),
        args=entry.strings("args"),
        env=entry.string_map("env"),
        cwd=entry.string("cwd"),
        url=entry.url("url"),
        headers=entry.string_map("headers"),
        scope=cast(Scope, entry.choice("scope", SCOPES) or "shared"),
        protocol=entry.choice("protocol", UPSTREAM_PROTOCOLS),
        auth=_auth(entry),
        raw=MappingProxyType(value),
    )


class _Entry:
    """Typed reads of one server entry, each failing at the offending value."""

    def __init__(self, doc: Document, where: JsonPath, raw: dict[str, object]) -> None:
        self.doc = doc
        self.where = where
        self.raw = raw

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def error(self, problem: str, *path: str | int, key: bool = False) -> ConfigError:
        return self.doc.error((*self.where, *path), problem, key=key)

    def string(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.error("must be a non-empty string", key)
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.error("must be a list of strings", key)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error("must be a string", key, i)
        return tuple(value)

    def string_map(self, key: str) -> Mapping[str, str]:
        value = self.raw.get(key)
        if value is None:
            return _EMPTY
        if not isinstance(value, dict):
            raise self.error("must be an object of strings", key)
        for name, item in value.items():
            if not isinstance(item, str):
                raise self.error("must be a string", key, name)
        return MappingProxyType(value)

    def url(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not _is_web_url(value):
            raise self.error("must be an http or https URL", key)
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error("must be true or false", key)
        return value

    def choice(self, key: str, choices: tuple[str, ...]) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if value not in choices:
            raise self.error(f"must be one of {', '.join(choices)}", key)
        return value


def _is_web_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _transport(entry: _Entry) -> Transport:
    kind = entry.raw.get("type")
    if kind is None:
        return _inferred(entry)
    if not isinstance(kind, str) or kind not in _TYPES:
        raise entry.error(f"must be one of {', '.join(_TYPES)}", "type")
    transport = _TYPES[kind]
    needed = "command" if transport == "stdio" else "url"
    if not entry.has(needed):
        raise entry.error(f"has type {kind!r} but no {needed}")
    return transport


def _inferred(entry: _Entry) -> Transport:
    local, remote = entry.has("command"), entry.has("url")
    if local and remote:
        raise entry.error('has both command and url; add "type" to say which transport')
    if local:
        return "stdio"
    if remote:
        return "http"
    raise entry.error("needs a command (a stdio server) or a url (an http or sse server)")


def _refuse_foreign_keys(entry: _Entry, transport: Transport) -> None:
    # A url on a stdio server (or a command on a remote one) is a mistake, not an extra:
    # ignoring it would run something other than what the user meant.
    foreign = _REMOTE_ONLY if transport == "stdio" else _LOCAL_ONLY
    for key in foreign:
        if entry.has(key):
            raise entry.error(f"is not used by {transport} servers", key, key=True)


def _mcpx_block(entry: _Entry) -> _Entry:
    """The entry's ``mcpx`` block, its keys and their types checked."""
    block = entry.raw.get("mcpx")
    if block is None:
        block = {}
    if not isinstance(block, dict):
        raise entry.error("must be an object", "mcpx")
    offer = _Entry(entry.doc, (*entry.where, "mcpx"), block)
    for key in block:
        if key not in MCPX_KEYS:
            raise offer.error(f"is not an mcpx key: one of {', '.join(MCPX_KEYS)}", key, key=True)
    namespace = offer.string("namespace")
    if namespace is not None and not _NAMESPACE.fullmatch(namespace):
        raise offer.error("must be letters, digits, '_', '.' or '-'", "namespace")
    for key in ("tools", "excludeTools", "profiles"):
        for i, item in enumerate(offer.strings(key)):
            if not item:
                raise offer.error("must be a non-empty string", key, i)
    return offer


def _auth(entry: _Entry) -> Mapping[str, object] | None:
    block = entry.raw.get("auth")
    if block is None:
        return None
    if not isinstance(block, dict):
        raise entry.error("must be an object", "auth")
    if "type" not in block:
        raise entry.error(f"needs a type: one of {', '.join(AUTH_TYPES)}", "auth")
    if block["type"] not in AUTH_TYPES:
        raise entry.error(f"must be one of {', '.join(AUTH_TYPES)}", "auth", "type")
    if block["type"] == "oauth":
        check_oauth(block, entry.error)
    return MappingProxyType(block)
