"""Talking raw JSON-RPC to ``python -m mcpx.demo`` over its pipes, for the demo tests.

``DemoPeer`` starts the server as a real process, writes frames to its stdin and reads its
stdout on a thread, so every read has a timeout. Every frame the server sends is put into
the test's ``FrameLog`` as it arrives, with the revision in force for it: a response is
judged by the revision of the request it answers, a progress notification by its request's,
a listen acknowledgement by its listen's, anything else by the peer's current revision. So
"every frame the server sent validates" holds by construction, not by remembering to check.

``peer.rev`` is the revision the peer speaks: legacy requests go out bare (the connection's
negotiated revision applies), modern ones (2026-07-28) carry the per-request ``_meta``.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import IO, Any

from mcpx import spec
from support.schemas import FrameLog

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

SERVER_ARGV = [sys.executable, "-m", "mcpx.demo"]
TIMEOUT = 10.0  # seconds any single expected frame may take


class PeerError(AssertionError):
    """The server did not answer as expected in time (or closed its stdout)."""


def modern_meta(rev: str = spec.NEWEST, **extra: Any) -> dict[str, Any]:
    """The per-request ``_meta`` of a 2026-07-28 request."""
    return {
        META_VERSION: rev,
        META_CAPABILITIES: {},
        META_CLIENT: {"name": "mcpx-demo-tests", "version": "0"},
        **extra,
    }


def is_modern(rev: str) -> bool:
    return spec.era_of(rev) is spec.Era.MODERN


class DemoPeer:
    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes], log: FrameLog) -> None:
        self.proc = proc
        self.log = log
        self.rev = spec.OLDEST  # what a connection that never initialized is served as
        self.received: list[dict[str, Any]] = []  # every frame, batches flattened, in order
        self._stderr = stderr
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._asked: dict[Any, tuple[str, str]] = {}  # request id -> (method, revision)
        self._tokens: dict[Any, str] = {}  # progress token -> revision of its request
        self._stash: list[dict[str, Any]] = []  # frames read while waiting for another
        self._next_id = 1000
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- the handshake of each era ---------------------------------------------------------

    def handshake(self, rev: str) -> Any:
        """Legacy: initialize + initialized. Modern: server/discover. Returns the result."""
        if is_modern(rev):
            self.rev = rev
            return self.result("server/discover")
        params = {
            "protocolVersion": rev,
            "capabilities": {},
            "clientInfo": {"name": "mcpx-demo-tests", "version": "0"},
        }
        result = self.result("initialize", params)
        self.rev = result["protocolVersion"]
        self.notify("notifications/initialized")
        return result

    # -- requests --------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        rid: Any = None,
        token: Any = None,
        meta: Mapping[str, Any] | None = None,
        rev: str | None = None,
    ) -> Any:
        """Send a request in the peer's era; returns its id. ``meta`` adds ``_meta`` keys."""
        rev = rev or self.rev
        if rid is None:
            self._next_id += 1
            rid = self._next_id
        body = dict(params or {})
        extra = dict(meta or {})
        if token is not None:
            extra["progressToken"] = token
            self._tokens[token] = rev
        if is_modern(rev) or extra:
            body["_meta"] = {**(modern_meta(rev) if is_modern(rev) else {}), **extra}
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if body or is_modern(rev):
            frame["params"] = body
        self.expect(rid, method, rev)
        self.send(frame)
        return rid

    def call(self, method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """Send a request and return its whole response frame."""
        return self.response(self.request(method, params, **kw))

    def result(self, method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """Send a request and return its result; PeerError on an error response."""
        answer = self.call(method, params, **kw)
        if "result" not in answer:
            raise PeerError(f"{method} failed: {answer}")
        return answer["result"]

    def error(self, method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        """Send a request and return its error object; PeerError on a result."""
        answer = self.call(method, params, **kw)
        if "error" not in answer:
            raise PeerError(f"{method} did not fail: {answer}")
        return answer["error"]

    def tool(self, name: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return self.result("tools/call", {"name": name, "arguments": dict(arguments or {})}, **kw)

    def expect(self, rid: Any, method: str, rev: str | None = None) -> None:
        """Note that ``rid`` asks ``method``, for raw sends whose answer is validated too."""
        self._asked[rid] = (method, rev or self.rev)

    def expect_progress(self, token: Any, rev: str | None = None) -> None:
        """Note that progress for ``token`` belongs to a request of ``rev`` (raw sends)."""
        self._tokens[token] = rev or self.rev

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = dict(params)
        self.send(frame)

    def send(self, frame: Any) -> None:
        self.send_raw(json.dumps(frame).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    # -- reading ---------------------------------------------------------------------------

    def next_frame(self, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        """The next frame (stashed ones first), or None at end of stdout."""
        if self._stash:
            return self._stash.pop(0)
        return self._receive(timeout)

    def response(self, rid: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The response to ``rid``; frames met on the way are stashed for later reads."""
        for i, frame in enumerate(self._stash):
            if _answers(frame, rid):
                return self._stash.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            got = self._receive(max(0.0, deadline - time.monotonic()))
            if got is None:
                raise PeerError(f"stdout ended before the response to {rid!r}: {self.stderr()}")
            if _answers(got, rid):
                return got
            self._stash.append(got)

    def notification(self, method: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next notification named ``method`` (others are stashed)."""
        for i, frame in enumerate(self._stash):
            if frame.get("method") == method:
                return self._stash.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            got = self._receive(max(0.0, deadline - time.monotonic()))
            if got is None:
                raise PeerError(f"stdout ended before {method}: {self.stderr()}")
            if got.get("method") == method:
                return got
            self._stash.append(got)

    def stashed(self, method: str) -> list[dict[str, Any]]:
        """Notifications named ``method`` read so far and not yet taken."""
        return [f for f in self._stash if f.get("method") == method]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def rest(self, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        """Every frame until stdout ends (after closing stdin, say)."""
        frames = list(self._stash)
        self._stash.clear()
        deadline = time.monotonic() + timeout
        while (frame := self._receive(max(0.0, deadline - time.monotonic()))) is not None:
            frames.append(frame)
        return frames

    def wait(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PeerError(f"the server still runs after {timeout}s") from None

    def stderr(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise PeerError(f"nothing from the server in {timeout:.1f}s") from None
        if line is None:
            self._lines.put(None)  # stays ended for later reads
            return None
        if not line.endswith(b"\n"):
            raise PeerError(f"a frame without its newline: {line!r}")
        decoded = json.loads(line)
        frames: list[dict[str, Any]] = decoded if isinstance(decoded, list) else [decoded]
        for frame in frames:
            self._record(frame)
        if isinstance(decoded, list):  # a batch answer is read as one frame: a list
            return {"batch": decoded}
        return frames[0]

    def _record(self, frame: dict[str, Any]) -> None:
        self.received.append(frame)
        method, rev = self._asked.get(frame.get("id"), (None, self.rev))
        if method == "initialize" and "result" in frame:
            # InitializeResult is spelled in the revision it negotiates.
            rev = frame["result"].get("protocolVersion", rev)
        if "method" in frame:
            params = frame.get("params") or {}
            rev = self._tokens.get(params.get("progressToken"), self.rev)
            listen = (params.get("_meta") or {}).get(SUBSCRIPTION_ID)
            if listen is not None and listen in self._asked:
                rev = self._asked[listen][1]
        self.log.sent(frame, rev, sender="server", answering=method)


# The ``start`` fixture: start(rev=None, argv=None) -> a peer, handshaken when rev is given.
Start = Callable[..., DemoPeer]


def _answers(frame: dict[str, Any], rid: Any) -> bool:
    return "method" not in frame and "id" in frame and frame["id"] == rid


@contextmanager
def demo_peer(log: FrameLog, argv: list[str] | None = None) -> Iterator[DemoPeer]:
    """Start the demo server; at the end close its stdin and stop exactly that process."""
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            argv or SERVER_ARGV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
        peer = DemoPeer(proc, stderr, log)
        try:
            yield peer
        finally:
            assert proc.stdin is not None and proc.stdout is not None
            with suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # our own child's group, by id
                proc.wait(timeout=5)
            with suppress(PeerError):
                peer.rest(timeout=5)  # frames the test never read are validated too
            peer._reader.join(timeout=5)
            proc.stdout.close()
