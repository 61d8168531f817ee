"""An MCP host on the official Python SDK whose server is a command (``ssh … mcpx serve``).

    python ssh_host.py [--mode auto|legacy] --watch URI -- COMMAND [ARG ...]

Run by a release's own python (mcp 1.23.3: 2025-11-25; mcp 2.3.0 in ``auto``:
2026-07-28). Only the SDK's client API is used. It prints one JSON line per step, flushed,
so the test can act between them:

1. ``ready``: the negotiated revision and the tool names.
2. ``echo``: ``mcpx_call`` demo ``echo`` {"text": "hi"}.
3. ``slow``: ``mcpx_call`` demo ``slow`` with a progress callback: the progress it heard.
4. ``asked``: ``mcpx_call`` fixture ``ask`` {"question": "ssh?"}: the elicitation callback
   accepts with {"answer": "over ssh"}; what it was asked and the result.
5. ``watching``: the resource URI subscribed (resources/subscribe on 2025-11-25, a
   subscriptions/listen stream on 2026-07-28), kept for the rest of the run.
6. ``holding``: ``mcpx_call`` fixture ``ask`` {"question": "hold?"}, whose elicitation the
   callback does not answer: the host holds a question when the test drops the connection.
   The test then closes this process's stdin, and only then does the callback decline:
   an SDK may run the callback in its receive loop (1.x does), which would otherwise
   never read the end of the connection.
7. ``ended``: how that call ended (the connection closed under it).

Any other failure is a traceback on stderr and a non-zero exit. Once ``ended`` is said, an
SDK's own tasks failing on the closed pipes as they wind down (1.x's stdin writer gets
the declined answer to write) are shown on stderr, and the exit is 0.
"""

import argparse
import asyncio
import importlib.metadata
import importlib.util
import json
import os
import sys
import traceback
from typing import Any

MCP_VERSION = importlib.metadata.version("mcp")
IS_V2 = importlib.util.find_spec("mcp.client.client") is not None
HOLD = "hold?"
# Long enough for a slow first ssh start; the test ends the run by dropping the connection.
CALL_LIMIT = 240.0


async def stdin_closed() -> None:
    """Until this process's stdin reaches its end (the test closes it)."""
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()

    def readable() -> None:
        if not os.read(0, 4096):
            loop.remove_reader(0)
            ended.set()

    loop.add_reader(0, readable)
    await ended.wait()


SAID: list[str] = []


def say(step: str, **seen: Any) -> None:
    SAID.append(step)
    print(json.dumps({"step": step, **seen}), flush=True)


def _dump(obj: Any) -> Any:
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)


def _texts(called: Any) -> list[str]:
    return [b.text for b in called.content if getattr(b, "type", None) == "text"]


def _is_error(called: Any) -> bool:
    return bool(getattr(called, "is_error", None) if IS_V2 else called.isError)


class Host:
    """The steps, through ``api`` (a 1.x ClientSession or a 2.x Client)."""

    def __init__(self, watch: str) -> None:
        self.watch = watch
        self.api: Any = None
        self.asked: list[dict[str, Any]] = []

    async def elicitation(self, context: Any, params: Any) -> Any:
        from mcp import types

        seen = _dump(params)
        self.asked.append(seen)
        if HOLD in seen.get("message", ""):
            say("holding", asked=seen)
            await stdin_closed()  # the question stays with this host until then
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"answer": "over ssh"})

    async def call(self, tool: str, arguments: dict[str, Any], **kw: Any) -> Any:
        import anyio

        server = "fixture" if tool == "ask" else "demo"
        with anyio.fail_after(CALL_LIMIT):
            return await self.api.call_tool(
                "mcpx_call", {"server": server, "tool": tool, "arguments": arguments}, **kw
            )

    async def steps(self, revision: str, subscribe: Any) -> None:
        tools = await self.api.list_tools()
        say("ready", protocolVersion=revision, tools=[t.name for t in tools.tools])
        echoed = await self.call("echo", {"text": "hi"})
        say("echo", texts=_texts(echoed), isError=_is_error(echoed))

        progress: list[dict[str, Any]] = []

        async def heard(done: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": done, "total": total, "message": message})

        slow = await self.call("slow", {"seconds": 0.6, "steps": 3}, progress_callback=heard)
        say("slow", texts=_texts(slow), isError=_is_error(slow), progress=progress)

        answered = await self.call("ask", {"question": "ssh?"})
        say("asked", asked=self.asked, texts=_texts(answered), isError=_is_error(answered))

        async with subscribe():
            say("watching", uri=self.watch)
            try:
                held = await self.call("ask", {"question": HOLD})
            except Exception as exc:  # the connection dropped under the call
                say("ended", error=type(exc).__name__, message=str(exc)[:500])
            else:
                say("ended", error=None, texts=_texts(held))


def _stdio(target: list[str]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    # The whole environment: the ssh client needs nothing more, and takes no password.
    return StdioServerParameters(
        command=target[0], args=target[1:], env=dict(os.environ), cwd=os.getcwd()
    )


async def run_v1(target: list[str], watch: str) -> None:
    from contextlib import asynccontextmanager

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    host = Host(watch)
    async with (
        stdio_client(_stdio(target)) as (read, write),
        ClientSession(read, write, elicitation_callback=host.elicitation) as session,
    ):
        init = await session.initialize()
        host.api = session

        @asynccontextmanager
        async def subscribe() -> Any:
            await session.subscribe_resource(host.watch)
            yield

        await host.steps(init.protocolVersion, subscribe)


async def run_v2(target: list[str], watch: str, mode: str) -> None:
    from contextlib import asynccontextmanager

    from mcp import Client

    host = Host(watch)
    async with Client(_stdio(target), mode=mode, elicitation_callback=host.elicitation) as c:
        host.api = c

        @asynccontextmanager
        async def subscribe() -> Any:
            if c.protocol_version < "2026-07-28":
                await c.session.subscribe_resource(host.watch)
                yield
                return
            async with c.listen(resource_subscriptions=[host.watch]):
                yield

        await host.steps(c.protocol_version, subscribe)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("auto", "legacy"), help="mcp 2.x only")
    parser.add_argument("--watch", required=True, metavar="URI", help="the resource to watch")
    parser.add_argument("target", nargs="+", help="the server's command line")
    args = parser.parse_args()
    try:
        if IS_V2:
            asyncio.run(run_v2(args.target, args.watch, args.mode or "auto"))
        else:
            asyncio.run(run_v1(args.target, args.watch))
    except Exception:
        if "ended" not in SAID:
            raise
        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
