"""The operations table: every /v1 operation declared once.

An ``Operation`` names itself, its HTTP method and path, its parameters (each
a JSON Schema, with where it travels: path, query, body or a header), its
output schema, its handler and a one-line doc. A streamed operation names the
media type it streams (``stream``); its handler returns an async iterator of
bytes, sent as they come. The HTTP routes, ``/openapi.json``, the CLI
subcommands (and later the gateway's MCP tools) are all generated from
``OPERATIONS``; nothing else declares an operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["Cli", "Handler", "Operation", "Param", "Status"]

Handler = Callable[["OpContext", dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Status:
    """A handler's answer with a status other than 200 (e.g. 202: still running)."""

    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Param:
    name: str
    schema: dict[str, Any]
    doc: str
    where: Literal["path", "query", "body", "header"] = "body"
    required: bool = False


@dataclass(frozen=True)
class Cli:
    """How the operation appears as ``mcpx <command>`` (``mcpx <group> <command>`` with a
    ``group``, whose help the table's ``CLI_GROUPS`` gives): which parameters are
    positional (in order); the rest are options. ``view`` names the renderer."""

    command: str
    positional: tuple[str, ...] = ()
    view: str = "json"
    group: str | None = None


@dataclass(frozen=True)
class Operation:
    name: str
    method: Literal["GET", "POST", "DELETE"]
    path: str
    doc: str
    handler: str  # its name in _handlers.HANDLERS: the table stays light for the CLI
    params: tuple[Param, ...] = ()
    output: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    cli: Cli | None = None
    # The media type of a streamed response (e.g. text/event-stream); None: JSON.
    stream: str | None = None
    # The upstream's progress and log lines can be relayed while it runs, as
    # application/x-ndjson lines, to a caller whose Accept asks for them.
    relays: bool = False

    def input_schema(self, *, headers: bool = True) -> dict[str, Any]:
        """The operation's whole input as one JSON Schema object (without the HTTP
        headers it reads, for the MCP tools made from it: they have none)."""
        params = [p for p in self.params if headers or p.where != "header"]
        return {
            "type": "object",
            "properties": {p.name: {**p.schema, "description": p.doc} for p in params},
            "required": [p.name for p in params if p.required],
            "additionalProperties": False,
        }
