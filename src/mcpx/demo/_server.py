"""Dispatch: one decoded request in, one response frame out, in whichever era it came.

``Server`` owns the connection's legacy ``Session`` and a ``send`` function (the stdio
layer's, which writes one whole line at a time). It judges each request through
``_eras.read_call``, refuses what the revision in force lacks, runs the handler and spells
the result for that revision with ``_eras.finish``.

Invariants:

- ``request`` returns a response frame for every request, a result or an error; it raises
  only cancellation. An unexpected failure in a handler is logged to stderr and answered
  with -32603, so no input can crash the server.
- A request's notifications (progress, log messages, a listen acknowledgement) go through
  ``send`` before its response is returned, so they always precede it on the wire.
- The server never sends a JSON-RPC request: 2026-07-28 servers may not, and the demo needs
  nothing from a client.
- State changes (``initialize``, ``logging/setLevel``) are named in ``INLINE`` so the stdio
  layer runs them in arrival order; everything else may run concurrently.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from mcpx import spec, wire

from ._catalog import (
    complete,
    get_prompt,
    list_prompts,
    list_resources,
    list_templates,
    no_cursor,
    read_resource,
)
from ._eras import (
    LOG_LEVELS,
    NAME,
    SUBSCRIPTION_ID,
    Call,
    Session,
    capabilities,
    finish,
    gate,
    read_call,
    server_info,
)
from ._tools import call_tool, list_tools

__all__ = ["INLINE", "INSTRUCTIONS", "STANDING", "Send", "Server"]

log = logging.getLogger("mcpx.demo")

Send = Callable[[wire.Frame], Awaitable[None]]
Handler = Callable[[Call], Awaitable[dict[str, Any]]]

# Requests that change what later requests see: run in arrival order, never concurrently.
INLINE: Final = frozenset({"initialize", "logging/setLevel"})
# Requests that stay open until cancelled: at end of input they are ended, not awaited.
STANDING: Final = frozenset({"subscriptions/listen"})

INSTRUCTIONS: Final = (
    "mcpx-demo is the example server bundled with mcpx, running because no upstream server "
    "is configured. Tools: echo (returns text), add (sums two numbers), slow (waits, "
    "reporting progress; cancellable), now (current UTC time). Prompt: hello. Resources: "
    "demo://readme and the template demo://greeting/{name}."
)

_LISTS: Final[dict[str, Callable[[str], dict[str, Any]]]] = {
    "tools/list": list_tools,
    "prompts/list": list_prompts,
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
}
_LOOKUPS: Final[dict[str, Callable[[dict[str, Any], str], dict[str, Any]]]] = {
    "prompts/get": get_prompt,
    "resources/read": read_resource,
}


class Server:
    """The MCP server of one connection, both eras."""

    def __init__(self, send: Send) -> None:
        self.session = Session()
        self._send = send
        self._handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": self._empty,
            "server/discover": self._discover,
            "subscriptions/listen": self._listen,
            "logging/setLevel": self._set_level,
            # Nothing here ever changes, so a subscription is agreed to and never fires.
            "resources/subscribe": self._subscription,
            "resources/unsubscribe": self._subscription,
            "tools/call": self._call_tool,
            "completion/complete": self._complete,
        }

    async def request(
        self, request_id: wire.RequestId, method: str, params: dict[str, Any]
    ) -> wire.Frame:
        """The response frame to one request (a result or an error)."""
        try:
            call = read_call(request_id, method, params, self.session)
            gate(call)
            return wire.result(request_id, finish(call, await self._answer(call)))
        except wire.McpError as err:
            return wire.error(request_id, err)
        except Exception:  # the one boundary where any failure becomes an answer
            log.exception("internal error answering %s", method)
            return wire.error(request_id, wire.InternalError(f"internal error in {method}"))

    def notification(self, method: str, params: dict[str, Any]) -> None:
        """A client notification other than ``notifications/cancelled`` (the stdio layer's)."""
        # notifications/initialized needs nothing: requests are served before it as well.
        # Others (roots or progress from a client) have nothing here to act on.
        log.debug("notification %s", method)

    async def _answer(self, call: Call) -> dict[str, Any]:
        if call.method in _LISTS:
            no_cursor(call.params)
            return _LISTS[call.method](call.revision)
        if call.method in _LOOKUPS:
            return _LOOKUPS[call.method](call.params, call.revision)
        handler = self._handlers.get(call.method)
        if handler is None:
            raise wire.MethodNotFound(f"method not found: {call.method[:100]}")
        return await handler(call)

    async def _initialize(self, call: Call) -> dict[str, Any]:
        offered = call.params.get("protocolVersion")
        if not isinstance(offered, str):
            raise wire.InvalidParams("initialize needs protocolVersion (a string)")
        # The client's revision if it is a legacy one, else the newest legacy revision.
        revision = offered if offered in spec.LEGACY else spec.LEGACY[-1]
        self.session.revision = revision
        return {
            "protocolVersion": revision,
            "capabilities": capabilities(revision),
            "serverInfo": server_info(revision),
            "instructions": INSTRUCTIONS,
        }

    async def _empty(self, call: Call) -> dict[str, Any]:
        return {}

    async def _discover(self, call: Call) -> dict[str, Any]:
        return {
            "supportedVersions": list(spec.MODERN),
            "capabilities": capabilities(call.revision),
            "instructions": INSTRUCTIONS,
        }

    async def _listen(self, call: Call) -> dict[str, Any]:
        if not isinstance(call.params.get("notifications"), dict):
            raise wire.InvalidParams("subscriptions/listen needs notifications (an object)")
        # No list or resource here ever changes, so the server honours none of the requested
        # types; the acknowledgement says so rather than promising what will never come.
        params = {"notifications": {}, "_meta": {SUBSCRIPTION_ID: call.request_id}}
        await self._send(wire.notification("notifications/subscriptions/acknowledged", params))
        await anyio.sleep_forever()
        return {}  # not reached: a listen ends by the client's cancel or by end of input

    async def _set_level(self, call: Call) -> dict[str, Any]:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise wire.InvalidParams(f"level must be one of {', '.join(LOG_LEVELS)}")
        self.session.log_level = str(level)
        return {}

    async def _subscription(self, call: Call) -> dict[str, Any]:
        if not isinstance(call.params.get("uri"), str):
            raise wire.InvalidParams(f"{call.method} needs a uri (a string)")
        return {}

    async def _call_tool(self, call: Call) -> dict[str, Any]:
        return await call_tool(call.params, call.revision, _Reporter(call, self._send))

    async def _complete(self, call: Call) -> dict[str, Any]:
        return complete(call.params)


class _Reporter:
    """A running tool's progress and log messages, sent only as the request asked."""

    def __init__(self, call: Call, send: Send) -> None:
        self._call = call
        self._send = send

    async def progress(self, progress: float, total: float, message: str) -> None:
        token = self._call.progress_token
        if token is None:  # no progressToken, no progress notifications
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress, "total": total}
        if spec.defined("field", "ProgressNotification.params.message", self._call.revision):
            params["message"] = message
        await self._send(wire.notification("notifications/progress", params))

    async def log(self, level: str, data: str) -> None:
        wanted = self._call.log_level
        # No level asked for (setLevel in legacy, _meta logLevel in 2026-07-28): no messages.
        if wanted is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        params = {"level": level, "logger": NAME, "data": data}
        await self._send(wire.notification("notifications/message", params))
