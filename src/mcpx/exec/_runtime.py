"""How a script's generated client (``mcpx_tools``) calls tools: through the daemon.

This file is copied verbatim into every generated package as ``mcpx_tools/_runtime.py``
and runs in the script's sandbox, where only the Python runtime is there: it imports
the standard library and nothing else.

One call is one ``POST /v1/call`` on its own connection to the unix socket named by
``MCPX_RUN_SOCKET``, carrying the run id (``MCPX_RUN_ID``) as ``X-Mcpx-Run`` so that a
question any call asks is the run's. No timeout here: the daemon bounds every call.

What a call returns (the tool's result, unwrapped):

- ``structuredContent`` when the result has it, as Python data;
- else one text block: the JSON it holds when it parses as JSON, else the text (``str``);
- else one block of another kind: that block (a ``dict``); several blocks (or none): the
  list of each unwrapped the same way.

The value is an instance of ``RawStr``, ``RawDict``, ``RawList``, ``RawInt`` or
``RawFloat`` (subclasses of ``str``, ``dict``...) whose ``.raw`` is the whole
``CallToolResult``; ``True``, ``False`` and ``None`` cannot be subclassed and come back
plain (``raw_of`` answers None for them). ``raw_of(value)`` reads ``.raw`` where the
static type (a TypedDict) does not show it.

The errors, all ``McpxError``::

    McpxError                 anything else (the daemon unreachable, an unexpected answer)
    +-- ToolError             the tool ran and answered isError (.raw: its result)
    +-- ArgumentError         the arguments do not fit the tool's schema (.argument)
    +-- UnknownTool           no such server or tool (.known: the names there are)
    +-- LoginNeeded           the server needs an OAuth sign-in (.command: how to do it)
    +-- UpstreamError         the server failed, or answered a protocol error
        +-- UpstreamTimeout   the server gave no answer within the call's budget
"""

from __future__ import annotations

import enum
import http.client
import json
import os
import socket
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

__all__ = [
    "RUN_HEADER",
    "RUN_ID_ENV",
    "RUN_SOCKET_ENV",
    "UNSET",
    "ArgumentError",
    "LoginNeeded",
    "McpxError",
    "RawDict",
    "RawFloat",
    "RawInt",
    "RawList",
    "RawStr",
    "ToolError",
    "UnknownTool",
    "Unset",
    "UpstreamError",
    "UpstreamTimeout",
    "call",
    "call_async",
    "raw_of",
    "run_id",
    "unwrap",
]

RUN_SOCKET_ENV: Final = "MCPX_RUN_SOCKET"
RUN_ID_ENV: Final = "MCPX_RUN_ID"
RUN_HEADER: Final = "X-Mcpx-Run"
_AGENT: Final = "mcpx-tools/1"


class Unset(enum.Enum):
    """The default of an optional argument: an argument left ``UNSET`` is not sent."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


class McpxError(Exception):
    """A tool call that did not return a result; ``code``: the daemon's error code."""

    def __init__(
        self,
        message: str,
        server: str = "",
        tool: str = "",
        code: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.server = server
        self.tool = tool
        self.code = code
        self.details: dict[str, Any] = dict(details or {})


class ToolError(McpxError):
    """The tool answered with ``isError: true``; ``raw`` is that answer."""

    def __init__(self, server: str, tool: str, raw: Mapping[str, Any]) -> None:
        said = "\n".join(
            str(b.get("text", ""))
            for b in raw.get("content") or []
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
        super().__init__(f"{server}/{tool}: {said or 'the tool reported an error'}", server, tool)
        self.raw: dict[str, Any] = dict(raw)


class ArgumentError(McpxError):
    """The arguments do not fit the tool's input schema; ``argument``: the one at fault
    (a dotted path into the arguments; None when the message names it otherwise)."""

    @property
    def argument(self) -> str | None:
        field = self.details.get("field") or self.details.get("argument")
        return str(field) if field and field != "(arguments)" else None


class UnknownTool(McpxError):
    """No such server, or no such tool on it; ``known``: the names there are."""

    @property
    def known(self) -> list[str]:
        return [str(k) for k in self.details.get("known") or []]


class LoginNeeded(McpxError):
    """The server needs an OAuth sign-in; ``command`` is the one to run."""

    @property
    def command(self) -> str:
        return str(self.details.get("command") or f"mcpx auth login {self.server}")


class UpstreamError(McpxError):
    """The server failed the call, or answered it with a protocol error."""


class UpstreamTimeout(UpstreamError):
    """The server did not answer within the call's budget."""


# The daemon's error code -> the exception a script sees (anything else: McpxError).
_ERRORS: Final[Mapping[str, type[McpxError]]] = {
    "invalid_input": ArgumentError,
    "upstream_refused_input": ArgumentError,
    "arguments_too_large": ArgumentError,
    "unknown_server": UnknownTool,
    "unknown_tool": UnknownTool,
    "login_needed": LoginNeeded,
    "upstream_error": UpstreamError,
    "upstream_timeout": UpstreamTimeout,
}
_BY_STATUS: Final[Mapping[int, type[McpxError]]] = {
    424: LoginNeeded,
    502: UpstreamError,
    504: UpstreamTimeout,
}


class RawStr(str):
    raw: dict[str, Any]


class RawDict(dict[str, Any]):
    raw: dict[str, Any]


class RawList(list[Any]):
    raw: dict[str, Any]


class RawInt(int):
    raw: dict[str, Any]


class RawFloat(float):
    raw: dict[str, Any]


def run_id() -> str:
    """This run's id (empty outside ``mcpx exec``)."""
    return os.environ.get(RUN_ID_ENV, "")


def raw_of(value: object) -> dict[str, Any] | None:
    """The whole ``CallToolResult`` a call's value came from; None for a value that
    cannot carry it (``True``, ``False``, ``None``) or that no call returned."""
    raw = getattr(value, "raw", None)
    return raw if isinstance(raw, dict) else None


def unwrap(result: Mapping[str, Any]) -> Any:
    """A ``CallToolResult`` as the Python value a call returns (see the module's doc)."""
    raw = dict(result)
    if raw.get("structuredContent") is not None:
        return _keeping(raw["structuredContent"], raw)
    blocks = raw.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    if len(blocks) == 1:
        return _keeping(_block(blocks[0]), raw)
    return _keeping([_block(b) for b in blocks], raw)


def _block(block: Any) -> Any:
    if not isinstance(block, Mapping) or block.get("type") != "text":
        return block
    text = str(block.get("text", ""))
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:  # not JSON (or NaN, Infinity, a number too long): the text
        return text


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _keeping(value: Any, raw: dict[str, Any]) -> Any:
    kept: Any
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        kept = RawStr(value)
    elif isinstance(value, dict):
        kept = RawDict(value)
    elif isinstance(value, list):
        kept = RawList(value)
    elif isinstance(value, int):
        kept = RawInt(value)
    elif isinstance(value, float):
        kept = RawFloat(value)
    else:
        return value
    kept.raw = raw
    return kept


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("mcpx", timeout=None)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def call(server: str, tool: str, arguments: Mapping[str, object]) -> Any:
    """Call ``tool`` on ``server``; arguments left ``UNSET`` are not sent.

    Raises:
        McpxError: the call did not return a result (the subclass says why).
    """
    sent = {k: v for k, v in arguments.items() if v is not UNSET}
    body = _encoded(server, tool, sent)
    status, text = _post(server, tool, body)
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if status == 200 and isinstance(doc, dict):
        if doc.get("isError") is True:
            raise ToolError(server, tool, doc)
        return unwrap(doc)
    raise _error(server, tool, status, doc, text)


async def call_async(server: str, tool: str, arguments: Mapping[str, object]) -> Any:
    """``call`` for a coroutine: it runs in a thread, so calls gathered run at once.

    Raises:
        McpxError: the call did not return a result (the subclass says why).
    """
    import asyncio  # only a script that awaits pays for importing it

    return await asyncio.get_running_loop().run_in_executor(
        _threads(), call, server, tool, arguments
    )


_POOL: list[ThreadPoolExecutor] = []
_THREADS: Final = 32  # calls of one run at once; the daemon bounds each upstream's own


def _threads() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(_THREADS, thread_name_prefix="mcpx-call"))
    return _POOL[0]


def _encoded(server: str, tool: str, arguments: dict[str, object]) -> bytes:
    body = {"server": server, "tool": tool, "arguments": arguments}
    try:
        return json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        bad = next((k for k, v in arguments.items() if not _is_json(v)), None)
        what = f"argument {bad!r}" if bad is not None else "the arguments"
        raise ArgumentError(
            f"{server}/{tool}: {what} cannot be sent as JSON ({exc})",
            server,
            tool,
            "invalid_input",
            {"field": bad} if bad is not None else {},
        ) from None


def _is_json(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _post(server: str, tool: str, body: bytes) -> tuple[int, str]:
    path = os.environ.get(RUN_SOCKET_ENV)
    if not path:
        raise McpxError(
            f"{server}/{tool}: {RUN_SOCKET_ENV} is not set: mcpx_tools calls tools through "
            "mcpx; run the script with `mcpx exec`",
            server,
            tool,
        )
    headers = {"Content-Type": "application/json", "User-Agent": _AGENT}
    if run_id():
        headers[RUN_HEADER] = run_id()
    conn = _UnixConnection(path)
    try:
        conn.request("POST", "/v1/call", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as exc:
        raise McpxError(
            f"{server}/{tool}: mcpx could not be reached at {path} ({exc or type(exc).__name__})",
            server,
            tool,
        ) from None
    finally:
        conn.close()


def _error(server: str, tool: str, status: int, doc: Any, text: str) -> McpxError:
    error = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(error, dict):
        said = text.strip()[:500] or "no body"
        return McpxError(f"{server}/{tool}: mcpx answered {status}: {said}", server, tool)
    code = str(error.get("code", ""))
    details = error.get("details")
    kind = _ERRORS.get(code) or _BY_STATUS.get(status, McpxError)
    message = str(error.get("message") or code or f"status {status}")
    return kind(message, server, tool, code, details if isinstance(details, dict) else None)
