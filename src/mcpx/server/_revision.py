"""Judging which revision an incoming request is spoken in.

Invariants:

- A request carrying modern ``_meta`` is judged on that ``_meta`` alone: 2026-07-28, or
  ``-32022`` listing what mcpx serves in that era. Nothing on the connection overrides it.
- Otherwise the connection decides: a negotiated legacy revision stays; a stdio request
  that never initialized is ``OLDEST``; a Streamable HTTP request is its
  ``MCP-Protocol-Version`` header's revision, or ``HEADERLESS`` without one.
- Guessing down is safe and guessing up is not, so every fallback is the older choice.
- A method the revision removed is method-not-found, even though mcpx answers it to older
  peers: the rule "accept liberally" stops at removal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpx.spec import HEADERLESS, LEGACY, MODERN, OLDEST, Policy, index, removed
from mcpx.wire import HeaderMismatch, MethodNotFound, UnsupportedProtocolVersion

from ._conn import META_VERSION, Conn, Transport

__all__ = ["check_removed", "judge", "negotiate_initialize", "stateless"]


def negotiate_initialize(requested: str | None, policy: Policy) -> str:
    """The revision mcpx answers a legacy ``initialize`` with.

    The client's own if it is a legacy revision mcpx serves; otherwise mcpx's newest
    legacy one (the lifecycle page's counter-offer, never an error: S-LIFE-4). A client
    naming 2026-07-28 here is still doing a legacy handshake, so it gets a legacy answer.
    """
    served = [r for r in policy.precedence if r in LEGACY]
    if requested in served:
        return requested
    return max(served, key=index)


def stateless(frame: Mapping[str, Any], header_version: str | None) -> bool:
    """Whether a Streamable HTTP message is a 2026-07-28 one, served without a session:
    modern ``_meta`` in its body, or a 2026-07-28 ``MCP-Protocol-Version`` header (then a
    body without ``_meta`` is -32602, S-LIFE-18, not a legacy message)."""
    if header_version in MODERN:
        return True
    params = frame.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return isinstance(meta, Mapping) and META_VERSION in meta


def judge(
    frame: Mapping[str, Any],
    conn: Conn,
    *,
    transport: Transport,
    header_version: str | None,
    policy: Policy | None = None,
) -> str:
    """The revision ``frame`` is spoken in.

    Raises:
        HeaderMismatch: on HTTP, modern ``_meta`` whose version the header does not
            repeat (checked first: a mismatch is -32020, S-HTTP-33).
        UnsupportedProtocolVersion: modern ``_meta`` naming a version mcpx does not
            implement, or an HTTP header naming no revision at all.
    """
    params = frame.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if isinstance(meta, Mapping) and META_VERSION in meta:
        return _modern(meta[META_VERSION], transport, header_version)
    if frame.get("method") == "initialize":
        asked = params.get("protocolVersion") if isinstance(params, Mapping) else None
        return negotiate_initialize(asked if isinstance(asked, str) else None, policy or Policy())
    if conn.revision is not None and conn.revision in LEGACY:
        return conn.revision
    if transport == "stdio":
        return OLDEST
    return _from_header(header_version)


def _modern(version: object, transport: Transport, header_version: str | None) -> str:
    if transport == "http" and header_version != version:
        shown = "missing" if header_version is None else f"value {header_version!r}"
        raise HeaderMismatch(
            f"Header mismatch: MCP-Protocol-Version header {shown} does not match"
            f" body value {version!r}"
        )
    if version in MODERN:
        return str(version)
    raise UnsupportedProtocolVersion.for_versions(
        MODERN, str(version), f"Unsupported protocol version {version!r}"
    )


def _from_header(header_version: str | None) -> str:
    if header_version is None:
        return HEADERLESS
    if header_version in LEGACY:
        return header_version
    if header_version in MODERN:
        # A modern header over a body without modern _meta: served as modern so that
        # check_meta answers the missing _meta with -32602 (S-LIFE-18).
        return header_version
    # S-HTTP-32: an invalid header is a 400; -32022 carries what would have worked.
    raise UnsupportedProtocolVersion.for_versions(
        (*LEGACY, *MODERN),
        header_version,
        f"Unsupported MCP-Protocol-Version header {header_version!r}",
    )


def check_removed(method: str, revision: str) -> None:
    """Refuse a method that ``revision`` removed (e.g. ``ping`` for 2026-07-28).

    Raises:
        MethodNotFound: the matrix says ``revision`` removed ``method``.
    """
    if removed("request", method, revision, "client"):
        why = f"Method not found: {method} is not part of MCP {revision} (removed)"
        raise MethodNotFound(why, {"method": method})
