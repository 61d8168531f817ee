"""mcpx-demo: the small MCP server bundled with mcpx, spoken over stdio.

The daemon starts it as the default upstream when the user has configured none, so a fresh
machine shows a working gateway. It is a real dual-era MCP server built on mcpx's own wire
core (``mcpx.wire``, ``mcpx.spec``): ``initialize`` negotiates one of the four legacy
revisions for the connection, and a request carrying 2026-07-28 ``_meta`` is served
statelessly as 2026-07-28, on the same process.

Modules, one job each:

- ``_eras``: which revision a request is served as; the 2026-07-28 result envelope.
- ``_tools``: the tools (echo, add, slow, readme, now), listed and called per revision.
- ``_catalog``: the prompt, resources, resource template and completions.
- ``_server``: dispatch of one request to one response frame.
- ``_stdio``: newline-delimited JSON-RPC over byte streams, concurrency, cancellation, EOF.
- ``_main``: the process entry points (``main``, the ``demo-server`` click command).

Public API: ``serve(stdin, stdout)`` (async; any anyio byte or memory object streams),
``main()`` (this process's stdin/stdout), ``command`` (the click command ``demo-server``).
"""

from ._main import command, main
from ._stdio import DRAIN_SECONDS, MAX_LINE_BYTES, ByteSink, ByteSource, serve

__all__ = ["DRAIN_SECONDS", "MAX_LINE_BYTES", "ByteSink", "ByteSource", "command", "main", "serve"]
