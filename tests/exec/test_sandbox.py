"""Under bubblewrap a script can call tools and nothing more: each denial proven from inside
a real sandbox, and a call through the run's socket reaching a real daemon."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpx.exec import ExecLimits, RunOutcome, bwrap_path, open_relay, run_script
from support.daemon import running_daemon

pytestmark = pytest.mark.anyio

LIMITS = ExecLimits(timeout=60, max_output=256 * 1024, memory=512 << 20, cpu=30, processes=32)
# The script's own client: HTTP over the run's unix socket, stdlib only.
CLIENT = """
import http.client, json, os, socket

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(os.environ["MCPX_RUN_SOCKET"])

def ask(method, path, body=None, headers=None):
    conn = Unix("mcpx", timeout=60)
    data = None if body is None else json.dumps(body)
    sent = {"content-type": "application/json", **(headers or {})}
    conn.request(method, path, body=data, headers=sent)
    answer = conn.getresponse()
    return answer.status, json.loads(answer.read())
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def bwrap_installed() -> None:
    if bwrap_path() is None:
        pytest.fail("bubblewrap (bwrap) is not installed: run scripts/peers.sh")


async def _sandboxed(code: str, tmp_path: Path, daemon_socket: Path | None = None) -> RunOutcome:
    return await run_script(
        code,
        filename="probe.py",
        argv=[],
        inline=False,
        package={},
        run_id="run-sbx",
        daemon_socket=daemon_socket or tmp_path / "none.sock",
        sandbox="bwrap",
        limits=LIMITS,
    )


def _remove(base: Path) -> None:
    shutil.rmtree(base)


def _exists(path: str) -> bool:
    return Path(path).exists()


def _probe(action: str) -> str:
    """A script that tries ``action`` and returns how it went."""
    return (
        "def main():\n    try:\n"
        + "".join(f"        {line}\n" for line in action.splitlines())
        + "    except OSError as exc:\n        return ['denied', type(exc).__name__]\n"
        + "    return ['allowed']\n"
    )


async def test_no_tcp_to_the_hosts_loopback(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        # Reachable from here (the test process): only the sandbox is cut off.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        action = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)"
        out = await _sandboxed(_probe(action), tmp_path)
    assert out.result[0] == "denied", out


@pytest.mark.parametrize("where", ["home", "state"])
async def test_no_reading_home_or_state_dir(tmp_path: Path, where: str) -> None:
    # Made outside pytest's tmp (which may sit in /tmp, the sandbox's own tmpfs).
    base = Path(tempfile.mkdtemp(dir=Path.home()))
    try:
        secret = base / where / "secret.txt"
        secret.parent.mkdir()
        secret.write_text("the test's secret")
        out = await _sandboxed(_probe(f"open({str(secret)!r}).read()"), tmp_path)
        assert out.result == ["denied", "FileNotFoundError"], out
        listed = await _sandboxed("import os\ndef main():\n    return os.listdir('/')\n", tmp_path)
        assert Path.home().name not in listed.result or Path.home() == Path("/root")
    finally:
        _remove(base)


@pytest.mark.parametrize("target", ["/etc/mcpx-probe", "/usr/mcpx-probe", sys.prefix + "/probe"])
async def test_no_writing_outside_tmp_and_the_run_dir(tmp_path: Path, target: str) -> None:
    out = await _sandboxed(_probe(f"open({target!r}, 'w').write('x')"), tmp_path)
    assert out.result[0] == "denied", out
    assert not _exists(target)
    code = "import os\ndef main():\n    open('/tmp/a', 'w').write('1')\n"
    code += "    open(os.environ['MCPX_RUN_DIR'] + '/b', 'w').write('2')\n    return 'wrote'\n"
    assert (await _sandboxed(code, tmp_path)).result == "wrote"


async def test_a_call_through_the_run_socket_reaches_the_daemon(tmp_path: Path) -> None:
    demo = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
    with running_daemon(tmp_path, {"demo": demo}) as d:
        code = CLIENT + (
            "def main():\n"
            "    said = {'text': 'from a script'}\n"
            "    call = {'server': 'demo', 'tool': 'echo', 'arguments': said}\n"
            "    ok = ask('POST', '/v1/call', call)\n"
            "    stop = ask('POST', '/v1/stop', {})\n"
            "    return [ok, stop]\n"
        )
        out = await _sandboxed(code, tmp_path, Path(d.info["socket"]))
    assert out.exit_code == 0, out.stderr
    (status, called), (refused, why) = out.result
    assert status == 200 and called["content"][0]["text"] == "from a script"
    assert refused == 403 and "a script may only call tools" in why["error"]["message"]


async def _fake_daemon(path: Path, seen: list[dict[str, Any]]) -> Any:
    """A daemon stand-in on a unix socket that answers with the headers it was sent."""

    async def answer(stream: Any) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:])
            seen.append(headers)
            body = json.dumps(headers).encode()
            reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            reply += b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
            await stream.send(reply + body)

    return await anyio.create_unix_listener(path), answer


async def test_the_relay_forces_the_run_id_and_drops_other_headers(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    listener, answer = await _fake_daemon(tmp_path / "daemon.sock", seen)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        relay = tmp_path / "run.sock"
        async with open_relay(relay, run_id="run-true", daemon_socket=tmp_path / "daemon.sock"):
            transport = httpx.AsyncHTTPTransport(uds=str(relay))
            async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
                sent = {"X-Mcpx-Run": "run-forged", "Mcpx-Profile": "admin", "Accept": "a/b"}
                r = await client.post("/v1/call", json={}, headers=sent)
                assert r.status_code == 200
                assert r.json()["x-mcpx-run"] == "run-true" and "mcpx-profile" not in r.json()
                assert r.json()["accept"] == "a/b"
                denied = await client.delete("/v1/servers")
                assert denied.status_code == 403 and "DELETE /v1/servers" in denied.text
                big = await client.post("/v1/call", content=b"x" * (4 * 1024 * 1024 + 1))
                assert big.status_code == 413
        tg.cancel_scope.cancel()
    assert [h["x-mcpx-run"] for h in seen] == ["run-true"]
