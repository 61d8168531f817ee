"""Starts a grandchild that sleeps (same process group), reports its pid, then echoes.

When stdin ends this process exits and leaves the grandchild behind: only signalling the
whole group ends it.
"""

import json
import subprocess
import sys

child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
hello = {"jsonrpc": "2.0", "method": "child", "params": {"pid": child.pid}}
sys.stdout.buffer.write(json.dumps(hello).encode() + b"\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
