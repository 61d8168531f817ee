"""The demo server's tools (echo, add, slow, readme, now): how each is listed and what it does.

Invariants:

- A tool is listed with only the fields its revision defines (``title``, ``annotations``,
  ``outputSchema``), as the matrix says; nothing here compares revision strings.
- Arguments are checked against the tool's own ``inputSchema`` before it runs. A mismatch is
  an ``isError`` result naming the problem (SEP-1303), which a model can read and correct;
  only a tool that does not exist is a protocol error (-32602), since no retry fixes that.
- Calling a tool raises nothing but ``InvalidParams`` for a bad request. ``slow`` is the
  only tool that waits, and it waits at checkpoints a cancel scope interrupts.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import anyio

from mcpx import spec, wire

from ._catalog import README, README_URI

__all__ = ["TOOLS", "Reporter", "argument_problem", "call_tool", "list_tools"]


class Reporter(Protocol):
    """How a running tool reaches its caller; each method sends only what was asked for."""

    async def progress(self, progress: float, total: float, message: str) -> None: ...

    async def log(self, level: str, data: str) -> None: ...


Run = Callable[[dict[str, Any], str, Reporter], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]
    hints: Mapping[str, bool]
    run: Run
    output_schema: Mapping[str, Any] | None = None

    @property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {k: dict(v) for k, v in self.properties.items()},
        }
        if self.required:  # draft-04 validators, still met in clients, reject an empty list
            schema["required"] = list(self.required)
        schema["additionalProperties"] = False
        return schema

    def listing(self, revision: str) -> dict[str, Any]:
        """The ``Tool`` object of ``revision``: optional fields only where it defines them."""
        out: dict[str, Any] = {"name": self.name}
        if spec.defined("field", "Tool.title", revision):
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None and spec.defined("field", "Tool.outputSchema", revision):
            out["outputSchema"] = dict(self.output_schema)
        if spec.defined("field", "Tool.annotations", revision):
            # annotations.title is the display name where Tool.title does not exist yet.
            out["annotations"] = {"title": self.title, **self.hints}
        return out


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        result["isError"] = True
    return result


async def _echo(args: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    return text_result(args["text"])


# orjson carries integers of at most 64 bits; a larger sum goes out as a float.
_INT_RANGE: Final = range(-(2**63), 2**64)


async def _add(args: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    total = args["a"] + args["b"]
    if isinstance(total, float) and not math.isfinite(total):
        return text_result("add: the sum is too large to represent in JSON", error=True)
    if isinstance(total, int) and total not in _INT_RANGE:
        total = float(total)
    result = text_result(wire.dumps(total).decode())
    # The same floor as Tool.outputSchema: a revision listing the schema gets the content.
    if spec.defined("field", "CallToolResult.structuredContent", revision):
        result["structuredContent"] = {"sum": total}
    return result


_DEFAULT_STEPS: Final = 5


async def _slow(args: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    seconds, steps = float(args["seconds"]), int(args.get("steps", _DEFAULT_STEPS))
    start = anyio.current_time()
    for step in range(1, steps + 1):
        # Deadlines from the start, so the reports' own cost does not stretch the total.
        await anyio.sleep_until(start + seconds * step / steps)
        await reporter.progress(step, steps, f"step {step} of {steps}")
    done = f"slept {seconds:g} s in {steps} step{'s' if steps != 1 else ''}"
    await reporter.log("info", f"slow: {done}")
    return text_result(done)


async def _readme(args: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    embedded = {"uri": README_URI, "mimeType": "text/markdown", "text": README}
    content: list[dict[str, Any]] = [{"type": "resource", "resource": embedded}]
    if spec.defined("field", "CallToolResult.content[type=resource_link]", revision):
        link = {"type": "resource_link", "uri": README_URI, "name": "readme"}
        content.insert(0, {**link, "mimeType": "text/markdown"})
    return {"content": content}


async def _now(args: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text_result(stamp)


_READ_ONLY: Final = {"readOnlyHint": True, "openWorldHint": False}

TOOLS: Final = (
    Tool(
        "echo",
        "Echo",
        "Return the given text unchanged.",
        {"text": {"type": "string", "description": "The text to send back."}},
        ("text",),
        {**_READ_ONLY, "idempotentHint": True},
        _echo,
    ),
    Tool(
        "add",
        "Add two numbers",
        "Add two numbers and return their sum.",
        {
            "a": {"type": "number", "description": "The first addend."},
            "b": {"type": "number", "description": "The second addend."},
        },
        ("a", "b"),
        {**_READ_ONLY, "idempotentHint": True},
        _add,
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
    ),
    Tool(
        "slow",
        "Wait a while",
        "Wait the given number of seconds, reporting progress after each step "
        "(when the request asks for progress). Useful to try cancellation.",
        {
            "seconds": {
                "type": "number",
                "minimum": 0,
                "maximum": 600,
                "description": "How long to wait in total, in seconds.",
            },
            "steps": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "description": f"How many progress steps (default {_DEFAULT_STEPS}).",
            },
        },
        ("seconds",),
        {**_READ_ONLY, "idempotentHint": True},
        _slow,
    ),
    Tool(
        "readme",
        "Readme",
        "Point to the demo's readme: a link to the resource (where the revision has links) "
        "and its text embedded.",
        {},
        (),
        {**_READ_ONLY, "idempotentHint": True},
        _readme,
    ),
    Tool(
        "now",
        "Current time",
        "The current UTC date and time, in ISO 8601.",
        {},
        (),
        {**_READ_ONLY, "idempotentHint": False},
        _now,
    ),
)

_BY_NAME: Final = {tool.name: tool for tool in TOOLS}


def list_tools(revision: str) -> dict[str, Any]:
    """The ``tools/list`` result: every tool, always in the same order."""
    return {"tools": [tool.listing(revision) for tool in TOOLS]}


async def call_tool(params: dict[str, Any], revision: str, reporter: Reporter) -> dict[str, Any]:
    """The ``tools/call`` result; bad arguments give an ``isError`` result.

    Raises:
        InvalidParams: no tool has that name, or ``arguments`` is not an object.
    """
    name = params.get("name")
    if not isinstance(name, str):
        raise wire.InvalidParams("tools/call needs the tool's name as a string")
    tool = _BY_NAME.get(name)
    if tool is None:
        raise wire.InvalidParams(f"no tool named {name[:100]!r}")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise wire.InvalidParams(f"{name}: arguments must be an object")
    problem = argument_problem(arguments, tool.input_schema)
    if problem is not None:
        return text_result(f"{name}: {problem}", error=True)
    return await tool.run(arguments, revision, reporter)


def argument_problem(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` for ``schema`` (the subset of JSON Schema the tools
    use: required, additionalProperties false, and typed properties with bounds)."""
    properties: dict[str, dict[str, Any]] = schema["properties"]
    for name in schema.get("required", ()):
        if name not in arguments:
            return f"missing required argument {name!r}"
    for name, value in arguments.items():
        rule = properties.get(name)
        if rule is None:
            known = ", ".join(properties) or "none"
            return f"unknown argument {name!r} (arguments: {known})"
        problem = _value_problem(value, rule)
        if problem is not None:
            return f"argument {name!r} {problem}"
    return None


def _value_problem(value: object, rule: dict[str, Any]) -> str | None:
    kind = rule["type"]
    if not _is_type(value, kind):
        return f"must be {'an' if kind == 'integer' else 'a'} {kind} (got {_json_type(value)})"
    assert isinstance(value, int | float | str)  # _is_type accepted it; narrows for mypy
    if "minimum" in rule and isinstance(value, int | float) and value < rule["minimum"]:
        return f"must be at least {rule['minimum']} (got {value})"
    if "maximum" in rule and isinstance(value, int | float) and value > rule["maximum"]:
        return f"must be at most {rule['maximum']} (got {value})"
    return None


def _is_type(value: object, kind: str) -> bool:
    if isinstance(value, bool):  # a bool is an int in Python, never a number in JSON
        return False
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        # JSON Schema counts 3.0 as an integer: the value, not its spelling, decides.
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, int | float)


_JSON_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (bool, "boolean"),  # before int: a bool is an int in Python
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "unknown")
