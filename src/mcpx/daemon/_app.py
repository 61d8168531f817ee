"""The daemon's ASGI application: routes generated from the operations table.

Each operation becomes one route. Input is gathered from the path, the query
string and the headers it names (coerced by each parameter's schema) and the
JSON body, validated against the operation's input schema, and handed to its
handler. Every error leaves in the one /v1 shape (``ops.OpError``); nothing
that the daemon can already tell is wrong reaches an upstream. A streamed
operation's errors are found before its stream starts; then it is sent as made.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any, Final

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpx import wire
from mcpx.config import BooleanKind, IntegerKind, InvalidValue
from mcpx.ops import (
    CLI_AGENT,
    METRICS_CONTENT_TYPE,
    OPERATIONS,
    PROFILE_HEADER,
    RUN_HEADER,
    Caller,
    OpContext,
    Operation,
    OpError,
    Status,
    check_input,
    openapi,
    profiled,
)

from ._console import console_routes
from ._guard import PRINCIPAL
from ._limits import BodyLimits, LimitBodies
from ._oauth_callback import oauth_callback
from ._post_answer import PostAnswer, json_line
from ._timers import Timers
from ._v1_spans import run_served

__all__ = ["build_app"]

log = logging.getLogger("mcpx.daemon")


def _json(body: Any, status: int = 200, *, server: Any = None) -> Response:
    if isinstance(body, Status):  # a handler that answers other than 200 (202: running)
        body, status = body.body, body.status
    try:
        data = wire.dumps(body)
    except wire.McpError as exc:  # an upstream's answer nested too deep to write
        body, status = _unsendable(server, exc), 502
        data = wire.dumps(body)
    return Response(data, status_code=status, media_type="application/json")


def _unsendable(server: Any, exc: wire.McpError) -> dict[str, Any]:
    """The 502 for an upstream's answer that cannot be encoded (``server`` answered it)."""
    who = server if isinstance(server, str) else "an upstream"
    message = f"{who}'s answer could not be sent: {exc.message}"
    return OpError(502, "upstream_error", message, {"server": server}).body()


# Query and header values are text; a parameter's schema type says how to read it.
# Strictly: "1.0000000000000002" is no boolean and "1e999" no number, and saying so
# beats guessing (the settings' own kinds read booleans and integers: one rule).
_BOOLEAN: Final = BooleanKind()
_INTEGER: Final = IntegerKind()
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _coerce(op: Operation, name: str, value: str, schema: dict[str, Any]) -> Any:
    """``value`` as the type its schema names.

    Raises:
        OpError: 400 invalid_input, naming the parameter, when it is not of that type.
    """
    kind = schema.get("type")
    if kind not in _TYPED:
        return value
    # Longer is no count a person means, and Python's int() refuses past 4,300 digits.
    if len(value) > _TYPED_LENGTH:
        detail = f"is {len(value)} characters long; a {kind} here takes at most {_TYPED_LENGTH}"
        raise OpError(400, "invalid_input", f"{op.name}: {name} {detail}", {"field": name})
    try:
        return _TYPED[kind](value)
    except InvalidValue as exc:
        raise OpError(
            400, "invalid_input", f"{op.name}: {name} {exc.detail}", {"field": name}
        ) from None


def _number(text: str) -> float:
    number = float(text) if _NUMBER.fullmatch(text) else math.nan
    if not math.isfinite(number):
        raise InvalidValue(text, "a finite number, written as JSON writes one")
    return number


_TYPED: Final[dict[str, Callable[[str], Any]]] = {
    "boolean": _BOOLEAN.parse,
    "integer": _INTEGER.parse,
    "number": _number,
}
_TYPED_LENGTH: Final = 64


async def _gather(op: Operation, request: Request) -> dict[str, Any]:
    args: dict[str, Any] = {}
    by_name = {p.name: p for p in op.params}
    for name, value in request.path_params.items():
        args[name] = value
    for name, value in request.query_params.items():
        param = by_name.get(name)
        if param is None or param.where != "query":
            raise OpError(
                400, "invalid_input", f"unknown query parameter {name!r}", {"field": name}
            )
        args[name] = _coerce(op, name, value, param.schema)
    for param in op.params:
        if param.where == "header" and (value := request.headers.get(param.name)) is not None:
            args[param.name] = _coerce(op, param.name, value, param.schema)
    if op.method == "POST":
        raw = await request.body()
        try:
            body = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            raise OpError(400, "bad_request", f"the body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise OpError(400, "bad_request", "the body must be a JSON object")
        args.update(body)
    return args


_NDJSON = "application/x-ndjson"


def _relayed(
    op: Operation, ctx: OpContext, args: dict[str, Any], request: Request, later: Timers
) -> ASGIApp:
    """The answer of a call whose caller takes an ndjson stream (``Accept`` names it).

    Plain JSON if nothing was relayed before the answer; otherwise ndjson lines, each
    ``{"notification": {method, params}}``, then the very body the JSON would have had,
    with ``"status"`` added when its HTTP status would not have been 200 (the stream's
    own status went out as 200 before the answer was known).
    """
    status = [200]
    level = request.headers.get("x-mcpx-log-level", "info")

    async def run(answer: PostAnswer) -> dict[str, Any]:
        def notify(method: str, params: dict[str, Any]) -> None:
            answer.emit({"notification": {"method": method, "params": params}})

        # The caller is told of progress under a token of its own, and of log lines at
        # its level (info unless X-Mcpx-Log-Level says otherwise).
        relaying = replace(ctx, notify=notify, caller_meta={"progressToken": "v1"}, log_level=level)
        try:
            # The same SERVER span as a plain JSON answer's (``run_served``).
            out = await run_served(op, relaying, args, request.headers)
        except OpError as exc:
            status[0], body = exc.status, exc.body()
        else:
            status[0], body = (out.status, out.body) if isinstance(out, Status) else (200, out)
        if status[0] != 200 and answer.streamed:
            return {**body, "status": status[0]}
        return body

    def unsendable(body: dict[str, Any], exc: wire.McpError) -> dict[str, Any]:
        status[0] = 502
        error = _unsendable(args.get("server"), exc)
        return {**error, "status": 502} if answering.streamed else error

    answering = PostAnswer(
        run,
        later=later,
        streams_ok=False,  # no keep-alive lines: ndjson has none to give
        keepalive=0,
        status_of=lambda _: status[0],
        stream_type=_NDJSON,
        encode=json_line,
        fallback=unsendable,
    )
    return answering


def _caller(ctx: OpContext, request: Request) -> OpContext:
    """``ctx`` naming its caller for the call log: the CLI (its User-Agent says so) or
    another /v1 client, over the unix socket or TCP."""
    agent = request.headers.get("user-agent")
    door = "cli" if agent and agent.startswith(CLI_AGENT) else "v1"
    if request.headers.get(RUN_HEADER):
        door = "exec"  # a script's call, through its run's socket
    # uvicorn gives a unix socket's scope no server, or one with no port.
    server = request.scope.get("server")
    transport = "unix" if server is None or server[1] is None else "http"
    return replace(ctx, caller=Caller(door, transport, agent))


def _route(op: Operation, ctx: Callable[[], OpContext], later: Timers) -> Route:
    async def endpoint(request: Request) -> Response:
        try:
            args = await _gather(op, request)
            check_input(op, args)
            # A caller may look as a host of one profile would (mcpx --profile P).
            here = _caller(profiled(ctx(), request.headers.get(PROFILE_HEADER)), request)
            if (principal := request.scope.get(PRINCIPAL)) is not None:
                here = replace(here, identity=principal)  # an authenticated caller's own scope
            if op.relays and _NDJSON in request.headers.get("accept", ""):
                return _relayed(op, here, args, request, later)  # type: ignore[return-value]
            out = await run_served(op, here, args, request.headers)
            if op.stream is not None:
                headers = {"Cache-Control": "no-store"}
                return StreamingResponse(out, media_type=op.stream, headers=headers)
            return _json(out, server=args.get("server"))
        except OpError as exc:
            return _json(exc.body(), exc.status)

    return Route(op.path, endpoint, methods=[op.method], name=op.name)


def build_app(
    ctx: Callable[[], OpContext],
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
    *,
    later: Timers,
    mcp: ASGIApp | None = None,
    limits: BodyLimits | None = None,
) -> Starlette:
    """The daemon's app; ``ctx`` returns the live context once the lifespan made it.

    ``later`` runs what a relayed call may need beside it (the lifespan runs it).
    ``mcp`` is the MCP endpoint, served at ``/mcp`` for every HTTP method.
    ``limits`` bounds each route's request body, in front of every route.
    """
    document = openapi(OPERATIONS)

    async def openapi_json(request: Request) -> Response:
        return _json(document)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _json(
            OpError(
                404, "unknown_operation", f"no route {request.method} {request.url.path}"
            ).body(),
            404,
        )

    async def wrong_method(request: Request, exc: Exception) -> Response:
        # The router's exception names the route's methods (RFC 9110: a 405 says Allow).
        allow = (getattr(exc, "headers", None) or {}).get("Allow", "")
        answer = _json(
            OpError(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed here; allowed: {allow or 'none'}",
                {"allow": [m.strip() for m in allow.split(",") if m.strip()]},
            ).body(),
            405,
        )
        answer.headers["Allow"] = allow
        return answer

    async def metrics(request: Request) -> Response:
        # Behind the same guard as /v1 (FrontDoor checks every route but /health).
        telemetry = ctx().telemetry
        if telemetry is None:
            return _json(OpError(404, "metrics_off", "this daemon keeps no metrics").body(), 404)
        return Response(telemetry.metrics_text(), media_type=METRICS_CONTENT_TYPE)

    routes = [_route(op, ctx, later) for op in OPERATIONS]
    routes.append(Route("/openapi.json", openapi_json, methods=["GET"]))
    routes.append(Route("/metrics", metrics, methods=["GET"]))
    routes.append(Route("/oauth/callback", oauth_callback(ctx), methods=["GET"]))
    routes.extend(console_routes())  # the web console: /ui, its files, and / linking to it
    middleware = [] if limits is None else [Middleware(LimitBodies, limits=limits)]
    if mcp is not None:
        # A Route, not a Mount: a Mount would answer "/mcp" with a redirect to "/mcp/".
        routes.append(Route("/mcp", mcp, name="mcp"))
        middleware.append(Middleware(_Shortcut, path="/mcp", endpoint=mcp))
    return Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: wrong_method},
    )


class _Shortcut:
    """Requests for one path go straight to its endpoint, past the router.

    The endpoint raises no HTTP exceptions for the exception middleware to answer, so
    only the router's walk is skipped: a path match against every /v1 route in turn,
    on the hottest path (/mcp). Errors still reach the server-error middleware.
    """

    def __init__(self, app: ASGIApp, *, path: str, endpoint: ASGIApp) -> None:
        self._app = app
        self._path = path
        self._endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Anything less plain (a root_path to strip) takes the router's way.
        if scope["type"] == "http" and scope["path"] == self._path and not scope.get("root_path"):
            await self._endpoint(scope, receive, send)
        else:
            await self._app(scope, receive, send)
