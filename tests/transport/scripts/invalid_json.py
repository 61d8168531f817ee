"""Writes one good frame, then a line that is not JSON, then waits for stdin to end."""

import sys

sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"before"}\n')
sys.stdout.buffer.write(b"this is not json\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
