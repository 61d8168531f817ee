"""Writes one piece of stdout per line read from stdin, so that each is its own read on
the other side: answers alone, answers beside a notification, a line cut in two, then a
line that is not JSON. Then waits for stdin to end."""

import sys

PIECES = [
    b'{"jsonrpc":"2.0","id":1,"result":{}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\n'
    b'{"jsonrpc":"2.0","id":2,"result":{}}\n',
    b'\n{"jsonrpc":"2.0","id":3,"res',
    b'ult":{}}\n{"jsonrpc":"2.0","id":4,"result":{"text":"a \\"method\\"-free answer"}}\n',
    b"this is not json\n",
]

for piece in PIECES:
    if not sys.stdin.buffer.readline():
        sys.exit(0)
    sys.stdout.buffer.write(piece)
    sys.stdout.buffer.flush()
sys.stdin.buffer.read()
