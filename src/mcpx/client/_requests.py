"""Sending one request in the era the handshake settled, until its final result.

Legacy: a plain request (with ``MCP-Protocol-Version`` over HTTP from 2025-06-18); a
server that forgot our HTTP session is initialized again, once, and the request repeated.
Modern (2026-07-28): every request restates the version, the client's capabilities and
info in ``params._meta``; over HTTP the same facts travel as headers (and a tool's
``x-mcp-header`` parameters, learned by listing the tools); ``input_required`` results
are answered through the question handler and the request sent again, up to
``proto.askRounds`` rounds.

A modern request whose response stream broke before its answer (HTTP), a version the
server refused (-32022, moving to one it names), or a ``tools/call`` refused with
``HeaderMismatch`` (HTTP, after listing the tools again) is sent once more as a new
request; each kind of failure once.

A ``tools/call`` asked for ``as_task``, or refused by a modern upstream with -32021 naming
the tasks extension (which it offers), is sent as an upstream task (``_task_calls``).

Invariant: nothing here sends a field or a method the negotiated revision lacks (send
conservatively); a missing ``resultType`` from a legacy server reads as ``complete``,
and one mcpx does not recognize is an invalid response.
"""

from __future__ import annotations

import functools
import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Protocol

from mcpx import wire
from mcpx.shapes import InvalidHeaderAnnotation, ParamHeader, param_header_values, param_headers
from mcpx.transport import HttpStatusError, ResponseStreamBroken

from ._errors import HandshakeFailed, UpstreamError
from ._handler import QuestionOrigin, narrowed
from ._handshake import CLIENT_INFO, Handshake
from ._pages import paginate
from ._pending import SentAhead
from ._task_calls import TaskWakes, call_as_task, wants_task_extension

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["REQUEST_WATCH", "RequestWatch", "Requester"]


class RequestWatch(Protocol):
    """Told of each request a call sends upstream (its id) and each retry: the caller's
    telemetry, set in ``REQUEST_WATCH`` for the call (the client knows none of it)."""

    def sent(self, method: str, request_id: wire.RequestId) -> None: ...

    def retried(self, method: str, reason: str) -> None: ...


# The watch of the call running in this task; None (the default) costs one lookup.
REQUEST_WATCH: ContextVar[RequestWatch | None] = ContextVar("mcpx_request_watch", default=None)


def _reserved(conn: Connection, method: str) -> wire.RequestId | None:
    """An id for the request, told to the call's watch first; None without a watch."""
    watch = REQUEST_WATCH.get()
    if watch is None:
        return None
    rid = conn.reserve_id()
    watch.sent(method, rid)
    return rid


def _retried(method: str, reason: str) -> None:
    watch = REQUEST_WATCH.get()
    if watch is not None:
        watch.retried(method, reason)


log = logging.getLogger("mcpx.client")

# The only methods a server may answer with input_required.
ASKING_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
# The resultType values mcpx recognizes: the core ones. It advertises no extension, so
# an extension's value ("task") is as unknown as any other, and invalid (C-MSG-10).
RESULT_TYPES: Final = frozenset({"complete", "input_required"})


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


class Requester:
    """Any method sent to one upstream, spelled for its negotiated era."""

    def __init__(
        self, handshake: Handshake, *, ask_rounds: int, call_timeout: float | None
    ) -> None:
        self.handshake = handshake
        self.conn = handshake.conn
        self.name = handshake.name
        self.ask_rounds = ask_rounds
        self.call_timeout = call_timeout
        # A tool's x-mcp-header parameters, from the latest listing (modern HTTP only).
        self._param_headers: dict[str, list[ParamHeader]] = {}
        # The upstream tasks a call is following now, woken by their status notifications.
        self.task_wakes = TaskWakes()

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
        """Send ``method``; returns the final result (see ``Session.request``). No
        ``timeout``: the call timeout. ``as_task``: a ``tools/call`` sent as an upstream
        task and followed to its end (``_task_calls``); ``timeout`` bounds all of it.

        Raises:
            McpError: the upstream answered with a JSON-RPC error.
            UpstreamError: the call failed on our side (timeout, broken, too many rounds).
        """
        timeout = timeout if timeout is not None else self.call_timeout
        if as_task and method == "tools/call":
            return await call_as_task(
                self, params or {}, timeout, log_level, asked_by, host_capabilities
            )
        if not self.handshake.modern:
            return await self._legacy(method, params, timeout)
        try:
            return await self._modern(
                method, params, timeout, log_level, asked_by, host_capabilities, relay_input
            )
        except wire.MissingRequiredClientCapability as exc:
            # A 2026-07-28 tool that only runs as a task says so this way (its Tool has
            # no execution): sent again as one, where the upstream offers the extension.
            if not (method == "tools/call" and wants_task_extension(self.handshake, exc)):
                raise
        log.info("%s: %s needs the tasks extension; sending it as a task", self.name, method)
        return await call_as_task(
            self, params or {}, timeout, log_level, asked_by, host_capabilities
        )

    async def _modern(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        log_level: str | None,
        asked_by: str | int | None,
        host_capabilities: dict[str, Any] | None,
        relay_input: bool,
    ) -> dict[str, Any]:
        body = dict(params or {})
        for _round in range(self.ask_rounds + 1):
            result = await self.send_modern(method, body, timeout, log_level, host_capabilities)
            if self.result_type(method, result) == "complete" or relay_input:
                return result
            if method not in ASKING_METHODS:
                raise UpstreamError(f"{self.name} answered {method} with input_required")
            body = await self.next_round(params or {}, result, asked_by)
        raise UpstreamError(
            f"{self.name} was still asking for input after {self.ask_rounds} rounds"
        )

    def meta(
        self,
        given: Any,
        log_level: str | None,
        host: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A modern request's ``_meta``: ``given`` with the version, the client's
        capabilities (narrowed to ``host``'s, plus ``extensions`` declared for this
        request alone) and info restated."""
        revision = self.handshake.revision
        meta = dict(given) if isinstance(given, dict) else {}
        meta["io.modelcontextprotocol/protocolVersion"] = revision
        ours = narrowed(self.handshake.handler.capabilities(revision), host)
        if extensions:
            ours = {**ours, "extensions": {**(ours.get("extensions") or {}), **extensions}}
        meta["io.modelcontextprotocol/clientCapabilities"] = ours
        meta["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO
        if log_level is not None:
            meta["io.modelcontextprotocol/logLevel"] = log_level
        return meta

    def send_ahead(
        self,
        method: str,
        params: dict[str, Any],
        log_level: str | None,
        host_capabilities: dict[str, Any] | None,
    ) -> SentAhead | None:
        """The first exchange of ``request(method, params, log_level=…,
        host_capabilities=…)`` written now, spelled as that exchange spells it
        (``Connection.send_ahead``), for the request to take; None: nothing was. Over
        stdio only: an HTTP request's headers and retries are the call's own."""
        if self.handshake.http:
            return None
        if not self.handshake.modern:
            return self.conn.send_ahead(method, params)
        meta = self.meta(params.get("_meta"), log_level, host_capabilities)
        return self.conn.send_ahead(method, params, {**params, "_meta": meta})

    def modern_headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        """A modern request's HTTP headers (none off HTTP): version, method, the name it
        acts on, and a tool's ``x-mcp-header`` parameters."""
        if not self.handshake.http:
            return {}
        headers = {wire.MCP_PROTOCOL_VERSION: self.handshake.revision, wire.MCP_METHOD: method}
        key = wire.MCP_NAME_SOURCES.get(method)
        if key is not None and isinstance(params.get(key), str):
            headers[wire.MCP_NAME] = wire.encode_header_value(params[key])
        if method == "tools/call":
            marked = self._param_headers.get(params.get("name", ""), [])
            headers |= param_header_values(marked, params.get("arguments") or {})
        return headers

    def knows_tool(self, name: str) -> bool:
        """Whether the latest listing gave ``name``'s ``x-mcp-header`` parameters."""
        return name in self._param_headers

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool, following pagination; over modern HTTP, invalid
        ``x-mcp-header`` annotations drop the tool (with a warning)."""
        request = functools.partial(self.request, timeout=timeout)
        tools = await paginate(request, "tools/list", "tools", server=self.name)
        if not (self.handshake.modern and self.handshake.http):
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

    # -- legacy ------------------------------------------------------------------------

    async def _legacy(
        self, method: str, params: dict[str, Any] | None, timeout: float | None
    ) -> dict[str, Any]:
        try:
            return await self.conn.request(
                method,
                params,
                headers=self.handshake.legacy_headers(),
                timeout=timeout,
                request_id=_reserved(self.conn, method),
            )
        except UpstreamError as exc:
            if not (self.handshake.http and _session_gone(exc.__cause__)):
                raise
        # The server forgot our session (a restart, an expiry): initialize
        # again, once, and repeat the request on the new session.
        log.info("%s: the server forgot our session; initializing again", self.name)
        _retried(method, "session_gone")
        await self.handshake.initialize_again(timeout=timeout)
        return await self.conn.request(
            method,
            params,
            headers=self.handshake.legacy_headers(),
            timeout=timeout,
            request_id=_reserved(self.conn, method),
        )

    # -- modern ------------------------------------------------------------------------

    def result_type(
        self, method: str, result: dict[str, Any], known: frozenset[str] = RESULT_TYPES
    ) -> str:
        """A modern result's ``resultType``; absent reads as ``complete``, for servers
        written before it existed (C-MSG-9). ``known``: the values this request may be
        answered with (``task`` too where mcpx declared the tasks extension).

        Raises:
            UpstreamError: a value mcpx does not recognize: the response is invalid.
        """
        kind = result.get("resultType", "complete")
        if not (isinstance(kind, str) and kind in known):
            raise UpstreamError(
                f"{self.name} answered {method} with resultType {kind!r}, which mcpx does "
                f"not recognize (only {' or '.join(sorted(known))}): an invalid response"
            )
        return kind

    async def send_modern(
        self,
        method: str,
        body: dict[str, Any],
        timeout: float | None,
        log_level: str | None = None,
        host_capabilities: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
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
            meta = self.meta(body.get("_meta"), log_level, host_capabilities, extensions)
            params = {**body, "_meta": meta}
            try:
                return await self.conn.request(
                    method,
                    params,
                    headers=self.modern_headers(method, params),
                    timeout=timeout,
                    request_id=_reserved(self.conn, method),
                )
            except wire.UnsupportedProtocolVersion as exc:
                if not _first(retried, "version"):
                    raise HandshakeFailed(
                        f"{self.name} refused every version mcpx offered for {method}"
                    ) from exc
                self.handshake.adopt_version(exc)
                _retried(method, "version")
            except wire.HeaderMismatch:
                if not (
                    method == "tools/call" and self.handshake.http and _first(retried, "headers")
                ):
                    raise
                if not await self._refresh_param_headers(params.get("name"), timeout):
                    raise
                _retried(method, "headers")
            except UpstreamError as exc:
                # Only a response stream cut short: a timeout or a cancelled caller (its
                # own exception) never comes here, nor does a broken connection.
                lost = isinstance(exc.__cause__, ResponseStreamBroken)
                if not (lost and _first(retried, "lost")):
                    raise
                # C-HTTP-36: 2026-07-28 has no resumption, so the request is lost and
                # is sent again (a tools/call may then run twice: the spec's choice).
                log.warning("%s: %s; sending it again as a new request", self.name, exc)
                _retried(method, "lost")

    async def _refresh_param_headers(self, tool: Any, timeout: float | None) -> bool:
        """List the tools again after a ``HeaderMismatch`` (C-HTTP-34): the tool's
        ``x-mcp-header`` annotations may have changed. Whether it is still callable."""
        log.info("%s: header mismatch on tool %s; listing its tools again", self.name, tool)
        await self.list_tools(timeout=timeout)
        return tool in self._param_headers

    async def next_round(
        self, original: dict[str, Any], result: dict[str, Any], asked_by: str | int | None
    ) -> dict[str, Any]:
        """The next round's params: ``original`` with the answers to the questions of an
        ``input_required`` ``result`` and its ``requestState``.

        Raises:
            UpstreamError: a question mcpx cannot answer, or every one refused for now.
        """
        responses = await self.answers(result.get("inputRequests") or {}, asked_by)
        body = {k: v for k, v in original.items() if k not in ("inputResponses", "requestState")}
        body["inputResponses"] = responses
        if "requestState" in result:
            body["requestState"] = result["requestState"]
        return body

    async def answers(
        self, questions: dict[str, Any], asked_by: str | int | None
    ) -> dict[str, Any]:
        """The ``inputResponses`` to a modern upstream's ``inputRequests``, each answered
        through the question handler; one refused for now is left out.

        Raises:
            UpstreamError: a question mcpx cannot answer, or every one refused for now.
        """
        asked = QuestionOrigin(self.name, self.handshake.revision, asked_by)
        responses = {}
        throttled: list[wire.Throttled] = []
        handler = self.handshake.handler
        for key, question in questions.items():
            q_method = question.get("method", "")
            try:
                responses[key] = await handler.answer(q_method, question.get("params") or {}, asked)
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
        return responses
