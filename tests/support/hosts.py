"""Real MCP host clients against mcpx's server side: ``mcpx serve`` (stdio) and ``/mcp``.

Two host programs, each using only its SDK's own client API, each printing one JSON line of
what it saw (negotiated revision, tools, the ``mcpx_call`` result, the ``demo_hello``
prompt, the resources and the readme it read):

- ``tests/fixtures/sdk_host.py``, run by each official Python SDK release's own python
  (``support.peers.peer_python``): stdio on every release, Streamable HTTP from 1.9.4 on;
  2.x in ``mode="auto"`` (probes ``server/discover``: 2026-07-28 against mcpx) or
  ``mode="legacy"`` (the initialize handshake, 2025-11-25).
- ``tests/fixtures/ts_host.mjs``, on Node 24 with npm ``@modelcontextprotocol/sdk``
  (installed and pinned by ``scripts/peers.sh``): stdio and Streamable HTTP, 2025-11-25.

A host runs in a session of its own, with the daemon's environment and working directory
(so the ``mcpx serve`` it spawns reaches that daemon), under a timeout; when it has ended,
whatever is left of its process group (its ``mcpx serve``) is killed, by that group's id
only. A missing peer is an error telling to run ``scripts/peers.sh``: never a skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .daemon import Daemon
from .peers import (
    FIXTURES,
    MODERN_REVISION,
    NODE_MODULES,
    NODE_PREFIX,
    PEER_REVISIONS,
    PROJECT,
    PeerFailed,
    PeersMissing,
    peer_python,
)
from .peers import node as node_binary
from .waiting import WaitTimedOut, wait_until

SDK_HOST = FIXTURES / "sdk_host.py"
TS_HOST = FIXTURES / "ts_host.mjs"
TS_SDK_PACKAGE = "@modelcontextprotocol/sdk"
HOST_TIMEOUT = 120.0

# How a host starts mcpx's stdio side, as an editor's config would: {"command", "args"}.
SERVE_COMMAND: tuple[str, ...] = (sys.executable, "-m", "mcpx", "serve")
# The demo upstream's readme, and the gateway URI resources/list names it by: the original
# URI percent-encoded whole (README: mcpx://<server>/<percent-encoded uri>).
DEMO_README = "demo://readme"
README_URI = "mcpx://demo/" + quote(DEMO_README, safe="")
GATEWAY_TOOLS = {"mcpx_call", "mcpx_exec", "mcpx_servers", "mcpx_search_tools"}
PROMPT = "demo_hello"
PROMPT_ARGS = {"name": "Ada"}
ECHO_TEXT = "hi"

# What each legacy host asks of the daemon (beyond the handshake), answered one frame each.
HOST_METHODS = {
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
}


# The transports each Python SDK release's client has (1.2.1 predates Streamable HTTP), and
# the modes a host on it connects in (None: the release has one way, the handshake).
PYTHON_HOST_TRANSPORTS: dict[str, tuple[str, ...]] = {
    "1.2.1": ("stdio",),
    "1.9.4": ("stdio", "http"),
    "1.12.4": ("stdio", "http"),
    "1.23.3": ("stdio", "http"),
    "2.3.0": ("stdio", "http"),
}
PYTHON_HOST_MODES: dict[str, tuple[str | None, ...]] = {
    "1.2.1": (None,),
    "1.9.4": (None,),
    "1.12.4": (None,),
    "1.23.3": (None,),
    "2.3.0": ("auto", "legacy"),
}


def python_host_revision(version: str, mode: str | None) -> str:
    """The revision a host on mcp ``version`` in ``mode`` must end up speaking with mcpx:
    the newest its release speaks (PEER_REVISIONS), or 2026-07-28 for 2.x's auto probe."""
    return MODERN_REVISION if mode == "auto" else PEER_REVISIONS[version]


def ts_sdk() -> Path:
    """The installed npm ``@modelcontextprotocol/sdk`` (pinned in scripts/peers.sh)."""
    package = NODE_MODULES / TS_SDK_PACKAGE
    stamp = NODE_PREFIX / (".stamp-" + TS_SDK_PACKAGE.replace("/", "_").replace("@", "_"))
    if not (package / "package.json").is_file() or not stamp.is_file():
        raise PeersMissing(
            f"{TS_SDK_PACKAGE} is not installed (no {package} or no stamp {stamp.name}): "
            f"run scripts/peers.sh from {PROJECT}"
        )
    return package


def python_host(version: str, transport: str, target: str, mode: str | None = None) -> list[str]:
    """sdk_host.py on mcp ``version``: ``target`` is the daemon's /mcp URL for ``http``."""
    argv = [str(peer_python(version)), str(SDK_HOST), "--transport", transport]
    if mode is not None:
        argv += ["--mode", mode]
    argv += ["--read", README_URI]
    return argv + (["--", *SERVE_COMMAND] if transport == "stdio" else [target])


def ts_host(transport: str, target: str) -> list[str]:
    """ts_host.mjs on Node 24: ``target`` is the daemon's /mcp URL for ``http``."""
    argv = [str(node_binary()), str(TS_HOST), "--sdk", str(ts_sdk()), "--transport", transport]
    argv += ["--read", README_URI]
    return argv + (["--", *SERVE_COMMAND] if transport == "stdio" else [target])


def mcp_url(daemon: Daemon) -> str:
    url: str = daemon.info["url"]
    return url + "/mcp"


@dataclass
class HostRun:
    """One host's run: the JSON line it printed, and the frames the daemon sent meanwhile."""

    seen: dict[str, Any]
    stderr: str
    frames: list[dict[str, Any]]


def _ended(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Has the process exited within ``timeout`` s? It is left unreaped (a zombie), so its
    process group id stays ours while the rest of the group is killed."""
    try:
        wait_until(
            lambda: os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG),
            timeout=timeout,
        )
    except WaitTimedOut:
        return False
    return True


def _run(argv: Sequence[str], daemon: Daemon, timeout: float) -> tuple[int | None, str, str]:
    """(exit status or None on timeout, stdout, stderr) of a host run in its own session."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            list(argv),
            cwd=daemon.home,
            env=daemon.env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            ended = _ended(proc, timeout)
        finally:
            # The host and whatever it left behind (its `mcpx serve`): this group only.
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    return (proc.returncode if ended else None), stdout, stderr


def run_host(argv: Sequence[str], daemon: Daemon, *, timeout: float = HOST_TIMEOUT) -> HostRun:
    """Run one host to its end against ``daemon``; what it saw, or AssertionError saying why not.

    ``frames`` are the frames the daemon traced (log.frames) while it ran: only meaningful
    when no other host runs at the same time.
    """
    before = len(daemon.sent_frames())
    status, stdout, stderr = _run(argv, daemon, timeout)
    frames = daemon.sent_frames()[before:]
    if status is None:
        raise PeerFailed(f"the host still ran after {timeout}s: {argv}\nstderr:\n{stderr[-4000:]}")
    assert status == 0, f"the host failed ({status}): {argv}\nstderr:\n{stderr[-4000:]}"
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"the host printed {len(lines)} lines, not one JSON line:\n{stdout}"
    seen: dict[str, Any] = json.loads(lines[0])
    return HostRun(seen, stderr, frames)


def prompt_lines(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PromptMessages as the hosts report them: role, content type, text."""
    return [
        {"role": m["role"], "type": m["content"]["type"], "text": m["content"].get("text")}
        for m in messages
    ]


def check_content(seen: dict[str, Any], direct: dict[str, Any]) -> None:
    """What a host saw through mcpx is what the demo upstream serves (``direct``)."""
    assert seen["serverInfo"] == "mcpx", seen
    assert set(seen["tools"]) >= GATEWAY_TOOLS, seen["tools"]
    # mcpx_call is the upstream's CallToolResult as it was sent: demo echo of "hi".
    assert seen["call"] == {"text": direct["echo"], "isError": False}, seen["call"]
    assert ECHO_TEXT in seen["call"]["text"]
    assert PROMPT in seen["prompts"], seen["prompts"]
    assert seen["prompt"] == direct["prompt"], seen["prompt"]
    assert PROMPT_ARGS["name"] in seen["prompt"][0]["text"]
    # The readme, listed and read back under its mcpx:// URI, with the demo's own contents.
    assert README_URI in seen["resources"], seen["resources"]
    assert seen["read"] == [{**c, "uri": README_URI} for c in direct["readme"]], seen["read"]


def answered(frames: list[dict[str, Any]]) -> list[tuple[str | None, str | None]]:
    """(revision, method answered) of each traced frame."""
    return [(f["rev"], f["answering"]) for f in frames]
