"""Answers each request only after writing 50 MiB to stderr (a client must keep reading)."""

import json
import sys

LINE = b"x" * 1023 + b"\n"
for line in sys.stdin.buffer:
    frame = json.loads(line)
    for _ in range(50 * 1024):
        sys.stderr.buffer.write(LINE)
    sys.stderr.buffer.write(b"flood done\n")
    sys.stderr.buffer.flush()
    reply = {"jsonrpc": "2.0", "id": frame["id"], "result": {}}
    sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
    sys.stdout.buffer.flush()
