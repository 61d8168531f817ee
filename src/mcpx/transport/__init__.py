"""Upstream transports: moving JSON-RPC frames to and from one MCP server.

A transport knows no MCP semantics (no eras, no handshakes, no method meanings): it
carries frames and the headers the session asks for, and reports what went wrong in the
terms of ``_base`` (``RequestFailed`` for one request, ``TransportClosed`` for the end).

- ``open_stdio``: a child process, newline-delimited JSON on stdin and stdout.
- ``open_streamable_http``: Streamable HTTP (2025-03-26 to 2026-07-28), a POST per frame.
- ``open_legacy_sse``: the deprecated 2024-11-05 HTTP+SSE transport.
- ``http_client``: the ``httpx.AsyncClient`` the HTTP transports borrow (one per origin).
- ``recording_groups`` / ``reap_groups``: stdio upstreams' process groups kept on record,
  so that a daemon ends at start what a killed one left running.

Each ``open_*`` is an async context manager owning a task group: every background task
of the transport lives and dies inside it.
"""

from ._base import (
    MAX_FRAME_BYTES,
    HttpSession,
    HttpStatusError,
    Inbound,
    RequestFailed,
    ResponseStreamBroken,
    Transport,
    TransportClosed,
    TransportError,
)
from ._groups import reap_groups, recording_groups
from ._http import StreamableHttpTransport, open_streamable_http
from ._http_client import RedirectRefused, http_client, origin_of
from ._http_stream import AuthFailed, ExchangeFailed
from ._legacy_sse import LegacySseTransport, open_legacy_sse
from ._pipes import PipeReceiveStream, PipeSendStream, can_write_descriptors
from ._sse import EventTooLarge, SseEvent, SseParser
from ._stdio import StdioTransport, open_stdio

__all__ = [
    "MAX_FRAME_BYTES",
    "AuthFailed",
    "EventTooLarge",
    "ExchangeFailed",
    "HttpSession",
    "HttpStatusError",
    "Inbound",
    "LegacySseTransport",
    "PipeReceiveStream",
    "PipeSendStream",
    "RedirectRefused",
    "RequestFailed",
    "ResponseStreamBroken",
    "SseEvent",
    "SseParser",
    "StdioTransport",
    "StreamableHttpTransport",
    "Transport",
    "TransportClosed",
    "TransportError",
    "can_write_descriptors",
    "http_client",
    "open_legacy_sse",
    "open_stdio",
    "open_streamable_http",
    "origin_of",
    "reap_groups",
    "recording_groups",
]


def _conforms(
    stdio: StdioTransport, http: StreamableHttpTransport, sse: LegacySseTransport
) -> list[Transport]:
    # Never called: mypy checks here that each transport satisfies the protocol.
    return [stdio, http, sse]
