"""Request heads are bounded in bytes and in header count (issue 18, defect 4).

Over ``http.maxHeaderBytes`` (the request line and the header fields) or
``http.maxHeaders``, the daemon answers 431 and closes, without buffering the rest: one
huge header is refused while it is still being sent, and the daemon answers /health
meanwhile. A head of exactly the limits is served.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.raw_http import (
    Answer,
    connection,
    head,
    host_of,
    peak_rss_kib,
    read_answer,
    readable,
    reset_peak_rss,
    rss_kib,
    send_until_answered,
)

HEAD_BYTES = 32 * 1024
HEADERS = 50


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    limits = {"http.maxHeaderBytes": HEAD_BYTES, "http.maxHeaders": HEADERS}
    with running_daemon(tmp_path_factory.mktemp("head"), servers, limits) as d:
        yield d


def _exchange(daemon: Daemon, raw: bytes) -> Answer:
    with connection(daemon.info["url"]) as sock:
        sock.sendall(raw)
        return read_answer(sock, limit=10)


def _sized_head(daemon: Daemon, size: int, path: str = "/health") -> bytes:
    # One padding header makes the whole head (request line to blank line) ``size`` bytes.
    bare = head("GET", path, host_of(daemon.info["url"]), [("X-Pad", "")])
    raw = head("GET", path, host_of(daemon.info["url"]), [("X-Pad", "a" * (size - len(bare)))])
    assert len(raw) == size
    return raw


def _counted_head(daemon: Daemon, count: int, path: str = "/health") -> bytes:
    # Host is one of them.
    extra = [(f"X-H{i}", "1") for i in range(count - 1)]
    return head("GET", path, host_of(daemon.info["url"]), extra)


def _assert_refused(answer: Answer, setting: str, limit: int, mcp: bool = False) -> None:
    assert answer.status == 431, answer
    assert answer.headers.get("connection") == "close"
    doc = answer.json()
    if mcp:
        assert doc["jsonrpc"] == "2.0" and doc["error"]["code"] == -32600
    else:
        assert doc["error"]["details"] == {"limit": limit, "setting": setting}
    assert setting in doc["error"]["message"] and str(limit) in doc["error"]["message"]


def test_a_head_of_exactly_the_byte_limit_is_served(daemon: Daemon) -> None:
    assert _exchange(daemon, _sized_head(daemon, HEAD_BYTES)).status == 200


def test_a_head_one_byte_over_is_refused(daemon: Daemon) -> None:
    answer = _exchange(daemon, _sized_head(daemon, HEAD_BYTES + 1))
    _assert_refused(answer, "http.maxHeaderBytes", HEAD_BYTES)


def test_a_request_line_over_the_byte_limit_is_refused(daemon: Daemon) -> None:
    path = "/health?q=" + "a" * HEAD_BYTES
    raw = head("GET", path, host_of(daemon.info["url"]))
    _assert_refused(_exchange(daemon, raw), "http.maxHeaderBytes", HEAD_BYTES)


def test_exactly_the_header_count_is_served(daemon: Daemon) -> None:
    assert _exchange(daemon, _counted_head(daemon, HEADERS)).status == 200


def test_one_header_over_the_count_is_refused(daemon: Daemon) -> None:
    answer = _exchange(daemon, _counted_head(daemon, HEADERS + 1))
    _assert_refused(answer, "http.maxHeaders", HEADERS)
    # /mcp is told in JSON-RPC.
    answer = _exchange(daemon, _counted_head(daemon, HEADERS + 1, "/mcp"))
    _assert_refused(answer, "http.maxHeaders", HEADERS, mcp=True)


def test_two_hundred_thousand_headers_are_refused_early(daemon: Daemon) -> None:
    lines = b"".join(b"X-H%d: 1\r\n" % i for i in range(200_000))
    # The blank line that would end the head is never sent: an answer can only be a refusal
    # made while the head was still coming.
    start = head("GET", "/health", host_of(daemon.info["url"]))[:-2]
    with connection(daemon.info["url"]) as sock:
        sent = send_until_answered(sock, [start, *_pieces(lines, 16 * 1024)])
        _assert_refused(read_answer(sock, limit=10), "http.maxHeaders", HEADERS)
    assert not sent.broken, sent  # the rest was read and dropped: the 431 was not lost


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_one_huge_header_is_refused_while_sent_and_health_answers_meanwhile(
    daemon: Daemon,
) -> None:
    url = daemon.info["url"]
    total = 128 * 1024 * 1024
    # Slowly at first (8 KiB at a time, /health asked between), then by the megabyte.
    pieces = [8 * 1024] * 128 + [1024 * 1024] * ((total - 1024 * 1024) // (1024 * 1024))
    with httpx.Client(base_url=url, timeout=30) as health:
        assert health.get("/health").status_code == 200  # connected and warm
        reset_peak_rss(daemon.proc.pid)
        before = rss_kib(daemon.proc.pid)
        waits: list[float] = []
        sent = 0
        with connection(url) as sock:
            sock.sendall(head("GET", "/health", host_of(url))[:-2] + b"X-Big: ")
            for size in pieces:
                if readable(sock):
                    break
                try:
                    sock.sendall(b"a" * size)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += size
                started = time.monotonic()
                assert health.get("/health").status_code == 200
                waits.append(time.monotonic() - started)
            assert sent < total, "the whole 128 MiB header was taken in"
            answer = read_answer(sock, limit=10)
        _assert_refused(answer, "http.maxHeaderBytes", HEAD_BYTES)
        assert sent <= HEAD_BYTES + 1024 * 1024, sent  # refused within a piece or two
        assert waits and max(waits) < 1.0, waits
        after, peak = rss_kib(daemon.proc.pid), peak_rss_kib(daemon.proc.pid)
        assert peak <= before * 1.2, f"RSS {before} KiB before, {peak} KiB at most"
        assert after <= before * 1.2, f"RSS {before} KiB before, {after} KiB after"
        assert health.get("/health").status_code == 200
