"""HTTP/1.1 by hand over a loopback socket, for requests no client library would send:
a head of chosen bytes, a body that streams until the server answers, a header that
never ends. And the daemon's resident memory, read from /proc."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Sent:
    """How much of a request went out before the server answered (or all of it)."""

    bytes: int = 0
    answered_early: bool = False
    broken: bool = False  # the server closed before we stopped sending
    times: list[float] = field(default_factory=list)


@contextmanager
def connection(url: str, timeout: float = 30) -> Iterator[socket.socket]:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout)
    try:
        yield sock
    finally:
        sock.close()


def host_of(url: str) -> str:
    return urlsplit(url).netloc


def head(method: str, path: str, host: str, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def readable(sock: socket.socket, wait: float = 0) -> bool:
    ready, _, _ = select.select([sock], [], [], wait)
    return bool(ready)


def send_until_answered(sock: socket.socket, pieces: Iterable[bytes]) -> Sent:
    """Send ``pieces`` in turn, stopping as soon as the server has begun to answer."""
    sent = Sent()
    for piece in pieces:
        if readable(sock):
            sent.answered_early = True
            return sent
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            sent.broken = True
            return sent
        sent.bytes += len(piece)
    return sent


def read_answer(sock: socket.socket, limit: float = 30) -> Answer:
    """One response: its head, then a Content-Length body or everything up to EOF."""
    deadline = time.monotonic() + limit
    data = b""
    while b"\r\n\r\n" not in data:
        data += _recv(sock, deadline)
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *lines = raw_head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    while length is not None and len(rest) < int(length):
        rest += _recv(sock, deadline)
    if length is None and headers.get("transfer-encoding") != "chunked":
        while chunk := _recv(sock, deadline, eof_ok=True):
            rest += chunk
    return Answer(int(status_line.split()[1]), headers, rest)


def _recv(sock: socket.socket, deadline: float, *, eof_ok: bool = False) -> bytes:
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not readable(sock, remaining):
        raise TimeoutError("no answer from the server in time")
    chunk = sock.recv(1 << 16)
    if not chunk and not eof_ok:
        raise ConnectionError("the server closed before answering")
    return chunk


def chunked(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """``pieces`` in chunked transfer coding, the last chunk included."""
    for piece in pieces:
        yield b"%x\r\n%s\r\n" % (len(piece), piece)
    yield b"0\r\n\r\n"


def rss_kib(pid: int) -> int:
    """The process's resident set size now (VmRSS), in KiB."""
    return _status_kib(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int:
    """The most the process has had resident since ``reset_peak_rss`` (VmHWM), in KiB."""
    return _status_kib(pid, "VmHWM")


def reset_peak_rss(pid: int) -> None:
    """Start the process's peak resident size afresh from what it holds now (Linux >= 4.0)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")
