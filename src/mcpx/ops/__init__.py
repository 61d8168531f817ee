"""The operations table: every /v1 operation declared once, and what is made from it.

- ``_table``, ``_operations`` (with ``_operations_servers``, ``_operations_auth``): the
  declarations (``OPERATIONS``), light: the CLI builds its commands from them at every
  start.
- ``_handlers`` and the ``_handle_*`` families: what each operation does, over the
  pool, the broker and the tasks; ``_upstream_call``: the one way to an upstream and
  the one map of its failures.
- ``_operation_input``: an operation's input checked against its schema, once, for
  every surface; ``_openapi``, ``_plain_schema``, ``_tool_input``, ``_limits``: what
  else is judged and published from the declarations.
- ``_uris``, ``_resource_owner``: the gateway's ``mcpx://`` resource names.
- ``_call_record``, ``_call_timing``, ``_call_log``, ``_handle_log``: the call log (one
  record per upstream call, written off the call's path) and its operations.
- ``_handle_servers``: an instance started, stopped or restarted by an operator.
- ``_handle_exec``, ``_handle_gen``: script runs (``mcpx.exec``) and the client they import.

The names that bring in the pool, the upstream client and the broker (the handlers,
the context, the catalogue, the upstream call, the input check and its jsonschema) load
on first use, through this module's ``__getattr__``: the one deliberate lazy seam, for
the CLI's start time.
"""

from typing import TYPE_CHECKING, Any

from ._errors import ERROR_SCHEMA, OpError
from ._limits import ArgumentsTooLarge
from ._openapi import openapi
from ._operations import (
    CLI_AGENT,
    CLI_GROUPS,
    OPERATIONS,
    PROFILE_HEADER,
    QUESTIONS_HEADER,
    RUN_HEADER,
    TASK_NOTE,
    by_name,
)
from ._plain_schema import QuickCheck, plain_check
from ._resource_owner import upstream_resource
from ._search import rank_tools
from ._table import Cli, Operation, Param, Status
from ._uris import gateway_template, gateway_uri, original_uri, split_gateway

if TYPE_CHECKING:
    from ._call_ahead import CallAhead, HostSide, Route, route_ahead, send_ahead
    from ._call_log import CallLog, open_call_log
    from ._call_record import Caller, CallRecord, CallRecorder
    from ._catalogue import Catalogue
    from ._context import OpContext, profiled
    from ._handle_auth import logged_in
    from ._handle_calls import call_ahead
    from ._handle_exec import exec_tool_result
    from ._handlers import HANDLERS, run_operation
    from ._operation_input import check_input, input_problem
    from ._telemetry import METRICS_CONTENT_TYPE, Telemetry, configured
    from ._telemetry_otel import Otel
    from ._telemetry_prom import PromMetrics
    from ._upstream_call import TRACE_KEYS, request_for_caller, upstream_error

__all__ = [
    "CLI_AGENT",
    "CLI_GROUPS",
    "ERROR_SCHEMA",
    "HANDLERS",
    "METRICS_CONTENT_TYPE",
    "OPERATIONS",
    "PROFILE_HEADER",
    "QUESTIONS_HEADER",
    "RUN_HEADER",
    "TASK_NOTE",
    "TRACE_KEYS",
    "ArgumentsTooLarge",
    "CallAhead",
    "CallLog",
    "CallRecord",
    "CallRecorder",
    "Caller",
    "Catalogue",
    "Cli",
    "HostSide",
    "OpContext",
    "OpError",
    "Operation",
    "Otel",
    "Param",
    "PromMetrics",
    "QuickCheck",
    "Route",
    "Status",
    "Telemetry",
    "by_name",
    "call_ahead",
    "check_input",
    "configured",
    "exec_tool_result",
    "gateway_template",
    "gateway_uri",
    "input_problem",
    "logged_in",
    "open_call_log",
    "openapi",
    "original_uri",
    "plain_check",
    "profiled",
    "rank_tools",
    "request_for_caller",
    "route_ahead",
    "run_operation",
    "send_ahead",
    "split_gateway",
    "upstream_error",
    "upstream_resource",
]

# Loaded on first use: name -> the module that defines it.
_LAZY = {
    "CallLog": "_call_log",
    "logged_in": "_handle_auth",
    "exec_tool_result": "_handle_exec",
    "open_call_log": "_call_log",
    "Caller": "_call_record",
    "CallRecord": "_call_record",
    "CallRecorder": "_call_record",
    "Catalogue": "_catalogue",
    "OpContext": "_context",
    "profiled": "_context",
    "call_ahead": "_handle_calls",
    "HANDLERS": "_handlers",
    "run_operation": "_handlers",
    "check_input": "_operation_input",
    "input_problem": "_operation_input",
    "TRACE_KEYS": "_upstream_call",
    "CallAhead": "_call_ahead",
    "HostSide": "_call_ahead",
    "Route": "_call_ahead",
    "route_ahead": "_call_ahead",
    "send_ahead": "_call_ahead",
    "request_for_caller": "_upstream_call",
    "upstream_error": "_upstream_call",
    "METRICS_CONTENT_TYPE": "_telemetry",
    "Telemetry": "_telemetry",
    "configured": "_telemetry",
    "Otel": "_telemetry_otel",
    "PromMetrics": "_telemetry_prom",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpx.ops' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value
