"""mcpx's server side: what a host's frames mean, whatever transport carries them.

Transports (the daemon's ``/mcp`` and its stdio channel) read and write bytes, and call
in with frames, the HTTP headers and the connection's state; nothing here touches a
socket or knows HTTP beyond its header names. Errors raised become error frames here
(``McpError.http_status`` gives their 2026-07-28 HTTP status).

- ``HostSession``: one host's session (a stdio host, a legacy ``/mcp`` session): frames
  routed by kind, requests in flight and their cancellation, questions put to the host,
  slots and batches.
- ``dispatch``: one frame answered, the one place that judges a frame's revision
  (``judge``, ``stateless``), checks a 2026-07-28 request's ``_meta`` and mirrored
  headers, and scopes it (``Conn.for_request``, ``identity_for``); then the gateway
  surface (``_surface``) or pass-through answers it, through the operations.
- ``origin_allowed`` and ``host_allowed``: HTTP's checks before anything is parsed.
"""

from ._audience import Audience
from ._conn import META_CAPABILITIES, META_VERSION, Conn, Push, Subscriptions, Transport
from ._dispatch import INSTRUCTIONS, dispatch
from ._host_questions import HostQuestions
from ._host_session import Ask, HostSession, Notify
from ._identity import SESSION_META, identity_for
from ._in_flight import InFlight
from ._origin import host_allowed, origin_allowed
from ._revision import check_removed, judge, negotiate_initialize, stateless
from ._session_bounds import too_many_running
from ._slots import Slots
from ._stateless_checks import NAME_SOURCES, check_headers, check_meta
from ._subscriptions import release_all, subscribe

__all__ = [
    "INSTRUCTIONS",
    "META_CAPABILITIES",
    "META_VERSION",
    "NAME_SOURCES",
    "SESSION_META",
    "Ask",
    "Audience",
    "Conn",
    "HostQuestions",
    "HostSession",
    "InFlight",
    "Notify",
    "Push",
    "Slots",
    "Subscriptions",
    "Transport",
    "check_headers",
    "check_meta",
    "check_removed",
    "dispatch",
    "host_allowed",
    "identity_for",
    "judge",
    "negotiate_initialize",
    "origin_allowed",
    "release_all",
    "stateless",
    "subscribe",
    "too_many_running",
]
