"""The OAuth fixture (``tests/fixtures/oauth_server.py``) as a context manager: a real
authorization server, with a protected MCP endpoint, on an ephemeral loopback port."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .peers import peer_python

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "oauth_server.py"
INTROSPECTION_SECRET_ENV = "OAUTH_FIXTURE_INTROSPECTION_SECRET"
_READY = "listening on "


@contextmanager
def oauth_server(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 60
) -> Iterator[str]:
    """Start the fixture (``args``: its flags, e.g. ``--token-ttl``); yield its base URL
    (the issuer) once it said it listens; end it by its PID."""
    argv = [str(peer_python("2.3.0")), str(FIXTURE), "--port", "0", *args]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"the OAuth fixture did not say it listens in {timeout}s") from None
        if line is None or not line.startswith(_READY):
            raise RuntimeError(f"the OAuth fixture did not start (status {proc.poll()})")
        yield line[len(_READY) :].strip()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        reader.join(timeout=10)  # at the pipe's end once the process is gone
        if proc.stdout is not None:
            proc.stdout.close()
