"""The servers' operations, part of the one table (``_operations.OPERATIONS``): the list,
and an instance started, stopped or restarted by an operator (``mcpx server …``, the
console's Servers page).

Invariant: as ``_operations``, this module imports nothing heavy (the CLI reads it at
every start).
"""

from __future__ import annotations

from typing import Final

from ._table import Cli, Operation, Param

__all__ = ["SERVER_GROUPS", "SERVER_OPERATIONS"]

# The CLI group the lifecycle operations are commands of, and its help: ``mcpx server
# start NAME`` (not ``mcpx start``: ``mcpx stop`` and ``mcpx restart`` are the daemon's).
_GROUP: Final = "server"
SERVER_GROUPS: Final = {
    _GROUP: "Start, stop or restart a server's instances (the daemon's own: mcpx stop, "
    "mcpx restart)."
}
_NAME = Param("server", {"type": "string"}, "Configured server name", where="path", required=True)
_ID = {"type": "integer", "minimum": 1}
_ONE = Param("instance", _ID, "Only this instance (its id in /v1/servers); default: every one")
_WHICH = Param(
    "instance", _ID, "This instance (its id in /v1/servers); default: the one start would start"
)
_INSTANCE_OUT = {"type": "object", "description": "The instance as /v1/servers shows it"}
_STOPPED = {"type": "array", "items": _INSTANCE_OUT, "description": "The instances stopped"}

SERVER_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "servers.list",
        "GET",
        "/v1/servers",
        "Configured servers with each instance's state",
        "servers_list",
        cli=Cli("servers", view="servers"),
    ),
    Operation(
        "servers.start",
        "POST",
        "/v1/servers/{server}/start",
        "Start the server's instance now (the caller's own, if the server is scoped per "
        "identity), unless it runs already; answers the instance once it is ready",
        "servers_start",
        params=(_NAME,),
        output={
            "type": "object",
            "properties": {"server": {"type": "string"}, "instance": _INSTANCE_OUT},
            "required": ["server", "instance"],
        },
        cli=Cli("start", positional=("server",), view="instance", group=_GROUP),
    ),
    Operation(
        "servers.stop",
        "POST",
        "/v1/servers/{server}/stop",
        "Stop the server's running instances (or only the one named): calls in flight on "
        "them fail, saying an operator stopped it; the next call starts it again",
        "servers_stop",
        params=(_NAME, _ONE),
        output={
            "type": "object",
            "properties": {"server": {"type": "string"}, "stopped": _STOPPED},
            "required": ["server", "stopped"],
        },
        cli=Cli("stop", positional=("server",), view="instance", group=_GROUP),
    ),
    Operation(
        "servers.restart",
        "POST",
        "/v1/servers/{server}/restart",
        "Stop the server's instance (the one named, else the one start would start) and "
        "start it again; answers the new instance",
        "servers_restart",
        params=(_NAME, _WHICH),
        output={
            "type": "object",
            "properties": {
                "server": {"type": "string"},
                "stopped": _STOPPED,
                "instance": _INSTANCE_OUT,
            },
            "required": ["server", "stopped", "instance"],
        },
        cli=Cli("restart", positional=("server",), view="instance", group=_GROUP),
    ),
)
