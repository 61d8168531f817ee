"""Ignores SIGTERM and the end of stdin: only SIGKILL ends it. Says "ready" first."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"ready"}\n')
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
while True:
    time.sleep(60)
