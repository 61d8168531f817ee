"""The daemon's event stream: what happens upstream and in the pool, numbered, kept for
replay, and delivered to subscribers (``/v1/events``, ``mcpx events``).

``EventBus`` is the core: synchronous ``publish`` (called from hooks), bounded history,
filtered subscriptions with replay and gaps. ``sse_stream`` writes a subscription as
server-sent events; ``publish_notification`` maps upstream notifications to events.
``frames_log`` writes the ``log.frames`` trace of the frames sent to hosts.
"""

from ._bus import GAP, Event, EventBus, EventFilter, Subscription, same_uri
from ._frames_log import FrameTrace, frames_log
from ._sse import encode, sse_stream
from ._upstream import publish_notification

__all__ = [
    "GAP",
    "Event",
    "EventBus",
    "EventFilter",
    "FrameTrace",
    "Subscription",
    "encode",
    "frames_log",
    "publish_notification",
    "same_uri",
    "sse_stream",
]
