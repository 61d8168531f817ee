"""Writes one good frame, then one line of argv[1] bytes, then waits for stdin to end."""

import sys

size = int(sys.argv[1])
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"before"}\n')
chunk = b"a" * 65536
written = 0
while written < size:
    sys.stdout.buffer.write(chunk)
    written += len(chunk)
sys.stdout.buffer.write(b"\n")
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
