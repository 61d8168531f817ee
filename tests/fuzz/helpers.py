"""What the fuzz tests share: their bounds, and the checks run on the daemon after every
example (the frames it traced, its log, its health).

The daemon traces every frame it sends a host (``log.frames``, one JSON line each, written
before the frame goes out); ``Watch`` reads only the lines added since the example began,
so each example is judged on its own frames and a failure shrinks to the input that caused
it. The same strict schema sweep ``running_daemon`` runs at teardown is applied.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import httpx
from hypothesis import HealthCheck, settings

from support.daemon import _UNJUDGED, Daemon
from support.modern import modern_headers, modern_meta, modern_request
from support.schemas import frame_errors

EXAMPLES_ENV: Final = "MCPX_FUZZ_EXAMPLES"
DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
# Every call is cut short well before a test would wait on it for long.
DAEMON_SETTINGS: Final = {"pool.callTimeout": "5s", "transport.sseKeepAlive": "2s"}
ECHO_CALL: Final = {
    "name": "mcpx_call",
    "arguments": {"server": "demo", "tool": "echo", "arguments": {"text": "still here"}},
}


def bounded(default: int) -> settings:
    """Hypothesis settings for a fuzz test, no example database: ``default`` examples, the
    same ones every run; or as many as ``$MCPX_FUZZ_EXAMPLES`` says, new ones every run
    (a failure prints the seed that gives them again: ``--hypothesis-seed``)."""
    raw = os.environ.get(EXAMPLES_ENV, "").strip()
    return settings(
        max_examples=int(raw) if raw else default,
        deadline=None,
        database=None,
        derandomize=not raw,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )


# -- the daemon after an example ----------------------------------------------


def _lines_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    if not path.exists():
        return [], offset
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    # Only whole lines: each is one write, but read between two of them it may be cut.
    whole = data[: data.rfind(b"\n") + 1]
    # Split on newlines only: JSON may carry U+2028 or U+0085 raw.
    lines = [json.loads(x) for x in whole.decode("utf-8").split("\n") if x.strip()]
    return lines, offset + len(whole)


class Watch:
    """What the daemon traced and logged since ``mark`` (or since it was made)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._frames_at = 0
        self._log_at = 0
        self.mark()

    def mark(self) -> None:
        self._frames_at = _size(self.daemon.frames_path)
        self._log_at = _size(self.daemon.state / "daemon.log")

    def frames(self) -> list[dict[str, Any]]:
        """The traced lines since the mark: ``{"rev", "answering", "frame"}`` each."""
        lines, self._frames_at = _lines_from(self.daemon.frames_path, self._frames_at)
        return lines

    def log(self) -> list[dict[str, Any]]:
        lines, self._log_at = _lines_from(self.daemon.state / "daemon.log", self._log_at)
        return lines


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def frame_problems(traced: list[dict[str, Any]]) -> list[str]:
    """How each traced frame fails the strict schema of the revision it was sent in."""
    out = []
    for line in traced:
        rev = line["rev"] or _UNJUDGED
        for p in frame_errors(line["frame"], rev, sender="server", answering=line["answering"]):
            out.append(f"({rev}, answering {line['answering']}): {p}\n  {line['frame']}")
    return out


def crashes(log: list[dict[str, Any]], *, told: str | None = None) -> list[dict[str, Any]]:
    """Log lines that say the daemon failed: an exception logged (``exc``), or an error,
    except errors of the logger ``told`` (one that reports what others did wrong)."""
    return [
        x
        for x in log
        if "exc" in x
        or x.get("level") == "critical"
        or (x.get("level") == "error" and x.get("logger") != told)
    ]


def documented_upstream_failure(frame: Mapping[str, Any]) -> bool:
    """Whether an error frame answered with HTTP 500 is one the docs describe: an
    upstream's own failure relayed (its code kept in ``data``), or mcpx's own failure to
    reach it (``data.origin`` "mcpx" naming the server, or an ``upstream_*`` op error).
    A defect caught by dispatch (``internal error: ...``) is none of these."""
    error = frame.get("error")
    if not isinstance(error, Mapping) or error.get("code") != -32603:
        return False
    data = error.get("data")
    if isinstance(data, Mapping):
        if data.get("origin") == "mcpx" and "server" in data:
            return True  # mcpx could not reach the upstream (C-ERR-6's marking)
        if "code" in data:
            return True  # the upstream's own error, its code outside 2026-07-28's set
    return str(error.get("message", "")).startswith(("upstream_error:", "upstream_timeout:"))


def stream_frames(response: httpx.Response, *, first_comment: bool = False) -> list[Any]:
    """The frames of an event stream, read until the answer (a response frame, or a
    listen's acknowledgement; with ``first_comment``, a GET stream's first comment), then
    left: a stream that stays open is never waited out."""
    out: list[Any] = []
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
            continue
        if line.startswith(":") and first_comment:
            return out
        if line or not data:
            continue
        frame = json.loads("\n".join(data))
        data = []
        out.append(frame)
        if isinstance(frame, dict) and (
            "result" in frame
            or "error" in frame
            or frame.get("method") == "notifications/subscriptions/acknowledged"
        ):
            return out
    return out


def clients(daemon: Daemon) -> tuple[httpx.Client, httpx.Client]:
    """Two clients for a module's examples: /mcp over loopback TCP, the rest over the unix
    socket. Made once: a new httpx client costs ~50 ms (its TLS context), more than most
    examples take."""
    mcp = httpx.Client(base_url=daemon.info["url"], timeout=30)
    return mcp, daemon.http()


def healthy(api: httpx.Client) -> bool:
    r = api.get("/health")
    return r.status_code == 200 and r.json() == {"ok": True}


def assert_unharmed(watch: Watch, api: httpx.Client, *, told: str | None = None) -> None:
    """After one example: nothing logged as a failure since the mark (``told``: as in
    ``crashes``), and ``/health`` answering."""
    logged = watch.log()
    assert not crashes(logged, told=told), logged
    assert healthy(api)


def echo_still_works(mcp: httpx.Client) -> str:
    """A plain 2026-07-28 ``tools/call`` of the demo's echo over /mcp: its text."""
    meta = modern_meta(client="fuzz")
    frame = modern_request(1, "tools/call", ECHO_CALL, meta)
    headers = modern_headers("tools/call", ECHO_CALL)
    r = mcp.post("/mcp", json=frame, headers=headers)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert not result.get("isError"), result
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")
