"""The daemon: one ASGI app (/v1 from the operations table, /openapi.json, /health)
on a unix socket and a loopback port, owning the upstream pool.

``DaemonPaths`` and ``demo_server`` are light (the CLI uses them at every start);
``build_app`` and ``serve`` bring in the HTTP server and load on first use.
"""

from typing import Any

from ._paths import DaemonPaths, demo_server

__all__ = ["DaemonPaths", "build_app", "demo_server", "serve"]


def __getattr__(name: str) -> Any:
    if name == "build_app":
        from ._app import build_app

        return build_app
    if name == "serve":
        from ._serve import serve

        return serve
    raise AttributeError(name)
