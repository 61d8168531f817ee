"""An upstream session: one connection spoken in the era the probe settled.

Legacy (2024-11-05 … 2025-11-25): ``initialize`` once, then plain requests.
Modern (2026-07-28): every request restates the version, the client's
capabilities and info in ``params._meta``; over HTTP the same facts travel as
headers; ``input_required`` results are answered through the question handler
and the request sent again, up to ``proto.askRounds`` rounds.

A modern request whose response stream broke before its answer (HTTP), or a
``tools/call`` refused with ``HeaderMismatch`` (HTTP, after listing the tools
again), is sent once more as a new request; listings follow ``_pages``.

Invariant: nothing here sends a field or a method the negotiated revision
lacks (send conservatively); a missing ``resultType`` from a legacy server
reads as ``complete``, and one mcpx does not recognize is an invalid response.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpx import __version__, spec, wire
from mcpx.shapes import InvalidHeaderAnnotation, ParamHeader, param_header_values, param_headers
from mcpx.transport import HttpStatusError, ResponseStreamBroken, TransportError

from ._connection import Connection
from ._errors import HandshakeFailed, UpstreamError
from ._handler import Asked, QuestionHandler, narrowed
from ._pages import paginate

__all__ = ["CLIENT_INFO", "Negotiated", "Session"]

log = logging.getLogger("mcpx.client")

CLIENT_INFO: Final = {"name": "mcpx", "version": __version__}
# Errors only a 2026-07-28 server answers with: they settle the era as modern.
MODERN_ERRORS: Final = frozenset({-32020, -32021, -32022})
# The only methods a server may answer with input_required.
ASKING_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
# The resultType values mcpx recognizes: the core ones. It advertises no extension, so
# an extension's value ("task") is as unknown as any other, and invalid (C-MSG-10).
RESULT_TYPES: Final = frozenset({"complete", "input_required"})
# A listen stream the server ends is reopened after a pause that doubles up to
# the maximum, and starts small again after a stream that lasted a while.
_REOPEN_FIRST: Final = 0.1
_REOPEN_MAX: Final = 30.0
_REOPEN_RESET: Final = 10.0


@dataclass
class Negotiated:
    """What the handshake or discovery settled."""

    era: spec.Era
    revision: str
    capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    source: str = "probe"  # probe | cache | forced
    transport: str = "stdio"  # stdio | http | sse

    def as_json(self) -> dict[str, Any]:
        return {
            "era": self.era.value,
            "revision": self.revision,
            "source": self.source,
            "transport": self.transport,
            "serverInfo": self.server_info,
            "capabilities": self.capabilities,
        }


def _first(retried: set[str], reason: str) -> bool:
    """Whether ``reason`` has not caused a retry yet; notes that it now has."""
    if reason in retried:
        return False
    retried.add(reason)
    return True


def _session_gone(cause: BaseException | None) -> bool:
    """A 404 on a known session, as the spec says; or the 400 "No valid session
    ID" that the Python SDK's servers answer instead (a recorded reading)."""
    if not isinstance(cause, HttpStatusError):
        return False
    if cause.status == 404:
        return True
    return cause.status == 400 and b"session" in cause.body.lower()


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
        self.ask_rounds = ask_rounds
        self.call_timeout = call_timeout
        self.policy = policy or spec.Policy()
        self.negotiated: Negotiated | None = None
        self._param_headers: dict[str, list[ParamHeader]] = {}
        self._listeners: dict[wire.RequestId, MemoryObjectSendStream[dict[str, Any]]] = {}

    @property
    def revision(self) -> str:
        if self.negotiated is None:
            raise UpstreamError(f"{self.name}: no revision negotiated yet")
        return self.negotiated.revision

    @property
    def modern(self) -> bool:
        return self.negotiated is not None and self.negotiated.era is spec.Era.MODERN

    # -- handshake and discovery ---------------------------------------------

    def legacy_offer(self) -> str:
        """The newest legacy revision the spec policy allows: its first legacy one."""
        return next(r for r in self.policy.precedence if r in spec.LEGACY)

    def initialize_params(self) -> dict[str, Any]:
        offer = self.legacy_offer()
        return {
            "protocolVersion": offer,
            "capabilities": self.handler.capabilities(offer),
            "clientInfo": CLIENT_INFO,
        }

    async def initialize(
        self, *, timeout: float | None = None, source: str = "probe"
    ) -> Negotiated:
        """The legacy handshake: initialize, check the answer, initialized.

        Raises:
            HandshakeFailed: the server answered a revision mcpx does not speak.
            McpError, UpstreamError: as for ``Connection.request``.
        """
        params = self.initialize_params()
        result = await self.conn.request("initialize", params, timeout=timeout, cancellable=False)
        return await self.settle_initialize(result, source)

    async def settle_initialize(self, result: dict[str, Any], source: str) -> Negotiated:
        """Adopt an initialize answer and send ``notifications/initialized``.

        Raises:
            HandshakeFailed: the answered revision is not one mcpx speaks.
        """
        answered = result.get("protocolVersion")
        if answered not in spec.LEGACY:
            raise HandshakeFailed(
                f"{self.name} answered initialize with protocol version {answered!r}; "
                f"mcpx speaks {', '.join(spec.LEGACY)} in the legacy era "
                f"(offered {self.legacy_offer()})"
            )
        self.negotiated = Negotiated(
            spec.Era.LEGACY,
            answered,
            capabilities=result.get("capabilities") or {},
            server_info=result.get("serverInfo") or {},
            instructions=result.get("instructions"),
            source=source,
            transport=self._transport_name(),
        )
        self.conn.cancel_by_closing = False
        if self.http and hasattr(self.conn.transport, "session_headers"):
            # The GET stream and the DELETE carry the version too (2025-06-18+).
            self.conn.transport.session_headers = self._legacy_headers()
        await self.conn.notify("notifications/initialized")
        return self.negotiated

    def discover_request(
        self, revision: str = spec.NEWEST
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The params and HTTP headers of a ``server/discover`` at ``revision``."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": self.handler.capabilities(revision),
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }
        headers = {}
        if self.http:
            headers = {wire.MCP_PROTOCOL_VERSION: revision, wire.MCP_METHOD: "server/discover"}
        return {"_meta": meta}, headers

    async def discover(self, *, timeout: float | None = None, source: str = "probe") -> Negotiated:
        """2026-07-28 discovery, moving to a version the server names if it
        refuses ours (-32022).

        Raises:
            McpError: the server answered with another error.
            HandshakeFailed: the answer is not a DiscoverResult, or shares no version.
        """
        revision = spec.NEWEST
        for _attempt in range(2):
            params, headers = self.discover_request(revision)
            try:
                result = await self.conn.request(
                    "server/discover", params, headers=headers, timeout=timeout
                )
            except wire.UnsupportedProtocolVersion as exc:
                revision = self._mutual_modern(exc.supported)
                continue
            return self.settle_discover(result, source)
        raise HandshakeFailed(f"{self.name} refused every version mcpx offered for server/discover")

    def settle_discover(self, result: dict[str, Any], source: str) -> Negotiated:
        """Adopt a DiscoverResult.

        Raises:
            HandshakeFailed: it is not a DiscoverResult, or shares no version.
        """
        versions = result.get("supportedVersions")
        if not isinstance(versions, list):
            raise HandshakeFailed(f"{self.name} answered server/discover with no supportedVersions")
        return self._settle_modern(versions, result, source)

    def _mutual_modern(self, versions: list[Any]) -> str:
        mutual: list[str] = [r for r in reversed(spec.MODERN) if r in versions]
        if not mutual:
            raise HandshakeFailed(
                f"{self.name} supports {', '.join(map(str, versions)) or 'no versions'}; "
                f"mcpx speaks {', '.join(spec.MODERN)} in the modern era"
            )
        return mutual[0]

    def _settle_modern(
        self, versions: list[Any], result: dict[str, Any], source: str
    ) -> Negotiated:
        revision = self._mutual_modern(versions)
        meta = result.get("_meta") or {}
        self.negotiated = Negotiated(
            spec.Era.MODERN,
            revision,
            capabilities=result.get("capabilities") or {},
            server_info=meta.get("io.modelcontextprotocol/serverInfo") or {},
            instructions=result.get("instructions"),
            source=source,
            transport=self._transport_name(),
        )
        self.conn.cancel_by_closing = self.http
        return self.negotiated

    def _transport_name(self) -> str:
        kind = self.conn.transport.describe().get("transport", "stdio")
        return str(kind)

    # -- requests -------------------------------------------------------------

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
    ) -> dict[str, Any]:
        """Send any method in the negotiated era; returns the final result.

        ``relay_input``: a modern upstream's ``input_required`` result is returned as
        it is (pass-through to a 2026-07-28 host, who answers and retries itself)
        instead of being answered here.

        ``host_capabilities`` (a 2026-07-28 host's, for its call) narrow what mcpx
        declares to a modern upstream in this request's ``_meta``.

        Raises:
            McpError: the upstream answered with a JSON-RPC error.
            UpstreamError: the call failed on our side (timeout, broken, too many rounds).
        """
        timeout = timeout if timeout is not None else self.call_timeout
        if not self.modern:
            return await self._legacy(method, params, timeout)
        body = dict(params or {})
        for _round in range(self.ask_rounds + 1):
            result = await self._send_modern(method, body, timeout, log_level, host_capabilities)
            if self._result_type(method, result) == "complete" or relay_input:
                return result
            if method not in ASKING_METHODS:
                raise UpstreamError(f"{self.name} answered {method} with input_required")
            body = await self._answer_round(method, params or {}, result, asked_by)
        raise UpstreamError(
            f"{self.name} was still asking for input after {self.ask_rounds} rounds"
        )

    def _result_type(self, method: str, result: dict[str, Any]) -> str:
        """A modern result's ``resultType``; absent reads as ``complete``, for servers
        written before it existed (C-MSG-9).

        Raises:
            UpstreamError: a value mcpx does not recognize: the response is invalid.
        """
        kind = result.get("resultType", "complete")
        if not (isinstance(kind, str) and kind in RESULT_TYPES):
            raise UpstreamError(
                f"{self.name} answered {method} with resultType {kind!r}, which mcpx does "
                f"not recognize (only {' or '.join(sorted(RESULT_TYPES))}): an invalid response"
            )
        return kind

    async def _legacy(
        self, method: str, params: dict[str, Any] | None, timeout: float | None
    ) -> dict[str, Any]:
        try:
            return await self.conn.request(
                method, params, headers=self._legacy_headers(), timeout=timeout
            )
        except UpstreamError as exc:
            if not (self.http and _session_gone(exc.__cause__)):
                raise
            if hasattr(self.conn.transport, "session_id"):
                self.conn.transport.session_id = None
        # The server forgot our session (a restart, an expiry): initialize
        # again, once, and repeat the request on the new session.
        log.info("%s: the server forgot our session; initializing again", self.name)
        source = self.negotiated.source if self.negotiated else "probe"
        await self.initialize(timeout=timeout, source=source)
        reopen = getattr(self.conn.transport, "open_listen_stream", None)
        if reopen is not None:
            try:
                await reopen()
            except TransportError as exc:
                log.info("%s offers no GET stream after re-initializing (%s)", self.name, exc)
        return await self.conn.request(
            method, params, headers=self._legacy_headers(), timeout=timeout
        )

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.conn.notify(method, params)

    async def _send_modern(
        self,
        method: str,
        body: dict[str, Any],
        timeout: float | None,
        log_level: str | None = None,
        host_capabilities: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One modern exchange, sent again (each time a new request with a new id) after
        a failure the spec answers with a retry; each kind of failure once.

        Raises:
            HandshakeFailed: the server refused the version it named as well.
            McpError, UpstreamError: as for ``Connection.request``, when no retry is due
                or the retry failed too.
        """
        retried: set[str] = set()
        while True:
            meta = self._meta(body.get("_meta"), log_level, host_capabilities)
            params = {**body, "_meta": meta}
            try:
                return await self.conn.request(
                    method, params, headers=self._modern_headers(method, params), timeout=timeout
                )
            except wire.UnsupportedProtocolVersion as exc:
                if not _first(retried, "version"):
                    raise HandshakeFailed(
                        f"{self.name} refused every version mcpx offered for {method}"
                    ) from exc
                self._switch_version(exc)
            except wire.HeaderMismatch:
                if not (method == "tools/call" and self.http and _first(retried, "headers")):
                    raise
                if not await self._refresh_param_headers(params.get("name"), timeout):
                    raise
            except UpstreamError as exc:
                # Only a response stream cut short: a timeout or a cancelled caller (its
                # own exception) never comes here, nor does a broken connection.
                lost = isinstance(exc.__cause__, ResponseStreamBroken)
                if not (lost and _first(retried, "lost")):
                    raise
                # C-HTTP-36: 2026-07-28 has no resumption, so the request is lost and
                # is sent again (a tools/call may then run twice: the spec's choice).
                log.warning("%s: %s; sending it again as a new request", self.name, exc)

    async def _refresh_param_headers(self, tool: Any, timeout: float | None) -> bool:
        """List the tools again after a ``HeaderMismatch`` (C-HTTP-34): the tool's
        ``x-mcp-header`` annotations may have changed. Whether it is still callable."""
        log.info("%s: header mismatch on tool %s; listing its tools again", self.name, tool)
        await self.list_tools(timeout=timeout)
        return tool in self._param_headers

    def _switch_version(self, exc: wire.UnsupportedProtocolVersion) -> None:
        revision = self._mutual_modern(exc.supported)
        if self.negotiated is None or revision == self.negotiated.revision:
            raise HandshakeFailed(
                f"{self.name} refused {revision}, which it also lists as supported"
            ) from exc
        self.negotiated.revision = revision

    def _meta(
        self, given: Any, log_level: str | None, host: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        meta = dict(given) if isinstance(given, dict) else {}
        meta["io.modelcontextprotocol/protocolVersion"] = self.revision
        ours = self.handler.capabilities(self.revision)
        meta["io.modelcontextprotocol/clientCapabilities"] = narrowed(ours, host)
        meta["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO
        if log_level is not None:
            meta["io.modelcontextprotocol/logLevel"] = log_level
        return meta

    def _modern_headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        if not self.http:
            return {}
        headers = {wire.MCP_PROTOCOL_VERSION: self.revision, wire.MCP_METHOD: method}
        key = wire.MCP_NAME_SOURCES.get(method)
        if key is not None and isinstance(params.get(key), str):
            headers[wire.MCP_NAME] = wire.encode_header_value(params[key])
        if method == "tools/call":
            marked = self._param_headers.get(params.get("name", ""), [])
            headers |= param_header_values(marked, params.get("arguments") or {})
        return headers

    def _legacy_headers(self) -> dict[str, str]:
        # The header exists from 2025-06-18; an older peer never defined it.
        if self.http and spec.at_or_after(self.revision, "2025-06-18"):
            return {wire.MCP_PROTOCOL_VERSION: self.revision}
        return {}

    async def _answer_round(
        self,
        method: str,
        original: dict[str, Any],
        result: dict[str, Any],
        asked_by: str | int | None,
    ) -> dict[str, Any]:
        asked = Asked(self.name, self.revision, asked_by)
        questions = result.get("inputRequests") or {}
        responses = {}
        throttled: list[wire.Throttled] = []
        for key, question in questions.items():
            q_method = question.get("method", "")
            try:
                responses[key] = await self.handler.answer(
                    q_method, question.get("params") or {}, asked
                )
            except wire.Throttled as exc:
                # Refused for now: left out of the retry, the server asks again for what
                # it still needs (mrtr, Error Handling), as a legacy server would hear
                # the refusal of that one question alone.
                log.info("%s: %s (%s) left unanswered: %s", self.name, q_method, key, exc)
                throttled.append(exc)
            except wire.McpError as exc:
                raise UpstreamError(
                    f"{self.name} asked {q_method}, which mcpx cannot answer: {exc.message}"
                ) from exc
        if throttled and not responses:
            # Nothing answered: another round would only ask the same again.
            raise UpstreamError(
                f"{self.name}'s questions were all refused: {throttled[0].message}"
            ) from throttled[0]
        body = {k: v for k, v in original.items() if k not in ("inputResponses", "requestState")}
        body["inputResponses"] = responses
        if "requestState" in result:
            body["requestState"] = result["requestState"]
        return body

    # -- typed helpers ----------------------------------------------------------

    async def _paginate(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        request = functools.partial(self.request, timeout=timeout)
        return await paginate(request, method, key, server=self.name)

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool, following pagination; over modern HTTP, invalid
        ``x-mcp-header`` annotations drop the tool (with a warning)."""
        tools = await self._paginate("tools/list", "tools", timeout)
        if not (self.modern and self.http):
            return tools
        kept, marked = [], {}
        for tool in tools:
            try:
                marked[tool["name"]] = param_headers(tool.get("inputSchema") or {})
            except InvalidHeaderAnnotation as exc:
                log.warning("%s: dropping tool %s: %s", self.name, tool.get("name"), exc)
                continue
            kept.append(tool)
        # Replaced whole: a tool gone or dropped since the last listing keeps no headers.
        self._param_headers = marked
        return kept

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
        if self.modern and self.http and name not in self._param_headers:
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

    # -- notifications and listen streams ---------------------------------------

    def route_notification(self, method: str, params: dict[str, Any]) -> bool:
        """Deliver a notification to the listen stream it belongs to, if any."""
        sub = (params.get("_meta") or {}).get("io.modelcontextprotocol/subscriptionId")
        stream = self._listeners.get(sub) if sub is not None else None
        if stream is None:
            return False
        if method in _REQUEST_SCOPED:
            # These belong on a request's own stream (C-SUB-9): credited to no call.
            log.info("%s sent %s on a listen stream; dropped", self.name, method)
            return True
        try:
            stream.send_nowait({"method": method, "params": params})
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.warning("%s: a listen stream is not being read; dropped %s", self.name, method)
        return True

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
        if not self.modern:
            raise UpstreamError(f"{self.name} is legacy: it has no subscriptions/listen")
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](buffer)

        async def hold() -> None:
            pause = _REOPEN_FIRST
            with send:
                while True:
                    opened = anyio.current_time()
                    await self._listen_once(notifications, send)
                    if not reopen or self.conn.broken is not None:
                        return
                    if anyio.current_time() - opened > _REOPEN_RESET:
                        pause = _REOPEN_FIRST
                    await anyio.sleep(pause)
                    pause = min(pause * 2, _REOPEN_MAX)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            try:
                async with receive:
                    yield receive
            finally:
                tg.cancel_scope.cancel()

    async def _listen_once(
        self, notifications: dict[str, Any], send: MemoryObjectSendStream[dict[str, Any]]
    ) -> None:
        rid = self.conn.reserve_id()
        self._listeners[rid] = send
        params = {"notifications": notifications, "_meta": self._meta(None, None)}
        headers = self._modern_headers("subscriptions/listen", params)
        try:
            await self.conn.request("subscriptions/listen", params, headers=headers, request_id=rid)
            log.info("%s ended a listen stream", self.name)
        except (UpstreamError, wire.McpError) as exc:
            log.info("%s: listen stream ended: %s", self.name, exc)
        finally:
            self._listeners.pop(rid, None)


OnNotification = Callable[[str, dict[str, Any]], None]

_REQUEST_SCOPED = frozenset({"notifications/progress", "notifications/message"})
