"""Request bodies bounded per route: refused with 413 before they are buffered.

Routes whose bodies carry content on to an upstream (tool and prompt arguments, an
answer to a sampling question, any /mcp frame) take up to ``http.maxBody``; every other
route takes small JSON or none, up to ``http.maxSmallBody``.

Invariants:
- A declared ``Content-Length`` over the route's limit is answered 413 before the
  application runs, so not a byte of the body is read.
- A body without one (chunked) is counted as it is received; the application never
  receives a chunk that takes it over the limit, and the caller is answered 413 then.
- A refusal says ``Connection: close`` (the rest of the body is never read: the
  protocol drops it, ``_head_limits``) and names the limit and the setting that raises it,
  as a JSON-RPC error on /mcp and in the one /v1 error shape elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpx import wire
from mcpx.config import Settings
from mcpx.ops import OpError

__all__ = ["BodyLimits", "LimitBodies", "refusal"]

MCP_PATH: Final = "/mcp"
LARGE: Final = "http.maxBody"
SMALL: Final = "http.maxSmallBody"
# The routes whose bodies go on to an upstream; a question's answer may be a sampled
# message with an image in it.
_LARGE_PATHS: Final = frozenset({MCP_PATH, "/v1/call", "/v1/prompts/get"})
_ANSWER: Final = re.compile(r"/v1/questions/[^/]+/answer")


@dataclass(frozen=True)
class BodyLimits:
    """The largest body, in bytes, of the routes that forward content and of the rest."""

    large: int
    small: int

    @classmethod
    def configured(cls, settings: Settings) -> BodyLimits:
        return cls(int(settings[LARGE]), int(settings[SMALL]))

    def of(self, path: str) -> tuple[int, str]:
        """The limit of ``path`` and the setting that names it."""
        if path in _LARGE_PATHS or _ANSWER.fullmatch(path):
            return self.large, LARGE
        return self.small, SMALL


def refusal(status: int, path: str, code: str, message: str, details: dict[str, Any]) -> bytes:
    """The body of a refusal made before any handler ran, in the shape ``path`` speaks."""
    if path == MCP_PATH:
        # An HTTP refusal on /mcp still carries a JSON-RPC error, so that a client can show
        # why; no request was read, so it has no id.
        return wire.dumps(wire.error(None, wire.InvalidRequest(message, details)))
    return wire.dumps(OpError(status, code, message, details).body())


class _TooLarge(Exception):
    """The body crossed its limit while the application was reading it."""


class LimitBodies:
    """ASGI middleware: each request's body held to its route's limit."""

    def __init__(self, app: ASGIApp, *, limits: BodyLimits) -> None:
        self._app = app
        self._limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        limit, setting = self._limits.of(scope["path"])
        declared = _content_length(scope["headers"])
        if declared is not None:
            if declared > limit:
                await _refuse(scope, send, limit, setting)
                return
            # The parser holds the body to its declared length: nothing to count.
            await self._app(scope, receive, send)
            return
        await self._counted(scope, receive, send, limit, setting)

    async def _counted(
        self, scope: Scope, receive: Receive, send: Send, limit: int, setting: str
    ) -> None:
        received = 0
        started = False

        async def counting() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    if started:  # too late to answer: the caller is treated as gone
                        return {"type": "http.disconnect"}
                    raise _TooLarge
            return message

        async def watching(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, counting, watching)
        except _TooLarge:
            await _refuse(scope, send, limit, setting)


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the parser refuses such a request before it gets here
    return None


async def _refuse(scope: Scope, send: Send, limit: int, setting: str) -> None:
    path = scope["path"]
    message = (
        f"the request body is over {limit} bytes, the limit for {path}; send less, or "
        f"raise the setting {setting}"
    )
    body = refusal(413, path, "body_too_large", message, {"limit": limit, "setting": setting})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
