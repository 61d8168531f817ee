"""Benchmark workers: each runs in the Python that has its client, prints one JSON line.

    python workers.py sdk  N CONCURRENCY -- SERVER ARGV...   (the official SDK client, direct)
    python workers.py http N CONCURRENCY KIND SOCKET          (KIND: mcpx | mcp over a unix socket)
    python workers.py fastmcp-proxy SOCKET -- SERVER ARGV...  (serve fastmcp's proxy on SOCKET)

The ``sdk`` worker needs ``mcp`` (2.x); ``http`` needs ``httpx``; ``fastmcp-proxy``
needs ``fastmcp``. Only standard-library imports at module level, so each runs in
its own virtualenv.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

MODERN = "2026-07-28"


def _report(n: int, concurrency: int, elapsed: float) -> None:
    print(json.dumps({"n": n, "concurrency": concurrency, "seconds": elapsed, "rps": n / elapsed}))


async def _sdk(n: int, concurrency: int, argv: list[str]) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("echo", {"text": "warm"})
        started = time.perf_counter()

        async def lane(count: int) -> None:
            for i in range(count):
                await session.call_tool("echo", {"text": f"m{i}"})

        async with anyio.create_task_group() as tg:
            for k in range(concurrency):
                tg.start_soon(lane, n // concurrency + (1 if k < n % concurrency else 0))
        _report(n, concurrency, time.perf_counter() - started)


def _mcp_body(i: int) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    }
    params = {"name": "echo", "arguments": {"text": f"m{i}"}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


async def _http(n: int, concurrency: int, kind: str, socket: str) -> None:
    import anyio
    import httpx

    transport = httpx.AsyncHTTPTransport(uds=socket)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", timeout=60
    ) as client:

        async def one(i: int) -> None:
            if kind == "mcpx":
                body: dict[str, Any] = {
                    "server": "echo",
                    "tool": "echo",
                    "arguments": {"text": f"m{i}"},
                }
                response = await client.post("/v1/call", json=body)
            else:
                headers = {
                    "MCP-Protocol-Version": MODERN,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": "echo",
                    "Accept": "application/json, text/event-stream",
                }
                response = await client.post("/mcp", json=_mcp_body(i), headers=headers)
            if response.status_code != 200 or f"m{i}" not in response.text:
                raise RuntimeError(f"{kind}: HTTP {response.status_code}: {response.text[:300]}")

        await one(0)  # warm
        started = time.perf_counter()

        async def lane(start: int, count: int) -> None:
            for i in range(start, start + count):
                await one(i)

        async with anyio.create_task_group() as tg:
            per = n // concurrency
            for k in range(concurrency):
                tg.start_soon(lane, k * per, per + (n % concurrency if k == 0 else 0))
        _report(n, concurrency, time.perf_counter() - started)


def _fastmcp_proxy(socket: str, argv: list[str]) -> None:
    import uvicorn
    from fastmcp.server import create_proxy

    config = {"mcpServers": {"echo": {"command": argv[0], "args": argv[1:]}}}
    proxy = create_proxy(config, name="bench-proxy")
    app = proxy.http_app(path="/mcp", stateless_http=True, json_response=True)
    uvicorn.run(app, uds=socket, log_level="warning")


def main() -> None:
    import anyio

    what = sys.argv[1]
    rest = sys.argv[2:]
    if what == "sdk":
        cut = rest.index("--")
        anyio.run(_sdk, int(rest[0]), int(rest[1]), rest[cut + 1 :])
    elif what == "http":
        anyio.run(_http, int(rest[0]), int(rest[1]), rest[2], rest[3])
    elif what == "fastmcp-proxy":
        cut = rest.index("--")
        _fastmcp_proxy(rest[0], rest[cut + 1 :])
    else:
        raise SystemExit(f"unknown worker {what!r}")


if __name__ == "__main__":
    main()
