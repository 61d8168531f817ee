"""The sans-IO core of mcpx's server side: judging, validating and scoping requests.

Nothing here does I/O or imports an async or HTTP library; transports call in with
frames, header mappings and connection state, and turn the errors raised into replies
(``McpError.http_status`` gives the 2026-07-28 HTTP status).

Order for one incoming request: ``host_allowed`` and ``origin_allowed`` (HTTP, before
parsing), ``judge`` the revision, ``check_removed``; for 2026-07-28 also ``check_meta``
and, on HTTP, ``check_headers``; then ``Conn.for_request`` and ``identity_for`` give the
state and scope it is served under.

``dispatch`` puts these together for one frame and answers it with the gateway surface
(``_surface``): it does no I/O itself, only awaits the operations' handlers it is given.
"""

from ._asking import Questions
from ._audience import Audience
from ._conn import META_CAPABILITIES, META_VERSION, Conn, Push, Subscriptions, Transport
from ._dispatch import INSTRUCTIONS, dispatch
from ._identity import SESSION_META, identity_for
from ._modern import NAME_SOURCES, check_headers, check_meta
from ._origin import host_allowed, origin_allowed
from ._passthrough import tool_schema
from ._revision import check_removed, judge, negotiate_initialize
from ._subscriptions import release_all, subscribe

__all__ = [
    "INSTRUCTIONS",
    "META_CAPABILITIES",
    "META_VERSION",
    "NAME_SOURCES",
    "SESSION_META",
    "Audience",
    "Conn",
    "Push",
    "Questions",
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
    "subscribe",
    "tool_schema",
]
