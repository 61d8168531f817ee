"""Constants and host helpers shared by the server-features obligation tests in this directory.

Hosts: ``mcpx serve`` over stdio (raw lines) and ``/mcp`` over HTTP (raw requests).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from support.daemon import Daemon
from support.modern import modern_headers, modern_meta
from support.peers import PeerFailed, StdioPeer, stdio_peer
from support.waiting import wait_until

LEGACY = "2025-11-25"
META = modern_meta(client=None)
SUB_ID = "io.modelcontextprotocol/subscriptionId"
BOTH = "application/json, text/event-stream"
SECRET = "c2-s3cr3t-7f9a2e"
DOC = "demo://resource/static/document/architecture.md"
WATCHED = "mcpx://everything/" + quote(DOC, safe="")


# --- hosts ----------------------------------------------------------------------------


def _serve(daemon: Daemon) -> Any:
    return stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env())


def _drain(peer: StdioPeer, seconds: float) -> list[dict[str, Any]]:
    """Every message the peer sends within ``seconds``."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            got.append(peer.recv(left))
        except PeerFailed:
            break
    return got


def _until(
    peer: StdioPeer, want: Callable[[list[dict[str, Any]]], bool], limit: float = 30
) -> list[dict[str, Any]]:
    """Messages from the peer until ``want(all so far)`` holds (or ``limit`` s pass)."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + limit
    while not want(got) and (left := deadline - time.monotonic()) > 0:
        try:
            got.append(peer.recv(left))
        except PeerFailed:
            break
    return got


def _frames(r: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC frames of a /mcp response (a JSON body or an event stream)."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(x[len("data: ") :]) for x in r.text.splitlines() if x.startswith("data: ")
        ]
    return [r.json()] if r.content else []


def _session(mcp: httpx.Client, rev: str = LEGACY) -> tuple[dict[str, str], dict[str, Any]]:
    """A legacy HTTP session's headers, and its initialize result."""
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "c2", "version": "1"},
    }
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Accept": BOTH}
    if rev >= "2025-06-18":
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    result: dict[str, Any] = r.json()["result"]
    return headers, result


def _legacy(
    mcp: httpx.Client, headers: dict[str, str], method: str, params: dict[str, Any], rid: Any = 1
) -> list[dict[str, Any]]:
    frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return _frames(mcp.post("/mcp", json=frame, headers=headers))


def _modern(
    mcp: httpx.Client,
    method: str,
    params: dict[str, Any],
    *,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
    rid: Any = 1,
) -> list[dict[str, Any]]:
    headers = modern_headers(method, name=name, accept=BOTH)
    frame = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**params, "_meta": meta or params.get("_meta") or META},
    }
    return _frames(mcp.post("/mcp", json=frame, headers=headers))


def _listen_frame(rid: Any, notifications: dict[str, Any]) -> dict[str, Any]:
    params = {"notifications": notifications, "_meta": META}
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}


@contextmanager
def _listening(url: str, rid: Any, notifications: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """An HTTP ``subscriptions/listen`` stream, read by a thread into the yielded list
    (the acknowledgement is in it on entry); the stream is closed on exit."""
    got: list[dict[str, Any]] = []
    headers = modern_headers("subscriptions/listen", accept=BOTH)

    def read(lines: Iterator[str]) -> None:
        try:
            for line in lines:
                if line.startswith("data: "):
                    got.append(json.loads(line[len("data: ") :]))
        except httpx.HTTPError:
            pass  # closed by the test

    with (
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("POST", "/mcp", json=_listen_frame(rid, notifications), headers=headers) as r,
    ):
        assert r.status_code == 200
        threading.Thread(target=read, args=(r.iter_lines(),), daemon=True).start()
        wait_until(lambda: bool(got), message="an acknowledgement")
        yield got


def _call(server: str, tool: str, arguments: dict[str, Any], meta: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }
    if meta is not None:
        params["_meta"] = meta
    return params


def _gzip_resource(name: str) -> dict[str, Any]:
    """server-everything registers a resource (and says its list changed)."""
    args = {"name": name, "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}
    return _call("everything", "gzip-file-as-resource", args)
