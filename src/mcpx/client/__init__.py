"""mcpx as a client of one upstream MCP server, in whichever era it speaks.

``open_session`` connects (probing the era, with a persistent cache), and the
``Session`` it yields sends any method (``request``) or the typed helpers.
Questions the upstream asks (legacy requests, modern ``input_required``)
all go to one ``QuestionHandler``.

OAuth-protected HTTP upstreams (``mcpx.oauth``): ``open_session(..., oauth_store=,
authorizer=, user=)``. When a person must sign in, ``open_session`` raises
``mcpx.oauth.LoginNeeded`` itself; a later call fails with an ``UpstreamError`` whose
cause carries it: ``login_needed(exc)`` finds it in either case.
"""

from ._auth import AuthError, AuthParts, apply_auth, login_needed
from ._connection import Connection, Unanswered, open_connection
from ._era_cache import EraCache, Remembered, config_key
from ._errors import HandshakeFailed, UpstreamBroken, UpstreamError, UpstreamTimeout
from ._handler import DeclineEverything, QuestionHandler, QuestionOrigin
from ._handshake import CLIENT_INFO, Handshake, Negotiated
from ._open import Hooks, OnUpstreamNotification, open_session
from ._pending import SENT_AHEAD, SentAhead
from ._probe import ExitedDuringProbe, NeedsLegacySse, Preference, negotiate
from ._requests import REQUEST_WATCH, RequestWatch
from ._session import Session
from ._task_calls import offers_tasks

__all__ = [
    "CLIENT_INFO",
    "REQUEST_WATCH",
    "SENT_AHEAD",
    "AuthError",
    "AuthParts",
    "Connection",
    "DeclineEverything",
    "EraCache",
    "ExitedDuringProbe",
    "Handshake",
    "HandshakeFailed",
    "Hooks",
    "NeedsLegacySse",
    "Negotiated",
    "OnUpstreamNotification",
    "Preference",
    "QuestionHandler",
    "QuestionOrigin",
    "Remembered",
    "RequestWatch",
    "SentAhead",
    "Session",
    "Unanswered",
    "UpstreamBroken",
    "UpstreamError",
    "UpstreamTimeout",
    "apply_auth",
    "config_key",
    "login_needed",
    "negotiate",
    "offers_tasks",
    "open_connection",
    "open_session",
]
