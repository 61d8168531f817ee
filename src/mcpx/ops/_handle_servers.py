"""The handlers that start, stop and restart a server's instances at an operator's word
(``mcpx server start|stop|restart``, the console's Servers page).

Invariants:

- Through the pool's own ways only (``Pool.instance``, ``Pool.stop_instance``): the
  instances they start and stop are counted and told of (its lifecycle record, the
  catalogue's refresh) as any other; a stopped server starts again on the next call.
- A name outside the caller's reach is 404 naming those in reach, as every operation's;
  an instance id the server does not run now is 404 naming those it runs.
- A start that fails is the pool's error (502 with the server's stderr tail; a server
  backing off says when it may start again), never a 500.
- An OAuth caller (``owner_seen``) is one user among many: it acts on its own instances
  of a server scoped per identity, never on a shared one or another user's (403).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import OpError, unknown_server
from ._handle_tasks import owner_seen
from ._upstream_call import upstream

if TYPE_CHECKING:
    from mcpx.pool import Instance

    from ._context import OpContext

__all__ = ["servers_restart", "servers_start", "servers_stop"]

JSON = dict[str, Any]

# What a call in flight on a stopped instance is told (then ", and tools/call was ended
# before it finished").
_STOPPED = (
    "stopped by an operator (mcpx server stop, or the console; the next call starts it again)"
)
_RESTARTED = "restarted by an operator (mcpx server restart, or the console)"


def _server(ctx: OpContext, args: JSON) -> str:
    name = str(args["server"])
    if not ctx.visible(name):
        raise unknown_server(name, ctx.server_names())
    return name


def _chosen(ctx: OpContext, name: str, wanted: int | None) -> list[Instance]:
    """The running instances of ``name`` the caller acts on: the one ``wanted`` (by id),
    else all of them; an OAuth user's own only.

    Raises:
        OpError: 404 no instance ``wanted``; 403 an OAuth user's hands on a shared server.
    """
    running = ctx.pool.instances(name)
    if wanted is not None:
        running = [i for i in running if i.id == wanted]
        if not running:
            known = sorted(i.id for i in ctx.pool.instances(name))
            message = f"{name} runs no instance {wanted}; running now: {known or 'none'}"
            raise OpError(404, "unknown_instance", message, {"known": known})
    owner = owner_seen(ctx)
    if owner is None:
        return running
    if ctx.pool.servers[name].scope != "identity":
        raise OpError(
            403,
            "forbidden",
            f"{name}'s instance is shared by every caller: only the operator (the daemon's "
            "socket or token) stops or restarts it",
            {"server": name},
        )
    mine = [i for i in running if i.scope_key == owner]
    if wanted is not None and not mine:
        raise OpError(
            403, "forbidden", f"instance {wanted} of {name} is another caller's", {"server": name}
        )
    return mine


async def servers_start(ctx: OpContext, args: JSON) -> Any:
    name = _server(ctx, args)
    inst = await upstream(name, ctx.pool.instance(name, ctx.identity))
    return {"server": name, "instance": inst.status()}


async def servers_stop(ctx: OpContext, args: JSON) -> Any:
    name = _server(ctx, args)
    stopped = []
    for inst in _chosen(ctx, name, args.get("instance")):
        await ctx.pool.stop_instance(inst, _STOPPED)
        stopped.append(inst.status())
    return {"server": name, "stopped": stopped}


async def servers_restart(ctx: OpContext, args: JSON) -> Any:
    name = _server(ctx, args)
    wanted = args.get("instance")
    identity = ctx.identity
    if wanted is None:
        # The instance a start would give this caller, if it runs.
        key = ctx.pool.scope_key(ctx.pool.servers[name], identity)
        old = [i for i in _chosen(ctx, name, None) if i.scope_key == key]
    else:
        old = _chosen(ctx, name, wanted)
        identity = old[0].scope_key or None  # the same scope again
    stopped = []
    for inst in old:
        await ctx.pool.stop_instance(inst, _RESTARTED)
        stopped.append(inst.status())
    new = await upstream(name, ctx.pool.instance(name, identity))
    return {"server": name, "stopped": stopped, "instance": new.status()}
