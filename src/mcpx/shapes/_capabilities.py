"""The server capabilities mcpx declares, per revision and per connection.

Invariants (design record §2.2):
- never a capability the revision's schema lacks: every declaration passes
  ``capabilities_for``, which asks the matrix for each path;
- a declaration is a promise about the revision in force, and "can push" is a
  property of the connection: a connection that cannot deliver unsolicited
  messages declares neither logging nor any ``listChanged``;
- core ``tasks`` only where the core tasks capability exists (2025-11-25), the
  tasks extension only where ``extensions`` exists (2026-07-28), never both.
"""

from __future__ import annotations

from typing import Any

from mcpx import spec

from ._copy_on_write import JSON, capability_row, without

__all__ = ["capabilities_for", "server_capabilities"]

_SERVER = "server"


def server_capabilities(
    rev: str,
    *,
    passthrough: bool = False,
    logging: bool = True,
    can_push: bool = True,
    tasks: bool = False,
) -> JSON:
    """``ServerCapabilities`` mcpx declares to a peer on ``rev``.

    Args:
        passthrough: upstream tools are relayed as mcpx's own, so their
            ``tools/list_changed`` is relayed too; mcpx's own list is fixed.
        logging: mcpx relays upstream log messages: to a legacy client unsolicited
            (so only where they can be delivered), to a 2026-07-28 one on its
            request's stream when it named a ``logLevel`` (S-LOG-1: a server that
            emits them declares ``logging``).
        can_push: this connection can deliver unsolicited notifications.
        tasks: mcpx runs task-augmented calls.
    """
    caps: JSON = {
        # A change notification is only a promise if it can be delivered.
        "tools": {"listChanged": passthrough and can_push},
        "prompts": {"listChanged": False},
        "resources": {"subscribe": True, "listChanged": can_push},
        "completions": {},
    }
    if logging and (can_push or spec.era_of(rev) is spec.Era.MODERN):
        caps["logging"] = {}
    if tasks:
        caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        caps["extensions"] = {spec.TASKS_EXTENSION: {}}
    declared: JSON = capabilities_for(caps, rev)
    return declared


def _member(path: str, rev: str) -> bool:
    return spec.defined("capability", path, rev, _SERVER)


def _nested(name: str, value: Any, rev: str) -> Any:
    """A capability's settings minus sub-capabilities ``rev`` lacks.

    Only sub-keys with a matrix row are judged; the rest (tasks' ``requests``,
    experimental contents) are part of a capability ``rev`` defines.
    """
    if not isinstance(value, dict) or name in ("experimental", "extensions"):
        return value
    gone = [k for k in value if capability_row(f"{name}.{k}") and not _member(f"{name}.{k}", rev)]
    return without(value, gone)


def capabilities_for(caps: Any, rev: str) -> Any:
    """``caps`` (newest shape) minus every capability ``rev`` does not define.

    A top-level key with no matrix row is dropped too: the strict schemas close
    ``ServerCapabilities``, and mcpx sends conservatively.
    """
    if not isinstance(caps, dict):
        return caps
    out = without(caps, [k for k in caps if not _member(k, rev)])
    changed = {k: _nested(k, v, rev) for k, v in out.items()}
    if all(changed[k] is out[k] for k in out):
        return out
    return changed
