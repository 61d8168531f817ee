"""Constants and helpers shared by the Streamable HTTP obligation tests (S-HTTP) in this
package: the request builders, a legacy session's handshake, and the event-stream parser.
A 2026-07-28 request is built with ``support.modern`` (``META`` is its ``_meta`` without
``clientInfo``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from support.modern import modern_meta
from support.schemas import FrameLog

META = modern_meta(client=None)
BOTH = "application/json, text/event-stream"
JSON_ONLY = {"Accept": "application/json"}
LEGACY_HTTP = ["2025-03-26", "2025-06-18", "2025-11-25"]


# -- helpers -------------------------------------------------------------------


def _initialize(mcp: httpx.Client, rev: str, rid: int = 1) -> httpx.Response:
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return mcp.post(
        "/mcp", json={"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}
    )


def _session(mcp: httpx.Client, rev: str, sent_frames: FrameLog | None = None) -> dict[str, str]:
    r = _initialize(mcp, rev)
    assert r.status_code == 200, r.text
    if sent_frames is not None:
        sent_frames.sent(r.json(), rev, answering="initialize")
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    if rev != "2025-03-26":  # the header exists from 2025-06-18 on
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    return headers


def _slow(seconds: float, steps: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    args = {"server": "demo", "tool": "slow", "arguments": {"seconds": seconds, "steps": steps}}
    params: dict[str, Any] = {"name": "mcpx_call", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return params


def _echo(text: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    args = {"server": "demo", "tool": "echo", "arguments": {"text": text}}
    params: dict[str, Any] = {"name": "mcpx_call", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return params


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def _parse(lines: list[str]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """An event stream's data frames, its comment lines, and its other field lines."""
    frames, comments, fields = [], [], []
    for line in lines:
        if line.startswith(":"):
            comments.append(line)
        elif line.startswith("data: "):
            frames.append(json.loads(line[len("data: ") :]))
        elif line:
            fields.append(line)
    return frames, comments, fields
