"""An ASGI app served by uvicorn in a thread, on an ephemeral 127.0.0.1 port: for fake
HTTP peers a test scripts itself."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def loopback_socket() -> socket.socket:
    """Bound and listening before any server runs, so clients may connect at once: the
    kernel queues them until uvicorn accepts. No waiting for startup is needed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def running_app(app: Any, sock: socket.socket) -> Iterator[None]:
    """Serve ``app`` on ``sock`` for the ``with`` block (h11, like most peers)."""
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        http="h11",
        ws="none",
        timeout_graceful_shutdown=1,
    )
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
        sock.close()
