"""What the upstream client reports to its callers.

A JSON-RPC error the upstream answered with is the wire's ``McpError`` with
``remote=True``: the caller relays it as that error. Everything else is an
``UpstreamError``, which names the server and says what went wrong on our
side of the call:

    UpstreamError                 the upstream could not answer
    ├── UpstreamBroken            the connection is over (exit, framing, violation)
    ├── UpstreamTimeout           no answer within the call's budget
    └── HandshakeFailed           no revision both sides speak, or a bad handshake

A message never holds a credential: it quotes transport errors, whose URLs and quoted
texts the transport already redacted (``mcpx.config.Redactor``), and never a configured
url, header or auth value.
"""

from __future__ import annotations

__all__ = ["HandshakeFailed", "UpstreamBroken", "UpstreamError", "UpstreamTimeout"]


class UpstreamError(Exception):
    """The upstream could not answer; the message names the server."""


class UpstreamBroken(UpstreamError):
    """The connection to the upstream is over; every call on it fails."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer within the call's budget."""


class HandshakeFailed(UpstreamError):
    """The upstream and mcpx could not agree on a revision."""
