"""How large one tool call's arguments may be, judged before anything is sent upstream.

A tools/call carries its arguments in one frame to one upstream. Arguments larger than
``pool.maxArguments`` (bytes of compact JSON) are refused here, once for every surface
(/v1/call, /mcp, stdio hosts, mcpx_call), rather than written to an upstream that may
not read them and waited on until the call's timeout.

Invariants:
- The setting never exceeds what the transports carry in one frame (the registry bounds
  it), so a call that passes here fits a frame.
- ``ArgumentsTooLarge`` is an ``OpError`` (413 on /v1); the MCP surfaces answer it as
  invalid params (-32602) with the same message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcpx import wire
from mcpx.config import Settings

from ._errors import OpError

__all__ = ["ArgumentsTooLarge", "check_arguments_size"]

SETTING: Final = "pool.maxArguments"


class ArgumentsTooLarge(OpError):
    """A tool call's arguments are longer than ``pool.maxArguments``; nothing was sent."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            413,
            "arguments_too_large",
            f"the tool call's arguments are {size} bytes of JSON, over the {limit}-byte "
            f"limit; send less, or raise the setting {SETTING}",
            {"size": size, "limit": limit, "setting": SETTING},
        )


def check_arguments_size(settings: Settings, method: str, params: Mapping[str, Any]) -> None:
    """Refuse a tools/call whose arguments are over the limit; anything else passes.

    Raises:
        ArgumentsTooLarge: they are; nothing has been sent.
    """
    if method != "tools/call":
        return
    arguments = params.get("arguments")
    if not arguments:
        return
    limit = int(settings[SETTING])
    # Measured as they will travel: compact JSON, the way the transports encode frames.
    size = len(wire.dumps(arguments))
    if size > limit:
        raise ArgumentsTooLarge(size, limit)
