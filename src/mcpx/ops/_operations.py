"""Every /v1 operation, declared once in ``OPERATIONS``: name, method, path, parameters,
the handler it runs (by name: ``_handlers``) and how the CLI shows it.

Invariant: this module imports nothing heavy; the CLI builds its commands from it at
every start.
"""

from __future__ import annotations

from typing import Final

from ._operations_auth import AUTH_OPERATIONS, REDIRECT_PATTERN
from ._operations_servers import SERVER_GROUPS, SERVER_OPERATIONS
from ._table import Cli, Operation, Param

__all__ = [
    "CLI_AGENT",
    "CLI_GROUPS",
    "OPERATIONS",
    "PROFILE_HEADER",
    "QUESTIONS_HEADER",
    "REDIRECT_PATTERN",
    "RUN_HEADER",
    "TASK_NOTE",
    "by_name",
]

QUESTIONS_HEADER: Final = "Mcpx-Questions"
# The first line of a relayed call's ndjson stream when the call runs as a task: its id.
TASK_NOTE: Final = "notifications/mcpx/task"
# On a /v1/call a script makes: the run (mcpx_exec) it is part of, so its questions go
# to whoever started the run.
RUN_HEADER: Final = "X-Mcpx-Run"
_QUESTIONS = Param(
    QUESTIONS_HEADER,
    {"type": "string"},
    "return: on a question nobody present can answer, answer 202 at once with "
    "it and the call's task id (the call goes on); anything else (wait, the "
    "default): wait for the answer",
    where="header",
)
# The CLI's User-Agent starts so: the call log tells its calls from other /v1 clients'.
CLI_AGENT: Final = "mcpx-cli/"
# On any /v1 or /mcp request: the profile that bounds it (config.profile_reach).
PROFILE_HEADER: Final = "Mcpx-Profile"
_SERVER = Param("server", {"type": "string"}, "Configured server name", required=True)
_SERVER_FILTER = Param("server", {"type": "string"}, "Only this server", where="query")
_REFRESH = Param("refresh", {"type": "boolean"}, "List again from the upstreams", where="query")
_TIMEOUT = Param(
    "timeout", {"type": "number", "exclusiveMinimum": 0}, "Seconds; only lowers pool.callTimeout"
)
_OBJ = {"type": "object"}
_TASK = Param("id", {"type": "string"}, "Task id", required=True, where="path")
_TASK_STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")
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
# The forms ``_handle_log.parse_since`` reads, so a value outside them is refused by the
# one input check, naming the parameter, before any handler runs.
SINCE_PATTERN: Final = (
    r"^([0-9]{1,9}(\.[0-9]{1,6})?[smhdw]"
    r"|[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?)$"
)
_SINCE = Param(
    "since",
    {"type": "string", "pattern": SINCE_PATTERN},
    "An age (90s, 30m, 1h, 2d, 1w) or an ISO time (2026-01-31T12:00, local unless it says)",
    where="query",
)


OPERATIONS: tuple[Operation, ...] = (
    Operation("health", "GET", "/health", "Is the daemon up", "health"),
    Operation(
        "protocol",
        "GET",
        "/v1/protocol",
        "The revision matrix and the effective spec policy",
        "protocol",
    ),
    *SERVER_OPERATIONS,  # the list, and an instance started, stopped, restarted
    Operation(
        "tools.list",
        "GET",
        "/v1/tools",
        "Tools across servers; search ranks them by what you want to do (BM25 over names, "
        "descriptions and parameters), best first",
        "tools_list",
        params=(
            Param("server", {"type": "string"}, "Only this server", where="query"),
            Param("search", {"type": "string"}, "Words to search for", where="query"),
            Param(
                "limit", {"type": "integer", "minimum": 1}, "At most this many tools", where="query"
            ),
            _REFRESH,
        ),
        cli=Cli("tools", positional=("server",), view="tools"),
    ),
    Operation(
        "tools.describe",
        "GET",
        "/v1/tools/{server}/{tool}",
        "One tool, with its input schema",
        "tools_describe",
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
        "call",
        params=(
            _SERVER,
            Param("tool", {"type": "string"}, "Tool name", required=True),
            Param("arguments", _OBJ, "Tool arguments"),
            _TIMEOUT,
            _QUESTIONS,
            Param(
                RUN_HEADER,
                {"type": "string"},
                "The script run this call is part of (set by the scripts' own client)",
                where="header",
            ),
        ),
        cli=Cli("call", positional=("server", "tool"), view="call"),
        relays=True,
    ),
    Operation(
        "exec",
        "POST",
        "/v1/exec",
        "Run a Python script that calls tools (import mcpx_tools, one namespace per "
        "server); a main() function's return value is the result, else what it printed",
        "exec_run",
        params=(
            Param("code", {"type": "string"}, "The script's source", required=True),
            Param("name", {"type": "string", "maxLength": 256}, "File name, for tracebacks"),
            Param("args", {"type": "array", "items": {"type": "string"}}, "Its sys.argv[1:]"),
            Param("inline", {"type": "boolean"}, "Servers are globals too (mcpx exec -c)"),
            Param(
                "timeoutSec",
                {"type": "number", "exclusiveMinimum": 0},
                "This run's limit, seconds (default exec.timeout, at most exec.maxTimeout)",
            ),
            _QUESTIONS,
        ),
        relays=True,
    ),
    Operation(
        "exec.client",
        "GET",
        "/v1/exec/client",
        "The typed Python client scripts import (package mcpx_tools), generated from the "
        "live tool schemas: each file's path and text",
        "exec_client",
    ),
    Operation(
        "prompts.list",
        "GET",
        "/v1/prompts",
        "Prompts across servers",
        "prompts_list",
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("prompts", positional=("server",), view="prompts"),
    ),
    Operation(
        "prompts.get",
        "POST",
        "/v1/prompts/get",
        "Get a prompt",
        "prompts_get",
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
        "resources_list",
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("resources", positional=("server",), view="resources"),
    ),
    Operation(
        "resources.templates",
        "GET",
        "/v1/resources/templates",
        "Resource templates",
        "resources_templates",
        params=(_SERVER_FILTER, _REFRESH),
        cli=Cli("templates", positional=("server",)),
    ),
    Operation(
        "resources.read",
        "POST",
        "/v1/resources/read",
        "Read a resource",
        "resources_read",
        params=(_SERVER, Param("uri", {"type": "string"}, "Resource URI", required=True)),
        cli=Cli("read", positional=("server", "uri"), view="read"),
    ),
    Operation(
        "complete",
        "POST",
        "/v1/complete",
        "Argument completion: from the server, or from mcpx's catalogue (source says which)",
        "complete",
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
        "questions_list",
    ),
    Operation(
        "questions.show",
        "GET",
        "/v1/questions/{id}",
        "One question, with the time it has left",
        "questions_show",
        params=(_QID,),
    ),
    Operation(
        "questions.answer",
        "POST",
        "/v1/questions/{id}/answer",
        "Answer a question (checked against what it asked for)",
        "questions_answer",
        params=(_QID, Param("content", _OBJ, "The answer", required=True)),
    ),
    Operation(
        "questions.decline",
        "POST",
        "/v1/questions/{id}/decline",
        "Decline a question",
        "questions_decline",
        params=(_QID,),
    ),
    Operation(
        "questions.cancel",
        "POST",
        "/v1/questions/{id}/cancel",
        "Dismiss a question without choosing",
        "questions_cancel",
        params=(_QID,),
    ),
    Operation(
        "tasks.list",
        "GET",
        "/v1/tasks",
        "Calls that outlived their request, newest first (without their outcomes)",
        "tasks_list",
        params=(
            Param(
                "status",
                {"type": "string", "enum": list(_TASK_STATUSES)},
                "Only tasks in this status",
                where="query",
            ),
        ),
        output={
            "type": "object",
            "properties": {"tasks": {"type": "array", "items": _OBJ}},
            "required": ["tasks"],
        },
    ),
    Operation(
        "tasks.show",
        "GET",
        "/v1/tasks/{id}",
        "A call that outlived its request: its status, and its outcome once it ended",
        "tasks_show",
        params=(_TASK,),
    ),
    Operation(
        "tasks.result",
        "GET",
        "/v1/tasks/{id}/result",
        "A task's result as /v1/call would have given it; 202 if it is still running",
        "tasks_result",
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
        "tasks.cancel",
        "POST",
        "/v1/tasks/{id}/cancel",
        "Cancel a running task; the task after it (one that had ended: unchanged)",
        "tasks_cancel",
        params=(_TASK,),
    ),
    Operation(
        "events",
        "GET",
        "/v1/events",
        "Follow the daemon's events (server-sent events); since or Last-Event-ID replays",
        "events",
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
    # The call log (`mcpx log`, `mcpx stats`: their commands are in cli._log).
    Operation(
        "log",
        "GET",
        "/v1/log",
        "Recorded upstream calls from every door, newest first (oldest first after a cursor)",
        "log",
        params=(
            _SERVER_FILTER,
            Param("tool", {"type": "string"}, "Only this tool (or prompt, or URI)", where="query"),
            Param("errors", {"type": "boolean"}, "Only calls that did not end ok", where="query"),
            _SINCE,
            Param(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 10000},
                "At most this many calls (default 100)",
                where="query",
            ),
            Param(
                "after",
                {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},  # an SQLite rowid
                "Only calls after this id (a cursor: `last`)",
                where="query",
            ),
        ),
    ),
    Operation(
        "stats",
        "GET",
        "/v1/stats",
        "Per server and tool: calls, errors, p50/p95/p99 latency (ms); instance starts "
        "and crashes per server",
        "stats",
        params=(_SINCE,),
    ),
)

# OAuth upstreams' logins (``_operations_auth``).
OPERATIONS += AUTH_OPERATIONS

# The CLI's command groups made from the table (``Cli.group``), each with its help.
CLI_GROUPS: Final = {**SERVER_GROUPS}
_BY_NAME = {op.name: op for op in OPERATIONS}


def by_name(name: str) -> Operation:
    return _BY_NAME[name]
