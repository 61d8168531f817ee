"""Request bodies are bounded per route, refused before they are buffered (issue 18, defect 4).

A declared Content-Length over the route's limit is answered 413 at once, before a byte
of the body is sent; a chunked body is counted as it comes and answered 413 as soon as
it crosses the limit, long before it ends. A body of exactly the limit is served. The
daemon's memory is back where it was after the refused requests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.raw_http import (
    Answer,
    chunked,
    connection,
    head,
    host_of,
    peak_rss_kib,
    read_answer,
    reset_peak_rss,
    rss_kib,
    send_until_answered,
)

LARGE = 1024 * 1024  # http.maxBody here: /mcp, /v1/call, /v1/prompts/get, question answers
SMALL = 16 * 1024  # http.maxSmallBody here: every other route
PIECE = 64 * 1024

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
CALL = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
READ = {"server": "demo", "uri": "demo://readme"}
# (path, its limit, the setting that names it, a request that route serves)
ROUTES = [
    ("/mcp", LARGE, "http.maxBody", INITIALIZE),
    ("/v1/call", LARGE, "http.maxBody", CALL),
    ("/v1/resources/read", SMALL, "http.maxSmallBody", READ),
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    limits = {"http.maxBody": LARGE, "http.maxSmallBody": SMALL}
    with running_daemon(tmp_path_factory.mktemp("body"), servers, limits) as d:
        yield d


def _padded(doc: dict[str, Any], size: int) -> bytes:
    # JSON may end in whitespace: the same request, exactly ``size`` bytes long.
    raw = json.dumps(doc).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


def _post_head(daemon: Daemon, path: str, extra: list[tuple[str, str]]) -> bytes:
    headers = [("Content-Type", "application/json"), ("Accept", "application/json"), *extra]
    return head("POST", path, host_of(daemon.info["url"]), headers)


def _assert_refused(answer: Answer, path: str, limit: int, setting: str) -> None:
    assert answer.status == 413, answer
    assert answer.headers.get("connection") == "close"
    doc = answer.json()
    if path == "/mcp":
        # A JSON-RPC error, so an MCP client can show why.
        assert doc["jsonrpc"] == "2.0" and "id" not in doc
        message = doc["error"]["message"]
    else:
        assert doc["error"]["code"] == "body_too_large"
        assert doc["error"]["details"] == {"limit": limit, "setting": setting}
        message = doc["error"]["message"]
    assert setting in message and str(limit) in message


@pytest.mark.parametrize(("path", "limit", "setting", "doc"), ROUTES)
def test_a_body_of_exactly_the_limit_is_served(
    daemon: Daemon, path: str, limit: int, setting: str, doc: dict[str, Any]
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as client:
        r = client.post(
            path, content=_padded(doc, limit), headers={"Content-Type": "application/json"}
        )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("path", "limit", "setting", "doc"), ROUTES)
@pytest.mark.parametrize("over", [1, 100 * 1024 * 1024])
def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(
    daemon: Daemon, path: str, limit: int, setting: str, doc: dict[str, Any], over: int
) -> None:
    with connection(daemon.info["url"]) as sock:
        sock.sendall(_post_head(daemon, path, [("Content-Length", str(limit + over))]))
        # Not a byte of the body went out: the answer comes from the head alone.
        _assert_refused(read_answer(sock, limit=10), path, limit, setting)


@pytest.mark.parametrize(("path", "limit", "setting", "doc"), ROUTES)
def test_a_chunked_body_of_exactly_the_limit_is_served(
    daemon: Daemon, path: str, limit: int, setting: str, doc: dict[str, Any]
) -> None:
    body = _padded(doc, limit)
    pieces = [body[i : i + PIECE] for i in range(0, len(body), PIECE)]
    with connection(daemon.info["url"]) as sock:
        sock.sendall(_post_head(daemon, path, [("Transfer-Encoding", "chunked")]))
        sent = send_until_answered(sock, chunked(pieces))
        assert not sent.answered_early
        answer = read_answer(sock)
    assert answer.status == 200, answer


@pytest.mark.parametrize(("path", "limit", "setting", "doc"), ROUTES)
def test_a_chunked_body_is_refused_as_soon_as_it_crosses_the_limit(
    daemon: Daemon, path: str, limit: int, setting: str, doc: dict[str, Any]
) -> None:
    endless = (b" " * PIECE for _ in range(64 * 1024 * 1024 // PIECE))  # 64 MiB if read whole
    with connection(daemon.info["url"]) as sock:
        sock.sendall(_post_head(daemon, path, [("Transfer-Encoding", "chunked")]))
        sent = send_until_answered(sock, chunked([_padded(doc, 256), *endless]))
        # Answered while the body was still coming: what was sent is the limit plus
        # what the sockets' buffers held, far from the whole body.
        assert sent.answered_early or sent.broken, sent
        assert sent.bytes < 32 * 1024 * 1024, sent
        _assert_refused(read_answer(sock, limit=10), path, limit, setting)


def test_memory_is_back_after_bodies_over_the_limit(daemon: Daemon) -> None:
    url = daemon.info["url"]
    with httpx.Client(base_url=url, timeout=60) as client:  # warm: every route used once
        for path, _, _, doc in ROUTES:
            client.post(path, json=doc)
    reset_peak_rss(daemon.proc.pid)
    before = rss_kib(daemon.proc.pid)
    hundred_mb = 100 * 1024 * 1024
    statuses = []
    for path, _, _, doc in ROUTES[:2]:
        for framing in ("length", "chunked"):
            pieces = (b" " * (1024 * 1024) for _ in range(hundred_mb // (1024 * 1024)))
            with connection(url) as sock:
                if framing == "length":
                    length = [("Content-Length", str(hundred_mb + 256))]
                    sock.sendall(_post_head(daemon, path, length))
                    sent = send_until_answered(sock, [_padded(doc, 256), *pieces])
                else:
                    sock.sendall(_post_head(daemon, path, [("Transfer-Encoding", "chunked")]))
                    sent = send_until_answered(sock, chunked([_padded(doc, 256), *pieces]))
                statuses.append((path, framing, read_answer(sock, limit=60).status, sent.bytes))
    after, peak = rss_kib(daemon.proc.pid), peak_rss_kib(daemon.proc.pid)
    # Not even for a moment: the bodies were never held.
    assert peak <= before * 1.2, f"RSS {before} KiB before, {peak} KiB at most: {statuses}"
    assert after <= before * 1.2, f"RSS {before} KiB before, {after} KiB after"
    assert {status for _, _, status, _ in statuses} == {413}, statuses
    with httpx.Client(base_url=url, timeout=60) as client:  # and the daemon still serves
        assert client.post("/v1/call", json=CALL).json()["content"][0]["text"] == "hi"
