"""Per-connection state of a client talking to mcpx's server side.

Invariants:

- Everything a client told mcpx lives on a ``Conn``, never on the server object: two
  clients of one daemon never share a revision, capabilities, a log level or a filter.
- "Can push" is a property of the connection, not of the server. The transport hands a
  ``push`` callable only where unsolicited frames can reach the client: stdio, a legacy
  HTTP session once its GET stream is open, a 2026-07-28 ``subscriptions/listen`` stream.
  A legacy POST outside a session and an ordinary 2026-07-28 request get none.
- A 2026-07-28 request is judged on its own ``_meta`` alone (``for_request``): nothing is
  inferred from earlier requests on the same connection (S-LIFE-14).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from mcpx.spec import OLDEST, Era, defined, era_of, rows

__all__ = ["META_CAPABILITIES", "META_VERSION", "Conn", "Push", "Subscriptions", "Transport"]

Transport = Literal["stdio", "http"]
# Writes one server-to-client frame (a notification, or a legacy server request).
Push = Callable[[dict[str, Any]], None]

META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
_META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"

# Client capability paths the matrix knows; a known path outside its revision's range
# is never "declared", whatever the client sent (send conservatively).
_KNOWN: Final = frozenset(r.name for r in rows("capability") if r.direction == "client")
_LIST_KINDS: Final = frozenset({"tools", "prompts", "resources"})


@dataclass
class Subscriptions:
    """What a client asked to hear about: resource URIs and list_changed kinds."""

    uris: set[str] = field(default_factory=set)
    list_changed: set[str] = field(default_factory=set)

    @classmethod
    def everything(cls) -> Subscriptions:
        # Legacy list_changed notifications are unsolicited: every kind is wanted.
        return cls(set(), set(_LIST_KINDS))

    def wants_updated(self, uri: str) -> bool:
        return uri in self.uris

    def wants_list_changed(self, kind: str) -> bool:
        return kind in self.list_changed


@dataclass
class Conn:
    """One client connection (or, for 2026-07-28, one request's view of it)."""

    transport: Transport
    revision: str | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    push: Push | None = None
    subscriptions: Subscriptions = field(default_factory=Subscriptions)
    identity: str | None = None
    # Who the daemon's auth check said sent it (``oauth:<sub>``, ``token:<name>``); None
    # when nothing was checked (the unix socket, daemon.auth=none, stdio).
    principal: str | None = None
    session_id: str | None = None
    log_level: str | None = None
    # A legacy host's notifications/initialized came: only then is it sent requests
    # (an upstream's questions), as the lifecycle says.
    initialized: bool = False
    # The connection's own pass-through servers (None: the daemon's mcp.passthrough).
    passthrough: tuple[str, ...] | None = None
    # The profile it asked for (mcpx serve --profile, /mcp?profile=; None: mcp.profile).
    profile: str | None = None
    # Subscribed URIs (as the client named them) -> (server, upstream URI) watched.
    watching: dict[str, tuple[str, str]] = field(default_factory=dict)
    # How many times anything was set on it (``__setattr__``): what its requests are
    # served under is kept while this stays the same (``_send_ahead.Lane``).
    changes: ClassVar[int] = 0

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        object.__setattr__(self, "changes", self.changes + 1)

    @property
    def era(self) -> Era | None:
        return None if self.revision is None else era_of(self.revision)

    @property
    def can_push(self) -> bool:
        return self.push is not None

    def initialize(self, revision: str, params: Mapping[str, Any]) -> None:
        """Record a legacy handshake: its revision, capabilities and client info."""
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        self.revision = revision
        self.capabilities = dict(caps) if isinstance(caps, Mapping) else {}
        self.client_info = dict(info) if isinstance(info, Mapping) else None

    def for_request(self, params: Mapping[str, Any], *, listen: Push | None = None) -> Conn:
        """The view one request is served under.

        A request without modern ``_meta`` is served under the connection itself. A
        2026-07-28 request gets a fresh view built from its own ``_meta`` only; it can
        push only when it is a ``subscriptions/listen`` whose stream is ``listen``.
        """
        meta = params.get("_meta")
        if not isinstance(meta, Mapping) or META_VERSION not in meta:
            return self
        caps = meta.get(META_CAPABILITIES)
        info = meta.get(_META_CLIENT_INFO)
        level = meta.get(META_LOG_LEVEL)
        return dataclasses.replace(
            self,
            revision=str(meta[META_VERSION]),
            capabilities=dict(caps) if isinstance(caps, Mapping) else {},
            client_info=dict(info) if isinstance(info, Mapping) else None,
            # No logLevel: no notifications/message for this request (S-LOG-4).
            log_level=level if isinstance(level, str) else None,
            push=listen,
            subscriptions=Subscriptions(),
            watching={},
            session_id=None,  # 2026-07-28 has no sessions
            identity=None,  # decided per request by identity_for
        )

    def declared(self, path: str) -> bool:
        """Whether the client declared a capability, e.g. ``"elicitation.form"``.

        ``"extensions.<id>"`` takes the rest as one key (extension ids contain dots).
        """
        rev = self.revision or OLDEST
        if path == "elicitation.form":
            # An empty elicitation object is form only (2025-11-25, 2026-07-28), and
            # 2025-06-18 had no other mode.
            caps = self.capabilities.get("elicitation")
            return self.declared("elicitation") and (
                not _has_any(caps, "form", "url") or _present(caps, "form")
            )
        segs = path.split(".", 1) if path.startswith("extensions.") else path.split(".")
        node: object = self.capabilities
        for i, seg in enumerate(segs):
            prefix = ".".join(segs[: i + 1])
            if prefix in _KNOWN and not defined("capability", prefix, rev, "client"):
                return False
            if not _present(node, seg):
                return False
            node = node[seg] if isinstance(node, Mapping) else None
        return True


def _present(node: object, key: str) -> bool:
    # `{}` means "supported, no settings"; null or false means not declared.
    return isinstance(node, Mapping) and node.get(key) not in (None, False)


def _has_any(node: object, *keys: str) -> bool:
    return isinstance(node, Mapping) and any(k in node for k in keys)
