"""The daemon: one ASGI app (/v1 from the operations table, /openapi.json, /health)
on a unix socket and a loopback port, owning the upstream pool."""

from ._app import build_app
from ._serve import DaemonPaths, demo_server, serve

__all__ = ["DaemonPaths", "build_app", "demo_server", "serve"]
