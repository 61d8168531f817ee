"""A minimal stdio peer: answers every request line with a result naming what it got.

Requests: any method → {"method": m, "params": p}; "environ" → the cwd and one variable;
"exit" → exits with params["status"]. Notification "stderr" → writes params["lines"] to
stderr. Exits 0 when stdin ends.
"""

import json
import os
import sys
from typing import Any


def answer(frame: dict[str, Any]) -> dict[str, Any] | None:
    method, params = frame.get("method"), frame.get("params") or {}
    if "id" not in frame:
        if method == "stderr":
            for line in params["lines"]:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()
        return None
    if method == "exit":
        sys.exit(params["status"])
    if method == "environ":
        result: dict[str, Any] = {"cwd": os.getcwd(), "value": os.environ.get(params["name"])}
    else:
        result = {"method": method, "params": params}
    return {"jsonrpc": "2.0", "id": frame["id"], "result": result}


for line in sys.stdin.buffer:
    reply = answer(json.loads(line))
    if reply is not None:
        sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
        sys.stdout.buffer.flush()
