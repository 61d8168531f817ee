"""``mcpx serve`` with ``daemon.endpoint`` set: a real SDK host (2.3.0, in both eras) whose
server command is a plain ``mcpx serve`` is served by a daemon elsewhere.

- ``ssh://``: the shim becomes ``ssh HOST mcpx serve --transport stdio`` (a real sshd on
  loopback, ``support.sshd``); the remote host's daemon serves the host.
- ``unix://``: the daemon's stdio channel beside that socket, as a local daemon's.
- ``http://`` with a bearer token: the shim relays frames between stdio and the daemon's
  ``/mcp``, with mcpx's own Streamable HTTP client; questions the daemon puts mid-call
  (an upstream's elicitation) reach the host's callback through it and back.

The host lists tools and calls ``mcpx_call`` (demo echo); its own state dir stays empty.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.hosts import GATEWAY_TOOLS, SDK_HOST, SERVE_COMMAND, python_host, run_host
from support.peers import MODERN_REVISION, peer_python
from support.sshd import Sshd, running_sshd

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SERVERS = {"demo": DEMO, "sdk": sdk_entry("1.23.3")}
TOKEN = secrets.token_urlsafe(32)
TOKEN_VAR = "SERVE_ENDPOINT_TOKEN"
AUTH = {"daemon.auth": "token", "daemon.tokens": [f"ci={TOKEN_VAR}"]}
HOST = "2.3.0"
MODES = [pytest.param("auto", id="2026-07-28"), pytest.param("legacy", id="2025-11-25")]


@dataclass
class Client:
    """What ``run_host`` needs of a daemon: where the host runs, and its environment."""

    home: Path
    extra: dict[str, str]

    def env(self) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
        return {**clean, "MCPX_STATE_DIR": str(self.home / "state"), **self.extra}

    def sent_frames(self) -> list[dict[str, Any]]:
        return []  # the daemon's frames are checked by its own fixture when it stops


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TOKEN_VAR, TOKEN)
        with running_daemon(tmp_path_factory.mktemp("serve-http"), SERVERS, AUTH) as d:
            yield d


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with running_sshd(tmp_path_factory.mktemp("serve-ssh"), SERVERS) as box:
        yield box


@pytest.fixture(params=["ssh", "http", "unix"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Client:
    home = tmp_path / "host"
    home.mkdir()
    if request.param == "ssh":
        box: Sshd = request.getfixturevalue("sshd")
        extra = {
            "MCPX_DAEMON_ENDPOINT": f"ssh://{box.host_alias}",
            "MCPX_DAEMON_SSH_COMMAND": f"ssh -F {box.config}",
        }
    elif request.param == "http":
        d: Daemon = request.getfixturevalue("daemon")
        extra = {"MCPX_DAEMON_ENDPOINT": d.info["url"], "MCPX_DAEMON_TOKEN": TOKEN}
    else:
        d = request.getfixturevalue("daemon")
        extra = {"MCPX_DAEMON_ENDPOINT": f"unix://{d.info['socket']}"}
    return Client(home, extra)


def _revision(mode: str) -> str:
    return MODERN_REVISION if mode == "auto" else "2025-11-25"


@pytest.mark.parametrize("mode", MODES)
def test_a_host_lists_and_calls_through_the_endpoint(client: Client, mode: str) -> None:
    run = run_host(python_host(HOST, "stdio", "", mode), cast(Daemon, client))
    seen = run.seen
    assert seen["protocolVersion"] == _revision(mode), seen
    assert seen["serverInfo"] == "mcpx", seen
    assert set(seen["tools"]) >= GATEWAY_TOOLS, seen["tools"]
    assert seen["call"]["isError"] is False and "hi" in seen["call"]["text"], seen["call"]
    assert not (client.home / "state" / "daemon.json").exists(), "a local daemon was started"


@pytest.mark.parametrize("mode", MODES)
def test_a_question_mid_call_reaches_the_host_through_the_endpoint(
    client: Client, mode: str
) -> None:
    answer = f"answered over the endpoint ({mode})"
    argv = [str(peer_python(HOST)), str(SDK_HOST), "--transport", "stdio", "--mode", mode]
    argv += ["--ask", "ask", "--server", "sdk", "--declare", "elicitation", "--answer", answer]
    argv += ["--timeout", "90", "--", *SERVE_COMMAND]
    run = run_host(argv, cast(Daemon, client))
    seen = run.seen
    assert seen["protocolVersion"] == _revision(mode), seen
    [asked] = seen["asked"]
    assert asked["method"] == "elicitation/create", seen["asked"]
    assert seen["result"]["isError"] is False, seen["result"]
    assert seen["result"]["texts"][0] == answer, seen["result"]
    assert json.dumps(seen).count(TOKEN) == 0
