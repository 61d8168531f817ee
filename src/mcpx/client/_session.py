"""An upstream session: one connection spoken in the era the probe settled.

``Session`` is the face the pool and the operations see: any method (``request``), the
typed helpers (listings follow ``_pages``), notifications, and 2026-07-28 listen streams.
It composes three parts, each in its own module:

- ``Handshake`` (``_handshake``): settles the era and revision, which ``_probe`` drives
  through ``Session.handshake``; ``negotiated`` is what it settled.
- ``Requester`` (``_requests``): spells each request for that era (``_meta``, headers,
  ``input_required`` rounds, the retries the spec allows).
- ``Listeners`` (``_listen``): the ``subscriptions/listen`` streams and the
  notifications routed to them.

Invariants: one ``Handshake`` per session, shared by the other two parts, so a version
the server moves a request to is the session's from then on; until the handshake
settles, ``negotiated`` is None and ``revision`` raises.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpx import spec

from ._connection import Connection
from ._handler import QuestionHandler
from ._handshake import Handshake, Negotiated
from ._listen import Listeners
from ._pages import paginate
from ._pending import SentAhead
from ._requests import Requester

__all__ = ["Session"]


class Session:
    """Requests to one upstream, spelled for its era."""

    def __init__(
        self,
        conn: Connection,
        *,
        name: str,
        handler: QuestionHandler,
        http: bool,
        ask_rounds: int = 8,
        call_timeout: float | None = None,
        policy: spec.Policy | None = None,
    ) -> None:
        self.conn = conn
        self.name = name
        self.handler = handler
        self.http = http
        self.policy = policy or spec.Policy()
        self.handshake = Handshake(conn, name=name, handler=handler, http=http, policy=self.policy)
        self._requester = Requester(
            self.handshake, ask_rounds=ask_rounds, call_timeout=call_timeout
        )
        self._listeners = Listeners(self._requester)

    @property
    def negotiated(self) -> Negotiated | None:
        """What the handshake settled; None until it has."""
        return self.handshake.negotiated

    @property
    def revision(self) -> str:
        """The negotiated revision.

        Raises:
            UpstreamError: nothing is negotiated yet.
        """
        return self.handshake.revision

    @property
    def modern(self) -> bool:
        return self.handshake.modern

    @property
    def session_id(self) -> str | None:
        """The upstream's ``Mcp-Session-Id`` (a legacy HTTP session), None otherwise."""
        if self.handshake.negotiated is None or self.handshake.modern:
            return None
        http_session = self.conn.transport.http_session()
        return http_session.session_id if http_session is not None else None

    # -- requests ---------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        log_level: str | None = None,
        asked_by: str | int | None = None,
        host_capabilities: dict[str, Any] | None = None,
        relay_input: bool = False,
        as_task: bool = False,
    ) -> dict[str, Any]:
        """Send any method in the negotiated era; returns the final result.

        ``relay_input``: a modern upstream's ``input_required`` result is returned as
        it is (pass-through to a 2026-07-28 host, who answers and retries itself)
        instead of being answered here.

        ``as_task``: a ``tools/call`` is sent as an upstream task (core tasks to a
        legacy upstream, the tasks extension to a modern one) and followed to its end;
        ``timeout`` then bounds the whole task, each exchange ``pool.callTimeout``. The
        result is what the plain call would have given.

        ``host_capabilities`` (a 2026-07-28 host's, for its call) narrow what mcpx
        declares to a modern upstream in this request's ``_meta``.

        Raises:
            McpError: the upstream answered with a JSON-RPC error.
            UpstreamError: the call failed on our side (timeout, broken, too many rounds).
        """
        return await self._requester.request(
            method,
            params,
            timeout=timeout,
            log_level=log_level,
            asked_by=asked_by,
            host_capabilities=host_capabilities,
            relay_input=relay_input,
            as_task=as_task,
        )

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.conn.notify(method, params)

    def send_ahead(
        self,
        method: str,
        params: dict[str, Any],
        *,
        log_level: str | None = None,
        host_capabilities: dict[str, Any] | None = None,
    ) -> SentAhead | None:
        """``method`` written now for the ``request`` about to be made with the same
        arguments, as its first exchange would be written (``Requester.send_ahead``);
        None: nothing was."""
        return self._requester.send_ahead(method, params, log_level, host_capabilities)

    # -- typed helpers ------------------------------------------------------------------

    async def _paginate(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        request = functools.partial(self.request, timeout=timeout)
        return await paginate(request, method, key, server=self.name)

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool, following pagination; over modern HTTP, invalid
        ``x-mcp-header`` annotations drop the tool (with a warning)."""
        return await self._requester.list_tools(timeout=timeout)

    async def list_prompts(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        return await self._paginate("prompts/list", "prompts", timeout)

    async def list_resources(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        return await self._paginate("resources/list", "resources", timeout)

    async def list_resource_templates(
        self, *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        return await self._paginate("resources/templates/list", "resourceTemplates", timeout)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        if self.modern and self.http and not self._requester.knows_tool(name):
            await self.list_tools()  # learn its x-mcp-header parameters first
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, **kw: Any
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self.request("prompts/get", params, **kw)

    async def read_resource(self, uri: str, **kw: Any) -> dict[str, Any]:
        return await self.request("resources/read", {"uri": uri}, **kw)

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, str], **kw: Any
    ) -> dict[str, Any]:
        return await self.request("completion/complete", {"ref": ref, "argument": argument}, **kw)

    # -- notifications and listen streams -------------------------------------------------

    def route_notification(self, method: str, params: dict[str, Any]) -> bool:
        """Deliver a notification where it belongs, if anywhere: a task status to the
        call following that task (it wakes the poll), else to its listen stream."""
        if self._requester.task_wakes.route(method, params):
            return True
        return self._listeners.route(method, params)

    @asynccontextmanager
    async def listen(
        self, notifications: dict[str, Any], *, reopen: bool = True, buffer: int = 256
    ) -> AsyncIterator[anyio.abc.ObjectReceiveStream[dict[str, Any]]]:
        """A 2026-07-28 ``subscriptions/listen`` stream: the acknowledgement
        first, then the notifications it agreed to. A stream the server ends is
        opened again (``reopen``), after a growing pause, each time starting with
        a new acknowledgement. Leaving the context ends it (closing the stream over
        HTTP, ``notifications/cancelled`` on stdio).

        Raises:
            UpstreamError: the session is not modern.
        """
        async with self._listeners.open(notifications, reopen=reopen, buffer=buffer) as stream:
            yield stream
