"""The daemon: transports and process life. One ASGI app (/v1 from the operations
table, /openapi.json, /health, /mcp) behind the front door, on a unix socket and a
loopback port; the stdio channel and the descriptor hand-off for ``mcpx serve`` hosts;
workers, restart and reload; the upstream pool it owns. What a host's frame means is
the server side's (``mcpx.server``): ``/mcp`` and the stdio channel only carry frames
to a ``HostSession`` (or, stateless, to ``dispatch``) and its answers back.

``DaemonPaths`` and ``demo_server`` are light (the CLI uses them at every start);
``build_app`` and ``serve`` bring in the HTTP server and load on first use.
"""

from typing import Any

from ._paths import EX_STATE_FULL, DaemonPaths, demo_server

__all__ = ["EX_STATE_FULL", "DaemonPaths", "build_app", "demo_server", "serve"]


def __getattr__(name: str) -> Any:
    if name == "build_app":
        from ._app import build_app

        return build_app
    if name == "serve":
        from ._serve import serve

        return serve
    raise AttributeError(name)
