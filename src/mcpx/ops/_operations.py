"""The first /v1 operations and their handlers, declared once in ``OPERATIONS``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

from mcpx import spec, wire

from ._errors import OpError
from ._relay import more_verbose
from ._search import rank_tools
from ._table import Cli, Operation, Param
from ._tool_input import check_arguments

if TYPE_CHECKING:
    from ._context import OpContext

# The handlers import the pool, the client and jsonschema when they first run:
# the CLI reads this table to build its commands and must start fast.

__all__ = ["OPERATIONS", "TRACE_KEYS", "by_name", "request_for_caller"]

# W3C trace context in _meta: passed upstream unchanged.
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")

T = TypeVar("T")

_SERVER = Param("server", {"type": "string"}, "Configured server name", required=True)
_SERVER_FILTER = Param("server", {"type": "string"}, "Only this server", where="query")
_REFRESH = Param("refresh", {"type": "boolean"}, "List again from the upstreams", where="query")
_QUESTIONS_HEADER: Final = "Mcpx-Questions"
_TIMEOUT = Param(
    "timeout", {"type": "number", "exclusiveMinimum": 0}, "Seconds; only lowers pool.callTimeout"
)


async def _upstream(server: str, call: Awaitable[T]) -> T:
    """Translate the pool's and the upstream's failures into /v1 errors, once."""
    try:
        return await call
    except Exception as exc:
        translated = _translated(server, exc)
        if translated is None:
            raise
        raise translated from exc


def _translated(server: str, exc: Exception) -> OpError | None:
    # Imported on a failure only: this runs on every call, and importing costs.
    from mcpx.client import UpstreamError, UpstreamTimeout
    from mcpx.pool import PoolFull, UnknownServer

    if isinstance(exc, UnknownServer):
        return OpError(404, "unknown_server", str(exc), {"known": exc.known})
    if isinstance(exc, UpstreamTimeout):
        return OpError(504, "upstream_timeout", str(exc), {"server": server})
    if isinstance(exc, PoolFull):
        return OpError(503, "pool_full", str(exc), {"server": server})
    if isinstance(exc, UpstreamError):
        return OpError(502, "upstream_error", str(exc), {"server": server})
    if isinstance(exc, wire.McpError):
        return OpError(
            502,
            "upstream_error",
            f"{server} answered with an error: {exc.message}",
            {"server": server, "jsonrpc": exc.to_error()},
        )
    return None


async def health(ctx: OpContext, args: dict[str, Any]) -> Any:
    return {"ok": True, "pid": ctx.pid, "version": ctx.version, "uptime": ctx.uptime()}


async def protocol(ctx: OpContext, args: dict[str, Any]) -> Any:
    return spec.protocol_json(ctx.settings.policy())


async def servers_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    out = []
    for name, server in sorted(ctx.pool.servers.items()):
        known = ctx.catalogue.known(name)
        out.append(
            {
                "name": name,
                "transport": server.transport,
                "command": [server.command, *server.args] if server.command else None,
                "url": server.url,
                "scope": server.scope,
                "protocol": server.protocol or ctx.settings["upstream.protocol"],
                "instances": [i.status() for i in ctx.pool.instances(name)],
                # Resource URIs subscribed upstream for hosts (counted across them).
                "subscriptions": sorted(ctx.pool.watches.wanted(name)),
                "catalogue": {
                    "tools": len(known.get("tools") or []),
                    "era": known.get("era"),
                    "revision": known.get("revision"),
                    "error": known.get("error"),
                }
                if known
                else None,
            }
        )
    return {"servers": out}


async def _catalogued(ctx: OpContext, args: dict[str, Any]) -> dict[str, dict[str, Any]]:
    server = args.get("server")
    return await _upstream(
        server or "*", ctx.catalogue.entries(server, refresh=bool(args.get("refresh")))
    )


async def tools_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    entries = await _catalogued(ctx, args)
    items = [(s, t) for s, e in entries.items() for t in e.get("tools") or []]
    if args.get("search"):
        items = rank_tools(items, args["search"])
    errors = {s: e["error"] for s, e in entries.items() if e.get("error")}
    return {"tools": [{"server": s, **t} for s, t in items], "errors": errors}


async def _tool(ctx: OpContext, server: str, name: str) -> dict[str, Any] | None:
    entry = await _upstream(server, ctx.catalogue.entry(server))
    if entry.get("error"):
        return None  # unknown: let the upstream say (it may have come back)
    tools: dict[str, dict[str, Any]] = {t["name"]: t for t in entry.get("tools") or []}
    if name not in tools:
        raise OpError(
            404,
            "unknown_tool",
            f"{server} has no tool named {name!r}; it has: {', '.join(sorted(tools)) or 'none'}",
            {"server": server, "known": sorted(tools)},
        )
    return tools[name]


async def tools_describe(ctx: OpContext, args: dict[str, Any]) -> Any:
    tool = await _tool(ctx, args["server"], args["tool"])
    if tool is None:
        raise OpError(502, "upstream_error", f"{args['server']} could not be listed", {})
    return {"server": args["server"], **tool}


async def request_for_caller(
    ctx: OpContext,
    server: str,
    method: str,
    params: dict[str, Any],
    timeout: float | None = None,
    *,
    relay_input: bool = False,
) -> dict[str, Any]:
    """One upstream request on the caller's behalf: in its scope, narrowed to its
    capabilities, with its trace context; the upstream's progress and log messages go
    back to it while the request runs (all absent for /v1 callers). ``relay_input``
    hands a modern upstream's ``input_required`` back as it is."""
    caller = ctx.caller_meta or {}
    meta: dict[str, Any] = {k: caller[k] for k in TRACE_KEYS if k in caller}
    meta |= params.get("_meta") or {}
    level = more_verbose(ctx.log_level, str(ctx.settings["log.level"]))
    config = ctx.pool.servers.get(server)
    scope = ctx.pool.scope_key(config, ctx.identity) if config is not None else ""
    with (
        ctx.relay.call(server, ctx.notify, caller, ctx.log_level, ctx.asker, scope) as token,
        _reported(ctx, server, method, params) as outcome,
    ):
        if token is not None:
            meta["progressToken"] = token
        sent = {**params, "_meta": meta} if meta else params
        result = await ctx.pool.request(
            server,
            method,
            sent,
            identity=ctx.identity,
            timeout=timeout,
            host_capabilities=ctx.host_capabilities,
            log_level=level,
            relay_input=relay_input,
        )
        outcome["isError"] = bool(result.get("isError"))
        return result


@contextmanager
def _reported(
    ctx: OpContext, server: str, method: str, params: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """A ``call.finished`` event when a tools/call ends, however it ends; the caller
    fills in the outcome (an error is assumed until it does)."""
    outcome: dict[str, Any] = {}
    started = time.monotonic()
    try:
        yield outcome
    except BaseException as exc:
        outcome["error"] = str(exc) or type(exc).__name__
        raise
    finally:
        if method == "tools/call" and ctx.events is not None:
            ms = round((time.monotonic() - started) * 1000, 1)
            data = {"tool": params.get("name"), "ms": ms, **outcome}
            ctx.events.publish("call.finished", data, server=server)


async def call(ctx: OpContext, args: dict[str, Any]) -> Any:
    server, name = args["server"], args["tool"]
    arguments = args.get("arguments") or {}
    tool = await _tool(ctx, server, name)
    if tool is not None:
        check_arguments(server, tool, arguments)
    params = {"name": name, "arguments": arguments}

    def run(c: OpContext) -> Awaitable[dict[str, Any]]:
        return request_for_caller(c, server, "tools/call", params, timeout=args.get("timeout"))

    if args.get(_QUESTIONS_HEADER) == "return" and ctx.tasks is not None:
        from ._detached import returning_call

        return await returning_call(
            ctx, server, f"tools/call {name}", run, lambda call: _upstream(server, call)
        )
    return await _upstream(server, run(ctx))


async def _listing(ctx: OpContext, args: dict[str, Any], key: str, out: str) -> Any:
    """One kind of catalogued item across servers, each tagged with its server;
    a server whose listing failed is named under ``errors`` instead."""
    entries = await _catalogued(ctx, args)
    found = [{"server": s, **item} for s, e in entries.items() for item in e.get(key) or []]
    return {out: found, "errors": {s: e["error"] for s, e in entries.items() if e.get("error")}}


async def prompts_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "prompts", "prompts")


async def prompts_get(ctx: OpContext, args: dict[str, Any]) -> Any:
    params: dict[str, Any] = {"name": args["name"]}
    if args.get("arguments"):
        params["arguments"] = args["arguments"]
    await _check_prompt_arguments(ctx, args["server"], args["name"], args.get("arguments") or {})
    get = request_for_caller(ctx, args["server"], "prompts/get", params)
    return await _upstream(args["server"], get)


async def _check_prompt_arguments(
    ctx: OpContext, server: str, name: str, given: dict[str, Any]
) -> None:
    """A prompt's required arguments are there before it is asked for (S-PROMPT-6): the
    upstreams' own answers to a missing one differ (an error code 0, -32603 …)."""
    entry = await _upstream(server, ctx.catalogue.entry(server))
    prompt = next((p for p in entry.get("prompts") or [] if p.get("name") == name), None)
    if prompt is None:
        return  # unlisted, or the listing failed: the upstream says
    missing = [
        a["name"]
        for a in prompt.get("arguments") or []
        if isinstance(a, dict) and a.get("required") and a.get("name") not in given
    ]
    if missing:
        raise OpError(
            400,
            "invalid_input",
            f"prompt {server}/{name} needs the argument(s) {', '.join(map(str, missing))}",
            {"field": f"arguments.{missing[0]}", "missing": missing},
        )


async def resources_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "resources", "resources")


async def resources_templates(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _listing(ctx, args, "templates", "resourceTemplates")


async def resources_read(ctx: OpContext, args: dict[str, Any]) -> Any:
    params = {"uri": args["uri"]}
    return await _upstream(
        args["server"],
        request_for_caller(ctx, args["server"], "resources/read", params),
    )


async def complete(ctx: OpContext, args: dict[str, Any]) -> Any:
    from ._completion import declares_completions, from_catalogue

    server = args["server"]
    entry = await _upstream(server, ctx.catalogue.entry(server))
    if not declares_completions(entry):
        return from_catalogue(server, entry, args["ref"], args["argument"])
    params = {"ref": args["ref"], "argument": args["argument"]}
    out = await _upstream(
        server,
        request_for_caller(ctx, server, "completion/complete", params),
    )
    return {**out, "source": "server"}


async def events(ctx: OpContext, args: dict[str, Any]) -> Any:
    from mcpx.events import EventFilter, sse_stream

    if ctx.events is None:
        raise OpError(503, "unavailable", "this daemon has no event stream")
    # A reconnecting EventSource sends its last id; it is newer than the URL's since.
    since = args.get("Last-Event-ID", args.get("since"))
    keepalive = float(ctx.settings["transport.sseKeepAlive"])
    named = args.get("uri")
    if not named:
        wanted = EventFilter.of(args.get("kind"), args.get("server"), None)
        # Subscribed now, before the response starts: nothing published meanwhile is lost.
        return sse_stream(ctx.events.subscribe(wanted, since=since), keepalive)
    # A stream naming a URI watches it for its lifetime: resource.watching says first
    # whether updates will come (and why not), and closing the stream releases it.
    target = await _watch_target(ctx, args.get("server"), named)
    if isinstance(target, str):
        server, uri, reason = args.get("server"), named, target
    else:
        (server, uri), reason = target, None
    # Events carry the upstream's own names: filtered by those.
    sub = ctx.events.subscribe(EventFilter.of(args.get("kind"), server, uri), since=since)
    if not isinstance(target, str):
        reason = await ctx.pool.watches.watch(*target)
    data = {"uri": named, "subscribed": reason is None, "reason": reason}
    ctx.events.publish("resource.watching", data, server=server, uri=uri)
    stream = sse_stream(sub, keepalive)
    if isinstance(target, str) or reason is not None:
        return stream
    return _released(stream, lambda: ctx.pool.watches.unwatch(*target))


async def _watch_target(ctx: OpContext, server: str | None, uri: str) -> tuple[str, str] | str:
    """(server, upstream URI) an events stream watches, or why there is none."""
    if uri.startswith("mcpx://"):
        from mcpx.server import upstream_uri

        try:
            return await upstream_uri(ctx, uri, spec.LEGACY[-1])
        except wire.McpError as exc:
            return exc.message
    if server is None:
        return "name its server (server=…) or use its mcpx:// URI"
    if server not in ctx.pool.servers:
        return f"no server named {server!r}"
    return server, uri


async def _released(
    stream: AsyncIterator[bytes], release: Callable[[], None]
) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            yield chunk
    finally:
        release()


def _broker(ctx: OpContext) -> Any:
    if ctx.broker is None:
        raise OpError(503, "unavailable", "this daemon keeps no questions")
    return ctx.broker


async def questions_list(ctx: OpContext, args: dict[str, Any]) -> Any:
    return {"questions": [q.as_json() for q in _broker(ctx).pending()]}


async def questions_show(ctx: OpContext, args: dict[str, Any]) -> Any:
    found = _broker(ctx).get(args["id"])
    if found is None:
        raise OpError(404, "unknown_question", f"no question {args['id']!r}")
    return found.as_json()


async def _settle(ctx: OpContext, qid: str, how: str, content: Any = None) -> Any:
    from mcpx.questions import QuestionClosed

    broker = _broker(ctx)
    try:
        if how == "answer":
            done = broker.answer(qid, content if isinstance(content, dict) else {})
        else:
            done = getattr(broker, how)(qid)
    except QuestionClosed as exc:
        raise OpError(409, "question_closed", exc.message) from exc
    except wire.McpError as exc:  # the answer does not match the requested schema
        details = exc.data if isinstance(exc.data, dict) else {}
        raise OpError(400, "invalid_answer", exc.message, details) from exc
    return done.as_json()


async def questions_answer(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "answer", args.get("content"))


async def questions_decline(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "decline")


async def questions_cancel(ctx: OpContext, args: dict[str, Any]) -> Any:
    return await _settle(ctx, args["id"], "cancel")


async def tasks_show(ctx: OpContext, args: dict[str, Any]) -> Any:
    from ._detached import task_show

    return await task_show(ctx, args)


async def tasks_result(ctx: OpContext, args: dict[str, Any]) -> Any:
    from ._detached import task_result

    return await task_result(ctx, args)


_OBJ = {"type": "object"}
_TASK = Param("id", {"type": "string"}, "Task id", required=True, where="path")
_QID = Param("id", {"type": "string"}, "Question id", required=True, where="path")

# One event on /v1/events, as its data line carries it.
_EVENT = {
    "type": "object",
    "properties": {
        "seq": {"type": "integer", "minimum": 1, "description": "Absent on a gap"},
        "kind": {"type": "string"},
        "ts": {"type": "number", "description": "Unix time, seconds"},
        "server": {"type": "string"},
        "uri": {"type": "string"},
        "data": {"type": "object"},
    },
    "required": ["kind", "ts", "data"],
}
_SEQ = {"type": "integer", "minimum": 0}

OPERATIONS: tuple[Operation, ...] = (
    Operation("health", "GET", "/health", "Is the daemon up", health),
    Operation(
        "protocol",
        "GET",
        "/v1/protocol",
        "The revision matrix and the effective spec policy",
        protocol,
    ),
    Operation(
        "servers.list",
        "GET",
        "/v1/servers",
        "Configured servers with each instance's state",
        servers_list,
        cli=Cli("servers", view="servers"),
    ),
    Operation(
        "tools.list",
        "GET",
        "/v1/tools",
        "Tools across servers; search ranks by words",
        tools_list,
        params=(
            Param("server", {"type": "string"}, "Only this server", where="query"),
            Param("search", {"type": "string"}, "Words to search for", where="query"),
            _REFRESH,
        ),
        cli=Cli("tools", positional=("server",), view="tools"),
    ),
    Operation(
        "tools.describe",
        "GET",
        "/v1/tools/{server}/{tool}",
        "One tool, with its input schema",
        tools_describe,
        params=(
            Param("server", {"type": "string"}, "Server name", where="path", required=True),
            Param("tool", {"type": "string"}, "Tool name", where="path", required=True),
        ),
        cli=Cli("describe", positional=("server", "tool")),
    ),
    Operation(
        "call",
        "POST",
        "/v1/call",
        "Call a tool on a server",
        call,
        params=(
            _SERVER,
            Param("tool", {"type": "string"}, "Tool name", required=True),
            Param("arguments", _OBJ, "Tool arguments"),
            _TIMEOUT,
            Param(
                _QUESTIONS_HEADER,
                {"type": "string"},
                "return: on a question nobody present can answer, answer 202 at once with "
                "it and the call's task id (the call goes on); anything else (wait, the "
                "default): wait for the answer",
                where="header",
            ),
        ),
        cli=Cli("call", positional=("server", "tool"), view="call"),
        relays=True,
    ),
    Operation(
        "prompts.list",
        "GET",
        "/v1/prompts",
        "Prompts across servers",
        prompts_list,
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("prompts", positional=("server",), view="prompts"),
    ),
    Operation(
        "prompts.get",
        "POST",
        "/v1/prompts/get",
        "Get a prompt",
        prompts_get,
        params=(
            _SERVER,
            Param("name", {"type": "string"}, "Prompt name", required=True),
            Param(
                "arguments",
                {"type": "object", "additionalProperties": {"type": "string"}},
                "Prompt arguments",
            ),
        ),
        cli=Cli("prompt", positional=("server", "name")),
    ),
    Operation(
        "resources.list",
        "GET",
        "/v1/resources",
        "Resources across servers",
        resources_list,
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("resources", positional=("server",), view="resources"),
    ),
    Operation(
        "resources.templates",
        "GET",
        "/v1/resources/templates",
        "Resource templates",
        resources_templates,
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("templates", positional=("server",)),
    ),
    Operation(
        "resources.read",
        "POST",
        "/v1/resources/read",
        "Read a resource",
        resources_read,
        params=(_SERVER, Param("uri", {"type": "string"}, "Resource URI", required=True)),
        cli=Cli("read", positional=("server", "uri"), view="read"),
    ),
    Operation(
        "complete",
        "POST",
        "/v1/complete",
        "Argument completion: from the server, or from mcpx's catalogue (source says which)",
        complete,
        params=(
            _SERVER,
            Param("ref", _OBJ, "A ref/prompt or ref/resource reference", required=True),
            Param("argument", _OBJ, "{name, value}", required=True),
        ),
    ),
    Operation(
        "questions.list",
        "GET",
        "/v1/questions",
        "Questions upstreams asked that wait for an answer (the broker)",
        questions_list,
    ),
    Operation(
        "questions.show",
        "GET",
        "/v1/questions/{id}",
        "One question, with the time it has left",
        questions_show,
        params=(_QID,),
    ),
    Operation(
        "questions.answer",
        "POST",
        "/v1/questions/{id}/answer",
        "Answer a question (checked against what it asked for)",
        questions_answer,
        params=(_QID, Param("content", _OBJ, "The answer", required=True)),
    ),
    Operation(
        "questions.decline",
        "POST",
        "/v1/questions/{id}/decline",
        "Decline a question",
        questions_decline,
        params=(_QID,),
    ),
    Operation(
        "questions.cancel",
        "POST",
        "/v1/questions/{id}/cancel",
        "Dismiss a question without choosing",
        questions_cancel,
        params=(_QID,),
    ),
    Operation(
        "tasks.show",
        "GET",
        "/v1/tasks/{id}",
        "A call that outlived its request: its status, and its outcome once it ended",
        tasks_show,
        params=(_TASK,),
    ),
    Operation(
        "tasks.result",
        "GET",
        "/v1/tasks/{id}/result",
        "A task's result as /v1/call would have given it; 202 if it is still running",
        tasks_result,
        params=(
            _TASK,
            Param(
                "wait",
                {"type": "number", "minimum": 0},
                "Seconds to wait for the end (default 60)",
                where="query",
            ),
        ),
    ),
    Operation(
        "events",
        "GET",
        "/v1/events",
        "Follow the daemon's events (server-sent events); since or Last-Event-ID replays",
        events,
        params=(
            Param("kind", {"type": "string"}, "Only these kinds (comma-separated)", where="query"),
            Param("server", {"type": "string"}, "Only this server's events", where="query"),
            Param("uri", {"type": "string"}, "Only events about this resource URI", where="query"),
            Param("since", _SEQ, "Replay retained events after this seq (0: all)", where="query"),
            Param("Last-Event-ID", _SEQ, "As since; wins over it (reconnects)", where="header"),
        ),
        output=_EVENT,
        cli=Cli("events", view="events"),
        stream="text/event-stream",
    ),
)

_BY_NAME = {op.name: op for op in OPERATIONS}


def by_name(name: str) -> Operation:
    return _BY_NAME[name]
