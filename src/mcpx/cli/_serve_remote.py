"""``mcpx serve`` with ``daemon.endpoint`` set: a local MCP host served by that daemon.

- ``unix://``: the daemon's stdio channel is beside its socket (``mcpx-stdio.sock``):
  served as a local daemon's is, descriptors handed off.
- ``ssh://``: this process becomes ``ssh HOST mcpx serve --transport stdio`` (exec): the
  host's pipes go straight to the remote shim, which serves them through the remote
  daemon. Nothing here reads them; ssh's own words go to stderr.
- ``http(s)://``: descriptors cannot cross machines, so frames are relayed between stdio
  and the daemon's ``/mcp`` with mcpx's own Streamable HTTP client transport: one line in,
  one POST; every frame the daemon sends (answers, its own requests: questions, progress)
  one line out. The session id is kept by the transport; the protocol version header is
  taken from the ``initialize`` answer (legacy) or each request's ``_meta`` (2026-07-28),
  as the host negotiated it: the relay chooses nothing.

Invariants: stdout carries only frames from the daemon; a request the transport could
not carry is answered with a JSON-RPC error for its id, so the host never waits forever;
at stdin's end the relay waits for answers in flight (transport.stdioDrain), then ends.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import anyio
import click

from mcpx import wire
from mcpx.config import Settings
from mcpx.daemon import DaemonPaths
from mcpx.transport import (
    RequestFailed,
    TransportClosed,
    TransportError,
    http_client,
    open_streamable_http,
)

from ._endpoint import Endpoint, ssh_argv, tcp_link
from ._remote import reach
from ._ssh_link import remote_command

__all__ = ["serve_remote"]

_META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
_INTERNAL_ERROR: Final = -32603


def serve_remote(
    loaded_settings: Settings,
    endpoint: Endpoint,
    transport: str,
    profile: str | None,
    serve_stdio: Callable[[Path, dict[str, Any]], None],
) -> None:
    """Serve this process's stdio through the daemon at ``endpoint``; ``serve_stdio``
    serves a stdio channel on this machine (``_serve``'s, passed in: it imports this).

    Raises:
        click.UsageError: ``--transport http`` (the daemon serves HTTP itself).
        Unreachable: the daemon cannot be reached (exit 5).
    """
    if transport == "http":
        raise click.UsageError(
            f"the daemon at {endpoint.text} serves MCP over HTTP itself: point the client "
            "at its /mcp (mcpx serve is for stdio only)"
        )
    options: dict[str, Any] = {}
    if loaded_settings.origin("mcp.passthrough").kind.value != "default":
        options["passthrough"] = list(loaded_settings["mcp.passthrough"])
    if profile is not None:
        options["profile"] = profile
    if endpoint.scheme == "ssh":
        _exec_ssh(loaded_settings, endpoint, options)
    reach(endpoint, loaded_settings)  # answers, or exit 5 saying why
    if endpoint.scheme == "unix":
        serve_stdio(DaemonPaths(Path(endpoint.path).parent).stdio_socket, options)
        return
    headers = tcp_link(endpoint, loaded_settings).headers()  # a kept sign-in too
    if profile is not None:
        headers["Mcpx-Profile"] = profile
    drain = float(loaded_settings["transport.stdioDrain"])
    anyio.run(_relay, endpoint.text.rstrip("/") + "/mcp", headers, drain)


def _exec_ssh(settings: Settings, endpoint: Endpoint, options: dict[str, Any]) -> None:
    command = ["mcpx", "serve", "--transport", "stdio"]
    if "profile" in options:
        command += ["--profile", options["profile"]]
    if "passthrough" in options:
        command += ["--passthrough", ",".join(options["passthrough"])]
    argv = ssh_argv(settings)
    if not sys.stdin.isatty():
        argv += ["-o", "BatchMode=yes"]
    # ssh hands the remote shell one string: each word quoted for it.
    argv += ["-T", *remote_command(endpoint), *map(shlex.quote, command)]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        raise click.ClickException(
            f"cannot run {argv[0]!r} ({exc}); see daemon.sshCommand"
        ) from None


def _headers_for(frame: dict[str, Any]) -> dict[str, str]:
    """A 2026-07-28 request's headers, from its own ``_meta`` (none for other frames)."""
    method = frame.get("method")
    params = frame.get("params")
    if not isinstance(method, str) or not isinstance(params, dict):
        return {}
    meta = params.get("_meta")
    revision = meta.get(_META_VERSION) if isinstance(meta, dict) else None
    if not isinstance(revision, str):
        return {}
    headers = {wire.MCP_PROTOCOL_VERSION: revision, wire.MCP_METHOD: method}
    key = wire.MCP_NAME_SOURCES.get(method)
    if key is not None and isinstance(params.get(key), str):
        headers[wire.MCP_NAME] = wire.encode_header_value(params[key])
    return headers


class _Relay:
    """The frames between the host's stdio and one Streamable HTTP session."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.pending: set[Any] = set()  # ids of the host's requests not answered yet
        self.initialize_id: Any = None
        self.settled = anyio.Event()

    async def write(self, frame: dict[str, Any]) -> None:
        line = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        await anyio.to_thread.run_sync(_write_all, line)

    async def outbound(self, frame: dict[str, Any]) -> None:
        if "method" in frame and "id" in frame:
            self.pending.add(frame["id"])
            if frame["method"] == "initialize":
                self.initialize_id = frame["id"]
        await self.transport.send(frame, _headers_for(frame))
        if frame.get("method") == "notifications/initialized":
            try:  # the daemon's requests outside any call's stream come on it
                await self.transport.open_listen_stream()
            except TransportError as exc:
                click.echo(f"mcpx: no listen stream from the daemon ({exc})", err=True)

    async def inbound(self) -> None:
        while True:
            try:
                got = await self.transport.receive()
            except TransportClosed:
                return
            if isinstance(got, RequestFailed):
                self._answered(got.request_id)
                error = {"code": _INTERNAL_ERROR, "message": f"mcpx relay: {got.error}"}
                await self.write({"jsonrpc": "2.0", "id": got.request_id, "error": error})
                continue
            if "method" not in got and "id" in got:
                self._adopt(got)
                self._answered(got["id"])
            await self.write(got)

    def _adopt(self, answer: dict[str, Any]) -> None:
        result = answer.get("result")
        if answer.get("id") == self.initialize_id and isinstance(result, dict):
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.transport.session_headers = {wire.MCP_PROTOCOL_VERSION: version}

    def _answered(self, request_id: Any) -> None:
        self.pending.discard(request_id)
        if not self.pending:
            self.settled.set()


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _read_line() -> bytes:
    return sys.stdin.buffer.readline()


async def _relay(url: str, headers: dict[str, str], drain: float) -> None:
    async with (
        http_client(headers=headers) as client,
        open_streamable_http(url, client=client) as transport,
        anyio.create_task_group() as tg,
    ):
        relay = _Relay(transport)
        tg.start_soon(relay.inbound)
        while line := await anyio.to_thread.run_sync(_read_line, abandon_on_cancel=True):
            try:
                frame = json.loads(line)
            except ValueError:
                click.echo(
                    f"mcpx: not a JSON frame from the host, dropped: {line[:80]!r}", err=True
                )
                continue
            if isinstance(frame, dict):
                await relay.outbound(frame)
        if relay.pending:
            relay.settled = anyio.Event()
            with anyio.move_on_after(drain):
                await relay.settled.wait()
        tg.cancel_scope.cancel()
