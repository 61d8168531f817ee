"""Settling one upstream connection's era and revision, and what the server declared.

Legacy (2024-11-05 … 2025-11-25): ``initialize`` offers the newest legacy revision the
spec policy allows; the answer must name a legacy revision mcpx speaks, and
``notifications/initialized`` follows. Modern (2026-07-28): ``server/discover`` with the
full ``_meta``; the answer's ``supportedVersions`` must share a modern revision with
mcpx, and a ``-32022`` refusal moves to a version the server names.

``Handshake`` sends these and adopts their answers. ``_probe`` decides which to try and
when (it also sends them itself, racing, through ``initialize_params`` and
``discover_request``, and hands the answers back to ``settle_*``); ``Session`` reads
``negotiated`` and re-initializes through ``initialize_again`` when an HTTP server forgot
the session.

Invariants:

- ``negotiated`` is set only by a ``settle_*`` (or ``adopt_version``): never to a revision
  mcpx does not speak, nor to a modern one the server did not list.
- After a legacy handshake over Streamable HTTP the transport's session headers carry
  ``MCP-Protocol-Version`` (2025-06-18+), so its own GET and DELETE carry it too.
- Cancelling closes the response stream only on modern HTTP; elsewhere it is in-band.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Final

from mcpx import __version__, spec, wire
from mcpx.transport import TransportError

from ._connection import Connection
from ._errors import HandshakeFailed, UpstreamError
from ._handler import QuestionHandler

__all__ = ["CLIENT_INFO", "MODERN_ERRORS", "Handshake", "Negotiated"]

log = logging.getLogger("mcpx.client")

CLIENT_INFO: Final = {"name": "mcpx", "version": __version__}
# Errors only a 2026-07-28 server answers with: they settle the era as modern.
MODERN_ERRORS: Final = frozenset({-32020, -32021, -32022})


@dataclass
class Negotiated:
    """What the handshake or discovery settled."""

    era: spec.Era
    revision: str
    capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    source: str = "probe"  # probe | cache | forced
    transport: str = "stdio"  # stdio | http | sse
    # How the opener came to it, for the trace of the call that waited for it (set by
    # ``_open``): what the era cache said (hit: it answered; stale: it named an era
    # the server no longer speaks; miss; off: not consulted), when the era was settled
    # (wall clock), and each time the opener started over another way (reason, when).
    cache: str = "off"
    settled_at: float = field(default_factory=time.time, compare=False)
    fallbacks: tuple[tuple[str, float], ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "era": self.era.value,
            "revision": self.revision,
            "source": self.source,
            "transport": self.transport,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
        }


class Handshake:
    """The era and revision of one connection: how they are asked for and adopted."""

    def __init__(
        self,
        conn: Connection,
        *,
        name: str,
        handler: QuestionHandler,
        http: bool,
        policy: spec.Policy,
    ) -> None:
        self.conn = conn
        self.name = name
        self.handler = handler
        self.http = http
        self.policy = policy
        self.negotiated: Negotiated | None = None

    @property
    def revision(self) -> str:
        """The negotiated revision.

        Raises:
            UpstreamError: nothing is negotiated yet.
        """
        if self.negotiated is None:
            raise UpstreamError(f"{self.name}: no revision negotiated yet")
        return self.negotiated.revision

    @property
    def modern(self) -> bool:
        return self.negotiated is not None and self.negotiated.era is spec.Era.MODERN

    # -- legacy: initialize ----------------------------------------------------------

    def legacy_offer(self) -> str:
        """The newest legacy revision the spec policy allows: its first legacy one."""
        return next(r for r in self.policy.precedence if r in spec.LEGACY)

    def initialize_params(self) -> dict[str, Any]:
        """The params of an ``initialize`` request."""
        offer = self.legacy_offer()
        return {
            "protocolVersion": offer,
            "capabilities": self.handler.capabilities(offer),
            "clientInfo": CLIENT_INFO,
        }

    async def initialize(
        self, *, timeout: float | None = None, source: str = "probe"
    ) -> Negotiated:
        """The legacy handshake: initialize, check the answer, initialized.

        Raises:
            HandshakeFailed: the server answered a revision mcpx does not speak.
            McpError, UpstreamError: as for ``Connection.request``.
        """
        params = self.initialize_params()
        result = await self.conn.request("initialize", params, timeout=timeout, cancellable=False)
        return await self.settle_initialize(result, source)

    async def settle_initialize(self, result: dict[str, Any], source: str) -> Negotiated:
        """Adopt an initialize answer and send ``notifications/initialized``.

        Raises:
            HandshakeFailed: the answered revision is not one mcpx speaks.
        """
        answered = result.get("protocolVersion")
        if answered not in spec.LEGACY:
            raise HandshakeFailed(
                f"{self.name} answered initialize with protocol version {answered!r}; "
                f"mcpx speaks {', '.join(spec.LEGACY)} in the legacy era "
                f"(offered {self.legacy_offer()})"
            )
        self.negotiated = Negotiated(
            spec.Era.LEGACY,
            answered,
            capabilities=result.get("capabilities") or {},
            server_info=result.get("serverInfo") or {},
            instructions=result.get("instructions"),
            source=source,
            transport=self._transport_name(),
        )
        self.conn.cancel_by_closing = False
        http_session = self.conn.transport.http_session()
        if self.http and http_session is not None:
            # The GET stream and the DELETE carry the version too (2025-06-18+).
            http_session.session_headers = self.legacy_headers()
        await self.conn.notify("notifications/initialized")
        return self.negotiated

    async def initialize_again(self, *, timeout: float | None) -> None:
        """The HTTP server forgot our session (a restart, an expiry): forget its id,
        initialize again (keeping how the era was learned) and reopen the GET stream,
        which a server may refuse.

        Raises:
            HandshakeFailed, McpError, UpstreamError: as for ``initialize``.
        """
        http_session = self.conn.transport.http_session()
        if http_session is not None:
            http_session.session_id = None
        source = self.negotiated.source if self.negotiated else "probe"
        await self.initialize(timeout=timeout, source=source)
        if http_session is None:
            return
        try:
            await http_session.open_listen_stream()
        except TransportError as exc:
            log.info("%s offers no GET stream after re-initializing (%s)", self.name, exc)

    def legacy_headers(self) -> dict[str, str]:
        """The headers of every legacy request: the version, where HTTP defines it."""
        # The header exists from 2025-06-18; an older peer never defined it.
        if self.http and spec.at_or_after(self.revision, "2025-06-18"):
            return {wire.MCP_PROTOCOL_VERSION: self.revision}
        return {}

    # -- modern: server/discover -----------------------------------------------------

    def discover_request(
        self, revision: str = spec.NEWEST
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The params and HTTP headers of a ``server/discover`` at ``revision``."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": self.handler.capabilities(revision),
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }
        headers = {}
        if self.http:
            headers = {wire.MCP_PROTOCOL_VERSION: revision, wire.MCP_METHOD: "server/discover"}
        return {"_meta": meta}, headers

    async def discover(self, *, timeout: float | None = None, source: str = "probe") -> Negotiated:
        """2026-07-28 discovery, moving to a version the server names if it
        refuses ours (-32022).

        Raises:
            McpError: the server answered with another error.
            HandshakeFailed: the answer is not a DiscoverResult, or shares no version.
        """
        revision = spec.NEWEST
        for _attempt in range(2):
            params, headers = self.discover_request(revision)
            try:
                result = await self.conn.request(
                    "server/discover", params, headers=headers, timeout=timeout
                )
            except wire.UnsupportedProtocolVersion as exc:
                revision = self.mutual_modern(exc.supported)
                continue
            return self.settle_discover(result, source)
        raise HandshakeFailed(f"{self.name} refused every version mcpx offered for server/discover")

    def settle_discover(self, result: dict[str, Any], source: str) -> Negotiated:
        """Adopt a DiscoverResult.

        Raises:
            HandshakeFailed: it is not a DiscoverResult, or shares no version.
        """
        versions = result.get("supportedVersions")
        if not isinstance(versions, list):
            raise HandshakeFailed(f"{self.name} answered server/discover with no supportedVersions")
        revision = self.mutual_modern(versions)
        meta = result.get("_meta") or {}
        self.negotiated = Negotiated(
            spec.Era.MODERN,
            revision,
            capabilities=result.get("capabilities") or {},
            server_info=meta.get("io.modelcontextprotocol/serverInfo") or {},
            instructions=result.get("instructions"),
            source=source,
            transport=self._transport_name(),
        )
        self.conn.cancel_by_closing = self.http
        return self.negotiated

    def mutual_modern(self, versions: list[Any]) -> str:
        """The newest modern revision both sides list.

        Raises:
            HandshakeFailed: they share none.
        """
        mutual: list[str] = [r for r in reversed(spec.MODERN) if r in versions]
        if not mutual:
            raise HandshakeFailed(
                f"{self.name} supports {', '.join(map(str, versions)) or 'no versions'}; "
                f"mcpx speaks {', '.join(spec.MODERN)} in the modern era"
            )
        return mutual[0]

    def adopt_version(self, exc: wire.UnsupportedProtocolVersion) -> None:
        """Move to a version the server named when it refused a request's (-32022).

        Raises:
            HandshakeFailed: it shares none with mcpx, or refused the one it lists.
        """
        revision = self.mutual_modern(exc.supported)
        if self.negotiated is None or revision == self.negotiated.revision:
            raise HandshakeFailed(
                f"{self.name} refused {revision}, which it also lists as supported"
            ) from exc
        self.negotiated.revision = revision

    def _transport_name(self) -> str:
        kind = self.conn.transport.describe().get("transport", "stdio")
        return str(kind)
