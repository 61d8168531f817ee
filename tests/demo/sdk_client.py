"""An official MCP Python SDK client, of whichever release runs it, against the demo server.

    <release python> sdk_client.py --mode legacy|auto -- <server argv...>

Run by ``test_demo_clients.py`` with each installed release's python
(``support.peers.peer_python``). It starts the server over stdio, exercises its whole
surface through the SDK's own typed API (so the SDK's models validate every result), and
prints one JSON object of what came back. ``--mode auto`` (2.x only) probes
``server/discover`` first and so lands on 2026-07-28; ``legacy`` is the initialize handshake.
1.x releases know only the handshake and ignore ``--mode``.
"""

import argparse
import importlib.util
import json
import sys
from typing import Any

import anyio
from mcp import StdioServerParameters, types

IS_V2 = importlib.util.find_spec("mcp.server.mcpserver") is not None


def field(obj: Any, name: str) -> Any:
    """A model field by its wire name: 1.x models use it, 2.x ones its snake_case form."""
    if hasattr(obj, name):
        return getattr(obj, name)
    return getattr(obj, "".join(f"_{c.lower()}" if c.isupper() else c for c in name), None)


async def exercise(client: Any, *, v2: bool) -> dict[str, Any]:
    """The surface, through calls both APIs share (``read_resource`` wants an AnyUrl on 1.x)."""
    out: dict[str, Any] = {}
    out["tools"] = [tool.name for tool in (await client.list_tools()).tools]
    added = await client.call_tool("add", {"a": 2, "b": 3})
    out["add"] = added.content[0].text
    out["structured"] = field(added, "structuredContent")
    bad = await client.call_tool("add", {"a": "two", "b": 3})
    out["bad_is_error"] = field(bad, "isError")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    slow = {"seconds": 0.2, "steps": 2}
    try:
        await client.call_tool("slow", slow, progress_callback=on_progress)
    except TypeError:  # 1.2.1: call_tool takes no progress callback
        await client.call_tool("slow", slow)
    out["progress"] = progress
    prompt = await client.get_prompt("hello", {"name": "Ada"})
    out["prompt"] = prompt.messages[0].content.text
    uri: Any = "demo://greeting/Ada"
    if not v2:
        from pydantic import AnyUrl

        uri = AnyUrl(uri)
    out["greeting"] = (await client.read_resource(uri)).contents[0].text
    if hasattr(client, "list_resource_templates"):  # 1.2.1 has no such helper
        templates = field(await client.list_resource_templates(), "resourceTemplates")
        out["templates"] = [field(t, "uriTemplate") for t in templates]
    ref = types.PromptReference(type="ref/prompt", name="hello")
    done = await client.complete(ref, {"name": "name", "value": "a"})
    out["completion"] = done.completion.values
    return out


async def run_v1(server: StdioServerParameters) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        await session.send_ping()
        out = await exercise(session, v2=False)
        out["protocolVersion"] = field(init, "protocolVersion")
        out["serverName"] = field(init, "serverInfo").name
        return out


async def run_v2(server: StdioServerParameters, mode: str) -> dict[str, Any]:
    from mcp import Client

    async with Client(server, mode=mode) as client:
        out = await exercise(client, v2=True)
        out["protocolVersion"] = client.protocol_version
        out["serverName"] = client.server_info.name if client.server_info else None
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("legacy", "auto"), default="legacy")
    parser.add_argument("server", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = [a for a in args.server if a != "--"]
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    result = anyio.run(run_v2, server, args.mode) if IS_V2 else anyio.run(run_v1, server)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
