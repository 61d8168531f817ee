"""What an upstream's notifications become on the event bus.

Invariants:

- ``notifications/message`` is ``message``, ``notifications/progress`` is ``progress``,
  ``notifications/<kind>/list_changed`` is ``list.changed`` with ``{kind}``, and
  ``notifications/resources/updated`` is ``resource.updated`` with its ``uri``; each
  tagged with its server. Any other notification is not an event.
- ``_meta`` is protocol plumbing (subscription ids, tokens) and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._bus import Event, EventBus

__all__ = ["publish_notification"]

_KINDS: Final = {
    "notifications/message": "message",
    "notifications/progress": "progress",
    "notifications/resources/updated": "resource.updated",
}


def publish_notification(
    bus: EventBus, server: str, method: str, params: Mapping[str, Any]
) -> Event | None:
    """Publish ``method`` from ``server`` if it is one the bus carries."""
    data = {k: v for k, v in params.items() if k != "_meta"}
    if method.endswith("/list_changed"):
        # notifications/tools/list_changed -> tools
        kind = method.removeprefix("notifications/").removesuffix("/list_changed")
        return bus.publish("list.changed", {"kind": kind}, server=server)
    event_kind = _KINDS.get(method)
    if event_kind is None:
        return None
    uri = data.get("uri") if event_kind == "resource.updated" else None
    return bus.publish(event_kind, data, server=server, uri=uri if isinstance(uri, str) else None)
