"""Benchmark workers: each runs in the Python that has its client, prints one JSON line.

    python workers.py sdk   N CONC -- SERVER ARGV...        the official SDK client, direct
    python workers.py sdk-rounds N NAME TARGET ARGV... [++ NAME TARGET ARGV...]...
                                                            its calls to each path in turn
    python workers.py stdio N CONC REV TARGET -- ARGV...    a raw JSON-lines host over stdio
    python workers.py http  N CONC KIND TARGET              an HTTP host on httpx (keep-alive)
    python workers.py raw-http N CONC KIND TARGET           a raw HTTP/1.1 host (keep-alive)
    python workers.py fastmcp-proxy WHERE -- SERVER ARGV... fastmcp's proxy over HTTP
    python workers.py fastmcp-stdio -- SERVER ARGV...       fastmcp's proxy over stdio
    python workers.py relay -- SERVER ARGV...               a bare line relay over stdio

``stdio`` spawns ARGV (in its own session, ended by its pid) and calls ``echo`` on it, or
``mcpx_call`` of ``echo`` on server ECHO when TARGET is ``mcpx:ECHO``; REV 2025-11-25 and
older: one ``initialize`` first; 2026-07-28: no handshake, ``_meta`` on every request.

``http`` KIND: ``mcpx`` (``POST /v1/call``), ``mcp`` (stateless 2026-07-28 ``tools/call``
of ``echo`` on ``/mcp``), ``mcpx-mcp`` (the same, of ``mcpx_call``), ``legacy`` (a
2025-11-25 session on ``/mcp``: initialize, then calls with its ``Mcp-Session-Id``).
TARGET: a unix socket path, or an ``http://127.0.0.1:PORT`` url. ``raw-http`` sends the
same requests as ``http`` from a few lines of HTTP/1.1 over one socket per lane, so that,
like the raw JSON-lines host, the host's own cost does not hide the gateways' (httpx's
async client spends about 3 ms of CPU per call here, more than the gateway under test).

``fastmcp-proxy`` WHERE: a unix socket path, or a port number on 127.0.0.1.

``sdk-rounds``: one SDK client with a session to each path (TARGET ``echo`` or
``mcpx:ECHO`` as for ``stdio``), N rounds of one sequential call to each, the order
rotated every round, so every path is timed under the same moment's machine; prints each
path's mean and median call in microseconds.

``relay``: the floor of any stdio hop in Python, for reference: the host's stdin and
stdout relayed to a child on uvloop (the daemon's loop), each line parsed and written
again with orjson (the daemon's codec), and nothing else: no routing, no checks, no
bookkeeping. Not a gateway: what a hop costs before anything is done with a message.

``sdk`` needs ``mcp`` (2.x); ``stdio`` and ``raw-http`` need ``anyio``; ``http`` needs
``httpx``; the ``fastmcp-*`` ones need ``fastmcp``. Only standard-library imports at module
level, so each runs in its own virtualenv.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def _report(n: int, concurrency: int, elapsed: float) -> None:
    print(json.dumps({"n": n, "concurrency": concurrency, "seconds": elapsed, "rps": n / elapsed}))


async def _timed(n: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> None:
    """``one(i)`` for i in 1..n, in ``concurrency`` sequential lanes; reports calls/s."""
    import anyio

    await one(0)  # warm
    started = time.perf_counter()

    async def lane(start: int, count: int) -> None:
        for i in range(start, start + count):
            await one(i)

    async with anyio.create_task_group() as tg:
        per = n // concurrency
        for k in range(concurrency):
            tg.start_soon(lane, 1 + k * per, per + (n % concurrency if k == 0 else 0))
    _report(n, concurrency, time.perf_counter() - started)


async def _sdk(n: int, concurrency: int, target: str, argv: list[str]) -> None:
    """The official SDK's client as the host: what users run, its own cost included."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def one(i: int) -> None:
            call = _call_params(target, i)
            result = await session.call_tool(call["name"], call["arguments"])
            if result.is_error or f"m{i}" not in str(result.content):
                raise RuntimeError(f"sdk: call {i} answered {str(result)[:300]}")

        await _timed(n, concurrency, one)


async def _sdk_rounds(n: int, paths: list[tuple[str, str, list[str]]]) -> None:
    """One sequential call to each path in turn, N rounds (see the module's docstring)."""
    import statistics
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with AsyncExitStack() as stack:
        sessions = []
        for name, target, argv in paths:
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append((name, target, session))
        times: dict[str, list[float]] = {name: [] for name, _, _ in paths}
        for i in range(-20, n):  # 20 warm rounds, not timed
            turn = i % len(sessions)
            for name, target, session in sessions[turn:] + sessions[:turn]:
                call = _call_params(target, i)
                started = time.perf_counter()
                result = await session.call_tool(call["name"], call["arguments"])
                elapsed = time.perf_counter() - started
                if result.is_error or f"m{i}" not in str(result.content):
                    raise RuntimeError(f"sdk-rounds: {name} call {i} answered {str(result)[:300]}")
                if i >= 0:
                    times[name].append(elapsed)
    rows = {
        name: {"mean_us": statistics.mean(t) * 1e6, "median_us": statistics.median(t) * 1e6}
        for name, t in times.items()
    }
    print(json.dumps({"n": n, "rows": rows}))


def _call_params(target: str, i: int) -> dict[str, Any]:
    if target.startswith("mcpx:"):
        args = {"server": target[5:], "tool": "echo", "arguments": {"text": f"m{i}"}}
        return {"name": "mcpx_call", "arguments": args}
    return {"name": "echo", "arguments": {"text": f"m{i}"}}


def _check(frame: dict[str, Any], i: int, what: str) -> None:
    result = frame.get("result")
    if not isinstance(result, dict) or result.get("isError") or f"m{i}" not in str(result):
        raise RuntimeError(f"{what}: call {i} answered {str(frame)[:300]}")


async def _stdio(n: int, concurrency: int, rev: str, target: str, argv: list[str]) -> None:
    """A raw JSON-lines MCP host: one writer lock, one reader task matching ids."""
    import subprocess

    import anyio
    from anyio.streams.buffered import BufferedByteReceiveStream

    try:
        import orjson

        dumps, loads = orjson.dumps, orjson.loads
    except ImportError:  # the same host everywhere it runs with orjson; this is a fallback
        dumps, loads = (lambda o: json.dumps(o).encode()), json.loads  # type: ignore[assignment]

    proc = await anyio.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    waiting: dict[int, anyio.Event] = {}
    answers: dict[int, dict[str, Any]] = {}
    lock = anyio.Lock()

    async def send(frame: dict[str, Any]) -> None:
        async with lock:
            await stdin.send(dumps(frame) + b"\n")

    async def reader() -> None:
        lines = BufferedByteReceiveStream(stdout)
        while True:
            try:
                frame = loads(await lines.receive_until(b"\n", 1 << 26))
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            event = waiting.pop(frame.get("id"), None)  # requests to the host: none asked
            if event is not None:
                answers[frame["id"]] = frame
                event.set()

    async def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        event = waiting[rid] = anyio.Event()
        await send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with anyio.fail_after(60):
            await event.wait()
        return answers.pop(rid)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            if rev == MODERN:
                meta: dict[str, Any] = {"_meta": META}
            else:
                meta = {}
                info = {"name": "bench", "version": "1"}
                init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": info}
                await request(-1, "initialize", init)
                await send({"jsonrpc": "2.0", "method": "notifications/initialized"})

            async def one(i: int) -> None:
                frame = await request(i, "tools/call", {**_call_params(target, i), **meta})
                _check(frame, i, f"stdio {target}")

            await _timed(n, concurrency, one)
            await stdin.aclose()  # EOF: a stdio server ends
            with anyio.move_on_after(20):
                await proc.wait()
            tg.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            with anyio.move_on_after(10, shield=True):
                await proc.wait()
        with suppress(ProcessLookupError, PermissionError):  # what it left in its group
            os.killpg(proc.pid, signal.SIGKILL)


def _http_body(kind: str, i: int) -> tuple[str, dict[str, Any], dict[str, str]]:
    """Path, body and headers of call ``i`` for ``kind`` (``legacy`` adds its session)."""
    if kind == "mcpx":
        return "/v1/call", {"server": "echo", "tool": "echo", "arguments": {"text": f"m{i}"}}, {}
    params = _call_params("mcpx:echo" if kind == "mcpx-mcp" else "echo", i)
    headers = {"Accept": ACCEPT}
    if kind != "legacy":
        params["_meta"] = META
        headers |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
        headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
    return "/mcp", body, headers


async def _legacy_session(client: Any) -> dict[str, str]:
    info = {"name": "bench", "version": "1"}
    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    response = await client.post("/mcp", json=body, headers={"Accept": ACCEPT})
    response.raise_for_status()
    headers = {"Mcp-Session-Id": response.headers["mcp-session-id"]}
    headers["MCP-Protocol-Version"] = response.json()["result"]["protocolVersion"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await client.post("/mcp", json=note, headers={**headers, "Accept": ACCEPT})
    response.raise_for_status()
    return headers


async def _http(n: int, concurrency: int, kind: str, target: str) -> None:
    import httpx

    if target.startswith("http://"):
        transport, base = httpx.AsyncHTTPTransport(), target
    else:
        transport, base = httpx.AsyncHTTPTransport(uds=target), "http://bench"
    async with httpx.AsyncClient(transport=transport, base_url=base, timeout=60) as client:
        session = await _legacy_session(client) if kind == "legacy" else {}

        async def one(i: int) -> None:
            path, body, headers = _http_body(kind, i)
            response = await client.post(path, json=body, headers={**headers, **session})
            if response.status_code != 200 or f"m{i}" not in response.text:
                raise RuntimeError(f"{kind}: HTTP {response.status_code}: {response.text[:300]}")

        await _timed(n, concurrency, one)


class _RawHttp:
    """One keep-alive HTTP/1.1 connection: a request written whole, the response read by
    its Content-Length or to the last chunk (an SSE answer ends its stream)."""

    def __init__(self, stream: Any, authority: str = "mcpx") -> None:
        self._stream = stream
        self._buffer = b""
        # The daemon's TCP port takes only a Host that names it, port included.
        self._authority = authority

    @classmethod
    async def connect(cls, target: str) -> _RawHttp:
        import anyio

        if target.startswith("http://"):
            host, _, port = target.removeprefix("http://").split("/")[0].partition(":")
            return cls(await anyio.connect_tcp(host, int(port)), f"{host}:{port}")
        return cls(await anyio.connect_unix(target))

    async def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        data = json.dumps(body).encode()
        lines = [f"POST {path} HTTP/1.1", f"Host: {self._authority}"]
        lines += ["Content-Type: application/json"]
        lines += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {len(data)}"]
        await self._stream.send("\r\n".join(lines).encode() + b"\r\n\r\n" + data)
        head = (await self._until(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        if "content-length" in fields:
            return status, fields, await self._exactly(int(fields["content-length"]))
        if fields.get("transfer-encoding") != "chunked":
            return status, fields, b""
        chunks = []
        while size := int((await self._until(b"\r\n")).split(b";")[0], 16):
            chunks.append(await self._exactly(size))
            await self._exactly(2)
        await self._until(b"\r\n")  # the empty trailer
        return status, fields, b"".join(chunks)

    async def _until(self, mark: bytes) -> bytes:
        while (at := self._buffer.find(mark)) < 0:
            self._buffer += await self._stream.receive()
        found, self._buffer = self._buffer[:at], self._buffer[at + len(mark) :]
        return found

    async def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._buffer += await self._stream.receive()
        found, self._buffer = self._buffer[:size], self._buffer[size:]
        return found

    async def aclose(self) -> None:
        await self._stream.aclose()


def _json_or_event(body: bytes) -> Any:
    """A JSON body, or the JSON of an SSE answer's ``data:`` line."""
    if body.lstrip().startswith(b"{"):
        return json.loads(body)
    data = [line[5:] for line in body.splitlines() if line.startswith(b"data:")]
    return json.loads(data[-1])


async def _raw_http(n: int, concurrency: int, kind: str, target: str) -> None:
    free = [await _RawHttp.connect(target)]
    session: dict[str, str] = {}
    if kind == "legacy":
        path, body, headers = "/mcp", {}, {"Accept": ACCEPT}
        info = {"name": "bench", "version": "1"}
        init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info}
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        status, fields, answer = await free[0].post(path, body, headers)
        session["Mcp-Session-Id"] = fields["mcp-session-id"]
        version = _json_or_event(answer)["result"]["protocolVersion"]
        session["MCP-Protocol-Version"] = version
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status, _, _ = await free[0].post(path, note, {**headers, **session})
        if status != 202:
            raise RuntimeError(f"legacy: notifications/initialized got HTTP {status}")

    async def one(i: int) -> None:
        connection = free.pop() if free else await _RawHttp.connect(target)
        path, body, headers = _http_body(kind, i)
        status, _, answer = await connection.post(path, body, {**headers, **session})
        if status != 200 or f"m{i}".encode() not in answer:
            raise RuntimeError(f"{kind}: HTTP {status}: {answer[:300]!r}")
        free.append(connection)

    try:
        await _timed(n, concurrency, one)
    finally:
        for connection in free:
            await connection.aclose()


def _fastmcp(argv: list[str]) -> Any:
    from fastmcp.server import create_proxy

    config = {"mcpServers": {"echo": {"command": argv[0], "args": argv[1:]}}}
    return create_proxy(config, name="bench-proxy")


def _fastmcp_proxy(where: str, argv: list[str]) -> None:
    import uvicorn

    app = _fastmcp(argv).http_app(path="/mcp", stateless_http=True, json_response=True)
    if where.isdigit():
        uvicorn.run(app, host="127.0.0.1", port=int(where), log_level="warning")
    else:
        uvicorn.run(app, uds=where, log_level="warning")


async def _relay(argv: list[str]) -> None:
    import asyncio

    import orjson

    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    host = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(host), os.fdopen(0, "rb", buffering=0)
    )

    async def up() -> None:
        assert child.stdin is not None
        while line := await host.readline():
            child.stdin.write(orjson.dumps(orjson.loads(line)) + b"\n")
        child.stdin.close()

    async def down() -> None:
        assert child.stdout is not None
        while line := await child.stdout.readline():
            os.write(1, orjson.dumps(orjson.loads(line)) + b"\n")

    await asyncio.gather(up(), down())


def main() -> None:
    import anyio

    what, rest = sys.argv[1], sys.argv[2:]
    argv = rest[rest.index("--") + 1 :] if "--" in rest else []
    if what == "sdk":  # sdk N C [target] -- argv
        target = rest[2] if rest[2] != "--" else "echo"
        anyio.run(_sdk, int(rest[0]), int(rest[1]), target, argv)
    elif what == "sdk-rounds":  # sdk-rounds N NAME TARGET ARGV... ++ NAME TARGET ARGV...
        paths, spec = [], rest[1:]
        while spec:
            cut = spec.index("++") if "++" in spec else len(spec)
            paths.append((spec[0], spec[1], spec[2:cut]))
            spec = spec[cut + 1 :]
        anyio.run(_sdk_rounds, int(rest[0]), paths)
    elif what == "stdio":
        anyio.run(_stdio, int(rest[0]), int(rest[1]), rest[2], rest[3], argv)
    elif what == "http":
        anyio.run(_http, int(rest[0]), int(rest[1]), rest[2], rest[3])
    elif what == "raw-http":
        anyio.run(_raw_http, int(rest[0]), int(rest[1]), rest[2], rest[3])
    elif what == "fastmcp-proxy":
        _fastmcp_proxy(rest[0], argv)
    elif what == "relay":
        import uvloop

        uvloop.run(_relay(argv))
    elif what == "fastmcp-stdio":
        _fastmcp(argv).run(transport="stdio", show_banner=False, log_level="WARNING")
    else:
        raise SystemExit(f"unknown worker {what!r}")


if __name__ == "__main__":
    main()
