"""Scripts that call many tools in one run (``mcpx exec``, ``mcpx_exec``).

- ``_codegen``: the typed Python client (package ``mcpx_tools``) generated from the
  catalogue's live schemas, and ``_runtime``, the part of it that talks to the daemon.
- ``_runner``: one script run in a child process, sandboxed where it can be, bounded by
  time, output, memory and processes; ``_relay``: the run's own socket, through which
  its calls reach the daemon (and nothing but calls).
"""

from __future__ import annotations

from ._codegen import PACKAGE, generate_package
from ._relay import MAX_BODY, SCRIPT_ROUTES, open_relay, script_may
from ._runner import ExecLimits, RunOutcome, SandboxUnavailable, limit_message, run_script
from ._runtime import RUN_HEADER, RUN_ID_ENV, RUN_SOCKET_ENV
from ._sandbox import bwrap_path

__all__ = [
    "MAX_BODY",
    "PACKAGE",
    "RUN_HEADER",
    "RUN_ID_ENV",
    "RUN_SOCKET_ENV",
    "SCRIPT_ROUTES",
    "ExecLimits",
    "RunOutcome",
    "SandboxUnavailable",
    "bwrap_path",
    "generate_package",
    "limit_message",
    "open_relay",
    "run_script",
    "script_may",
]
