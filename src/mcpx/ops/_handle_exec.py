"""``POST /v1/exec`` (``mcpx exec``, ``mcpx run``, the ``mcpx_exec`` tool): one script run.

Invariants:

- The script imports ``mcpx_tools``, generated from the catalogue of the servers the
  caller reaches, and its calls come back through the run's own socket
  (``mcpx.exec``); each is a member of the run, so a question one of them asks reaches
  whoever started the run (``CallsInFlight.run``), and nobody once the run is over.
- ``exec.sandbox`` ``auto`` confines a script with bubblewrap where it is installed;
  without it a script handed over by an MCP host or another /v1 client is refused (a
  model's code must not do more than call tools), and only the CLI, run by its user,
  runs one unconfined, with a warning on the script's stderr.
- ``timeoutSec`` may lower or raise ``exec.timeout``, up to ``exec.maxTimeout`` (more is
  clamped to it, and the run's stderr says so).
- With ``Mcpx-Questions: return`` (the CLI), the run is a task: a question nobody
  present can answer ends the request with 202, the question and the task's id, and
  the script runs on.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from mcpx.config import state_dir
from mcpx.exec import ExecLimits, RunOutcome, bwrap_path, run_script
from mcpx.wire import McpError

from ._detached import returning_call
from ._errors import OpError
from ._handle_gen import exec_client
from ._operations import PROFILE_HEADER, QUESTIONS_HEADER

if TYPE_CHECKING:
    from ._context import OpContext
    from ._table import Status

__all__ = ["exec_run", "exec_tool_result", "run_json"]

JSON = dict[str, Any]

_NO_SANDBOX: Final = (
    "scripts from MCP hosts and /v1 clients run only inside a sandbox, and bubblewrap "
    "(bwrap) is not installed here: install it (Debian/Ubuntu: apt-get install "
    "bubblewrap), or set exec.sandbox to none to run them unconfined"
)
_UNCONFINED: Final = (
    "mcpx: warning: bubblewrap (bwrap) is not installed: this script runs unconfined, "
    "with your own rights (install bubblewrap to confine scripts)\n"
)


async def exec_run(ctx: OpContext, args: JSON) -> JSON | Status:
    name = str(args.get("name") or "<exec>")
    most = int(ctx.settings["exec.maxRuns"])
    if ctx.calls.runs() >= most:
        raise OpError(
            429,
            "too_many_runs",
            f"{most} scripts already run (exec.maxRuns): try again when one ends",
            {"setting": "exec.maxRuns"},
        )
    limits, clamped = _limits(ctx, args.get("timeoutSec"))
    sandbox, warning = _sandbox(ctx)
    warning += clamped
    package = (await exec_client(ctx, {}))["files"]
    run_id = f"run-{secrets.token_hex(8)}"
    socket = ctx.socket if ctx.socket is not None else state_dir(ctx.settings) / "mcpx.sock"

    async def run(c: OpContext) -> JSON:
        with c.calls.run(run_id, c.asker):
            outcome = await run_script(
                str(args["code"]),
                filename=name,
                argv=list(args.get("args") or []),
                inline=bool(args.get("inline")),
                package=package,
                run_id=run_id,
                daemon_socket=Path(socket),
                sandbox=sandbox,
                limits=limits,
                headers={PROFILE_HEADER: c.profile} if c.profile else None,
            )
        return run_json(outcome, run_id, warning)

    if args.get(QUESTIONS_HEADER) == "return" and ctx.tasks is not None:
        return await returning_call(ctx, "mcpx", f"exec {name}", run, _collect)
    return await run(ctx)


def run_json(outcome: RunOutcome, run_id: str, warning: str = "") -> JSON:
    """One run's outcome, as /v1/exec answers it."""
    out: JSON = {
        "ok": outcome.exit_code == 0,
        "exitCode": outcome.exit_code,
        "durationMs": outcome.duration_ms,
        "stdout": outcome.stdout,
        "stderr": warning + outcome.stderr,
        "run": run_id,
        "truncated": outcome.truncated,
    }
    if outcome.returned:
        out["result"] = outcome.result
    if outcome.limit is not None:
        out["limit"] = outcome.limit
    return out


def exec_tool_result(out: JSON) -> JSON:
    """A run as the ``mcpx_exec`` tool's ``CallToolResult``: what it printed (or its
    ``main()``'s value) as text, the value as ``structuredContent`` when it returned
    data, ``isError`` when it failed (with its stderr)."""
    if "status" in out and "task" in out:  # returned on a question: not for MCP hosts
        return {"content": [{"type": "text", "text": json.dumps(out)}], "isError": True}
    text = str(out.get("stdout") or "")
    result: JSON = {"content": [{"type": "text", "text": text}]}
    if "result" in out:
        value = out["result"]
        result["structuredContent"] = value if isinstance(value, dict) else {"result": value}
        if not text:
            result["content"] = [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}]
    if not out.get("ok"):
        said = f"the script failed (exit {out.get('exitCode')})"
        stderr = str(out.get("stderr") or "").strip()
        result["content"].append({"type": "text", "text": f"{said}:\n{stderr}" if stderr else said})
        result["isError"] = True
    return result


def _limits(ctx: OpContext, requested: object) -> tuple[ExecLimits, str]:
    """The run's limits, and what its stderr starts with when ``timeoutSec`` asked for
    more than ``exec.maxTimeout`` (clamped, as a call's own timeout is)."""
    settings = ctx.settings
    timeout, said = float(settings["exec.timeout"]), ""
    if isinstance(requested, int | float):
        most = float(settings["exec.maxTimeout"])
        timeout = min(float(requested), most)
        if requested > most:
            said = (
                f"mcpx: timeoutSec {requested:g} is over exec.maxTimeout ({most:g}s): the "
                "run gets that (raise exec.maxTimeout for longer runs)\n"
            )
    limits = ExecLimits(
        timeout=timeout,
        max_output=int(settings["exec.maxOutput"]),
        memory=int(settings["exec.memory"]),
        cpu=max(1, int(timeout) + 1),
        processes=int(settings["exec.processes"]),
    )
    return limits, said


def _sandbox(ctx: OpContext) -> tuple[Literal["bwrap", "none"], str]:
    """The sandbox this run gets, and the warning its stderr starts with."""
    chosen = str(ctx.settings["exec.sandbox"])
    if chosen == "none":
        return "none", ""
    if bwrap_path() is not None:
        return "bwrap", ""
    if chosen == "bwrap":
        raise OpError(
            503,
            "sandbox_unavailable",
            "exec.sandbox is bwrap but bubblewrap (bwrap) is not installed: install it "
            "(Debian/Ubuntu: apt-get install bubblewrap)",
            {"setting": "exec.sandbox"},
        )
    if ctx.caller is not None and ctx.caller.door == "cli":
        return "none", _UNCONFINED
    raise OpError(503, "sandbox_unavailable", _NO_SANDBOX, {"setting": "exec.sandbox"})


async def _collect(outcome: Awaitable[JSON]) -> JSON:
    try:
        return await outcome
    except McpError as exc:  # the run itself failed (not the script: that is an outcome)
        raise OpError(500, "internal_error", f"the script's run failed: {exc.message}") from exc
