"""Each operation's handler, by the name the table gives it, and running one.

The table (``_operations``) names handlers rather than holding them: the CLI reads the
table at every start, and the handlers bring in the pool, the upstream client and the
broker, which only the daemon needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from mcpx.config import StateDiskFull

from . import _handle_auth as auth
from . import _handle_calls as calls
from . import _handle_events as events
from . import _handle_exec as exec_ops
from . import _handle_gen as gen
from . import _handle_listings as listings
from . import _handle_log as call_log
from . import _handle_questions as questions
from . import _handle_servers as servers
from . import _handle_tasks as tasks
from ._errors import OpError
from ._table import Handler, Operation

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["HANDLERS", "run_operation"]

HANDLERS: Final[Mapping[str, Handler]] = MappingProxyType(
    {
        "health": listings.health,
        "protocol": listings.protocol,
        "servers_list": listings.servers_list,
        "servers_start": servers.servers_start,
        "servers_stop": servers.servers_stop,
        "servers_restart": servers.servers_restart,
        "tools_list": listings.tools_list,
        "tools_describe": listings.tools_describe,
        "call": calls.call,
        "exec_run": exec_ops.exec_run,
        "exec_client": gen.exec_client,
        "prompts_list": listings.prompts_list,
        "prompts_get": calls.prompts_get,
        "resources_list": listings.resources_list,
        "resources_templates": listings.resources_templates,
        "resources_read": calls.resources_read,
        "complete": calls.complete,
        "events": events.events,
        "questions_list": questions.questions_list,
        "questions_show": questions.questions_show,
        "questions_answer": questions.questions_answer,
        "questions_decline": questions.questions_decline,
        "questions_cancel": questions.questions_cancel,
        "tasks_list": tasks.tasks_list,
        "tasks_show": tasks.tasks_show,
        "tasks_result": tasks.tasks_result,
        "tasks_cancel": tasks.tasks_cancel,
        "log": call_log.log,
        "stats": call_log.stats,
        "auth_status": auth.auth_status,
        "auth_login": auth.auth_login,
        "auth_callback": auth.auth_callback,
        "auth_logout": auth.auth_logout,
    }
)


async def run_operation(op: Operation, ctx: OpContext, args: dict[str, Any]) -> Any:
    """``op``'s handler on ``args`` (already validated against its input schema).

    A write the state dir's disk has no room for is 507, naming the state dir.
    """
    try:
        return await HANDLERS[op.handler](ctx, args)
    except StateDiskFull as exc:
        details = {"stateDir": str(exc.path.parent)}
        raise OpError(507, "insufficient_storage", str(exc), details) from exc
