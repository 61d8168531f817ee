"""A tiny legacy MCP server on stdio that lists the tools of one catalogue file.

    python bench/catalogue_server.py tests/data/tool_catalogue/github.json

Answers ``initialize`` (the client's revision if it is a legacy one, else 2025-11-25),
``tools/list`` (every tool of the file, one page), ``ping`` and ``tools/call`` (a text echo
of the arguments); any other request is -32601 (so a ``server/discover`` probe reads it as
legacy), notifications are ignored. For ``bench/surface_tokens.py``: no other behaviour.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def answer(request: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        result: dict[str, Any] = {
            "protocolVersion": asked if asked in LEGACY else LEGACY[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "catalogue", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        text = json.dumps(params.get("arguments") or {})
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    tools = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))["tools"]
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if isinstance(request, dict) and "id" in request and "method" in request:
            sys.stdout.write(json.dumps(answer(request, tools)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
