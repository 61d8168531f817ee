"""What every upstream transport offers the client session: frames out, frames in.

A transport moves JSON-RPC frames (dicts) and knows nothing of MCP semantics:
not eras, not handshakes, not which method means what. The session tells it
which HTTP headers a frame needs; the transport only carries them.

Inbound, ``receive()`` yields either a frame the peer sent or a
``RequestFailed``: the transport could not get an answer to one request (an
HTTP status without a JSON-RPC body, a stream cut mid-response). Everything
else that goes wrong ends the transport: ``receive()`` raises
``TransportClosed`` with the reason (the process exited with its status and
last stderr lines, the connection broke, a frame was over the size limit), and
every later ``send`` raises it too. A transport is never left hanging.

Streamable HTTP alone keeps a session with the server (``Mcp-Session-Id``, headers on
every request, a standalone GET stream): ``Transport.http_session()`` hands the client
session that capability, typed as ``HttpSession``, or None where the transport has none.

Exceptions:

    TransportError                 anything a transport reports
    ├── TransportClosed            the transport is over; the reason says why
    │   └── ResponseStreamBroken   one request's response stream ended or broke before
    │                              its answer (carried by RequestFailed)
    └── HttpStatusError            one HTTP exchange failed (carried by RequestFailed)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcpx.wire import RequestId

__all__ = [
    "MAX_FRAME_BYTES",
    "HttpSession",
    "HttpStatusError",
    "Inbound",
    "RequestFailed",
    "ResponseStreamBroken",
    "Transport",
    "TransportClosed",
    "TransportError",
]

# A frame larger than this is refused and ends the transport: a peer that
# sends one is broken or hostile, and buffering it would cost the daemon.
MAX_FRAME_BYTES = 64 * 1024 * 1024


class TransportError(Exception):
    """Something a transport reports; never an MCP protocol error."""


class TransportClosed(TransportError):
    """The transport is over (closed by us, or broken by the peer)."""


class ResponseStreamBroken(TransportClosed):
    """The server took the request and began its answer (JSON or SSE), but the body
    ended or broke before the response: the request is lost, the transport is not.

    Without resumption (2026-07-28) the session must send it again as a new request.
    A subclass of ``TransportClosed`` because that is what this case always raised.
    """


class HttpStatusError(TransportError):
    """An HTTP exchange answered with a status and no JSON-RPC frame.

    ``body`` is kept as received, for the session to read. The message quotes only
    ``shown``: the body as it may be shown, its credentials hidden by the transport (an
    upstream's error page may echo the request's URL or headers). Without it the
    message quotes nothing of the body.
    """

    def __init__(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        shown: str = "",
    ):
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        snippet = shown[:200].strip()
        super().__init__(f"HTTP {status}" + (f": {snippet}" if snippet else ""))


@dataclass(frozen=True)
class RequestFailed:
    """No answer will come for ``request_id``; ``error`` says why."""

    request_id: RequestId
    error: TransportError


Inbound = dict[str, Any] | RequestFailed


class Transport(Protocol):
    """A bidirectional frame channel to one upstream server."""

    async def send(self, frame: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        """Send one frame; for HTTP, ``headers`` go on the request that carries it.

        Raises:
            TransportClosed: the transport is over.
        """
        ...

    async def receive(self) -> Inbound:
        """The next frame from the peer, or a failed request.

        Raises:
            TransportClosed: the transport is over; nothing more will arrive.
        """
        ...

    def route(self, route: Callable[[Inbound], None]) -> None:
        """From now on hand each frame (or failed request) to ``route`` as it arrives, in
        order, in the task that read it, instead of through ``receive``; ``receive`` then
        only raises the end. Spares the consumer waking up for every frame."""
        ...

    async def abort(self, request_id: RequestId) -> bool:
        """Close the response stream that carries ``request_id``.

        On Streamable HTTP (2026-07-28) closing the stream is how a client
        cancels. Returns False where the transport has no such stream (stdio,
        a JSON response already read): the session then cancels in-band.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """What to show for this connection: pid or url, transport name."""
        ...

    def http_session(self) -> HttpSession | None:
        """The Streamable HTTP session this transport keeps; None for stdio and the
        legacy HTTP+SSE transport, which have none."""
        ...


class HttpSession(Protocol):
    """What a Streamable HTTP transport keeps for the session above it: the session id,
    the headers every request carries (its own GET and DELETE included) and the
    standalone GET stream. The client session sets them once the era is settled."""

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` sent on every request; None forgets it."""
        ...

    @session_id.setter
    def session_id(self, value: str | None) -> None: ...

    @property
    def session_headers(self) -> dict[str, str]:
        """Headers for every request; per-frame headers given to ``send`` override them."""
        ...

    @session_headers.setter
    def session_headers(self, value: Mapping[str, str]) -> None: ...

    async def open_listen_stream(self) -> bool:
        """Open the standalone GET stream; False when the server offers none.

        Raises:
            TransportError: the transport is closed, or the server refused the GET.
        """
        ...
