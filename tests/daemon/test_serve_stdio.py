"""``mcpx serve``: a real daemon, the shim as a real process, raw lines and real SDK hosts."""

from __future__ import annotations

import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
import termios
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx.daemon import DaemonPaths
from support.daemon import Daemon, running_daemon
from support.modern import MODERN, modern_meta, modern_request
from support.peers import peer_python
from support.schemas import FrameLog
from support.waiting import wait_until

META = modern_meta(client="t")
ECHO = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    demo = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
    # "mine": an instance per host, started while that host's session runs.
    servers = {"demo": demo, "mine": {**demo, "scope": "identity"}}
    with running_daemon(tmp_path_factory.mktemp("serve"), servers) as d:
        yield d


def _serve(
    daemon: Daemon, lines: list[dict[str, Any] | str], mode: str = "hand-off"
) -> dict[Any, dict[str, Any]]:
    """Run ``mcpx serve`` with ``lines`` on stdin (then EOF); its answers by id.

    ``hand-off``: stdin and stdout are pipes, as a host makes them, and the daemon
    serves them itself. ``relay``: stdin is a regular file, which the shim does not hand
    off: it relays. The daemon's log says which it was.
    """
    data = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()
    stdin_file = daemon.home / f"stdin-{os.getpid()}-{threading.get_ident()}.jsonl"
    stdin_file.write_bytes(data)
    with stdin_file.open("rb") as source:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpx", "serve"],
            stdin=subprocess.PIPE if mode == "hand-off" else source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=daemon.home,
            env=daemon.env(),
        )
        try:
            out, err = proc.communicate(data if mode == "hand-off" else None, timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    assert _mode(daemon, proc.pid) == mode
    frames = [json.loads(line) for line in out.decode().splitlines()]
    return {f.get("id"): f for f in frames}


def _mode(daemon: Daemon, pid: int) -> str | None:
    """How the daemon served the ``mcpx serve`` of ``pid``, from its log."""
    for line in daemon.log_lines():
        msg = line.get("msg", "")
        if msg.startswith("stdio host connected (") and msg.endswith(f": stdio:{pid}"):
            return str(msg.split("(", 1)[1].split(")", 1)[0])
    return None


def _request(id_: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.mark.obligation("S-LIFE-1", "S-ERR-1")
@pytest.mark.parametrize("mode", ["hand-off", "carried"])
def test_raw_legacy_session(daemon: Daemon, sent_frames: FrameLog, mode: str) -> None:
    rev = "2025-06-18"
    init = {"protocolVersion": rev, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    answers = _serve(
        daemon,
        [
            _request(1, "initialize", init),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _request(2, "tools/list"),
            _request(3, "tools/call", {"name": "mcpx_call", "arguments": ECHO}),
            "not json",
        ],
        mode,
    )
    assert answers[1]["result"]["protocolVersion"] == rev
    for id_, method in ((1, "initialize"), (2, "tools/list"), (3, "tools/call")):
        sent_frames.sent(answers[id_], rev, sender="server", answering=method)
    assert "mcpx_call" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert _text(answers[3]["result"]) == "hi"
    # The bad line is answered with a parse error (no id), and the shim carried on.
    assert answers[None]["error"]["code"] == -32700


@pytest.mark.obligation("S-DISC-1", "S-DISC-2")
@pytest.mark.parametrize("mode", ["hand-off", "carried"])
def test_raw_modern_requests(daemon: Daemon, sent_frames: FrameLog, mode: str) -> None:
    answers = _serve(
        daemon,
        [
            modern_request(1, "server/discover", meta=META),
            modern_request(2, "tools/call", {"name": "mcpx_call", "arguments": ECHO}, META),
        ],
        mode,
    )
    sent_frames.sent(answers[1], MODERN, sender="server", answering="server/discover")
    sent_frames.sent(answers[2], MODERN, sender="server", answering="tools/call")
    assert MODERN in answers[1]["result"]["supportedVersions"]
    assert _text(answers[2]["result"]) == "hi"


def test_http_transport_names_the_url(daemon: Daemon) -> None:
    done = daemon.cli("serve", "--transport", "http", timeout=60)
    assert done.returncode != 0
    assert daemon.info["url"] + "/mcp" in done.stderr


_HOST = """
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(
        command=sys.argv[1], args=["-m", "mcpx", "serve"], env=json.loads(sys.argv[2])
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            assert "mcpx_call" in [t.name for t in tools.tools], tools
            args = {"server": "demo", "tool": "echo", "arguments": {"text": "hi"}}
            r = await s.call_tool("mcpx_call", args)
            print("".join(x.text for x in r.content if x.type == "text"))

asyncio.run(main())
"""


@pytest.mark.parametrize("version", ["1.2.1", "2.3.0"])
def test_official_sdk_host(daemon: Daemon, version: str) -> None:
    # The SDK spawns `mcpx serve` as its stdio server, as an editor or agent would.
    env = {k: v for k, v in daemon.env().items() if k.startswith("MCPX_") or k == "PATH"}
    done = subprocess.run(
        [str(peer_python(version)), "-c", textwrap.dedent(_HOST), sys.executable, json.dumps(env)],
        cwd=daemon.home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hi" in done.stdout


@pytest.mark.obligation("S-STDIO-4", "S-STDIO-10", "S-MSG-9")
def test_channel_socket_and_batches(daemon: Daemon) -> None:
    # The daemon's side directly: a 0600 socket, and a 2025-03-26 batch answered as an array.
    path = daemon.state / "mcpx-stdio.sock"
    assert path.stat().st_mode & 0o777 == 0o600
    init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t"}}
    batch = [_request(2, "ping"), _request(3, "tools/list"), {"jsonrpc": "2.0", "method": "x"}]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        lines = [json.dumps(_request(1, "initialize", init)), json.dumps(batch)]
        sock.sendall("".join(line + "\n" for line in lines).encode())
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    first, second = (json.loads(line) for line in data.decode().splitlines())
    assert first["result"]["protocolVersion"] == "2025-03-26"
    assert sorted(f["id"] for f in second) == [2, 3]


@pytest.mark.obligation("S-CANC-1", "S-CANC-4")
def test_a_cancelled_request_gets_no_answer(daemon: Daemon, sent_frames: FrameLog) -> None:
    """notifications/cancelled withdraws a running request (and its upstream call):
    no answer is sent for it; the others are answered."""
    slow = {"server": "demo", "tool": "slow", "arguments": {"seconds": 20, "steps": 20}}
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    answers = _serve(
        daemon,
        [
            _request(1, "initialize", init),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _request(2, "tools/call", {"name": "mcpx_call", "arguments": slow}),
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "the user pressed stop"},
            },
            _request(3, "tools/call", {"name": "mcpx_call", "arguments": ECHO}),
        ],
    )
    assert 2 not in answers
    assert _text(answers[3]["result"]) == "hi"
    # S-CANC-4: the reason the host gave is logged.
    assert any("the user pressed stop" in line["msg"] for line in daemon.log_lines())
    sent_frames.sent(answers[1], "2025-06-18", answering="initialize")
    sent_frames.sent(answers[3], "2025-06-18", answering="tools/call")


# --- the hand-off of the host's pipes, and the relay as its fallback ---------------------

_INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}


def test_handoff_message_agrees() -> None:
    # The shim keeps its own copy (importing the daemon side would slow every start).
    from mcpx.cli._serve import HANDOFF as shim
    from mcpx.cli._serve import OPTIONS as shim_options
    from mcpx.daemon._stdio_accept import HANDOFF as daemon_side
    from mcpx.daemon._stdio_accept import OPTIONS as daemon_options

    assert shim == daemon_side
    assert shim_options == daemon_options
    from mcpx.cli._serve import RESUME as shim_resume
    from mcpx.daemon._hand_back import RESUME as daemon_resume

    assert shim_resume == daemon_resume


def _read_all(fd: int, limit: float = 60) -> bytes:
    """Everything from ``fd`` until EOF, within ``limit`` seconds."""
    data = b""
    while True:
        ready, _, _ = select.select([fd], [], [], limit)
        assert ready, f"no EOF within {limit} s; so far {data!r}"
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


def test_daemon_serves_handed_off_pipes(daemon: Daemon) -> None:
    """The channel's side of a hand-off, raw: two pipes sent with HANDOFF are answered
    OK, read and written by the daemon itself; their EOF ends the session and the
    connection."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    with _hand_off(daemon, in_r, out_w) as sock:
        lines = [_request(1, "initialize", _INIT), _request(2, "ping")]
        os.write(in_w, "".join(json.dumps(x) + "\n" for x in lines).encode())
        os.close(in_w)
        answers = [json.loads(x) for x in _read_all(out_r).decode().splitlines()]
        assert sock.recv(64) == b""  # then the daemon closed the connection
    os.close(out_r)
    assert {a["id"] for a in answers} == {1, 2}
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"


def _pipe_full(fd: int) -> bool:
    """The pipe ``fd`` reads is full: less than PIPE_BUF is free, and a write of up to
    PIPE_BUF goes in whole or not at all (a longer one fills the pipe)."""
    held = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    return bool(held > fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) - select.PIPE_BUF)


def test_a_host_that_reads_late_gets_every_answer_whole(daemon: Daemon) -> None:
    """Answers go straight to the host's pipe while it has room; once it is full (the
    host is not reading) the rest wait, and none is cut, lost or doubled. Nor are the
    last ones lost at EOF: the writer used to drop its last batch when the stream of
    answers ended while it was collecting one."""
    count = 3000  # about 150 KB of answers: more than a pipe holds
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    with _hand_off(daemon, in_r, out_w):
        os.write(in_w, (json.dumps(_request(0, "initialize", _INIT)) + "\n").encode())
        _read_until(out_r, b"\n")
        pad = "x" * 20  # a longer id: each answer about 50 bytes
        lines = [_request(f"{pad}-{i}", "ping") for i in range(count)]
        os.write(in_w, "".join(json.dumps(x) + "\n" for x in lines).encode())
        # The pipe fills up meanwhile: nobody reads it.
        wait_until(lambda: _pipe_full(out_r), message="the answers never filled the pipe")
        os.close(in_w)
        answers = [json.loads(x) for x in _read_all(out_r).decode().splitlines()]
    os.close(out_r)
    assert sorted(a["id"] for a in answers) == sorted(f"{pad}-{i}" for i in range(count))
    assert all(a["result"] == {} for a in answers)


@pytest.mark.obligation("S-STDIO-8")
def test_a_listen_stream_does_not_hold_the_session_past_eof(daemon: Daemon) -> None:
    """A host's listen stream ends with its input: the session does not wait out
    transport.stdioDrain (30 s here) for a stream that only ends when cancelled."""
    wanted = {"notifications": {"toolsListChanged": True}}
    listen = modern_request(7, "subscriptions/listen", wanted, META)
    proc = _spawn_serve(daemon)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(listen).encode() + b"\n")
        proc.stdin.flush()
        ack = json.loads(_read_until(proc.stdout.fileno(), b"\n"))
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        started = time.monotonic()
        proc.stdin.close()
        rest = _read_all(proc.stdout.fileno(), limit=20)
        assert proc.wait(timeout=20) == 0
        ended_after = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    assert ended_after < 15  # well inside the 30 s drain it used to wait out
    assert not [f for f in map(json.loads, rest.decode().splitlines()) if f.get("id") == 7]


def _spawn_serve(daemon: Daemon) -> subprocess.Popen[bytes]:
    """``mcpx serve`` as a host starts it: its stdin and stdout are our pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "mcpx", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=daemon.home,
        env=daemon.env(),
    )


def _hand_off(daemon: Daemon, in_r: int, out_w: int) -> socket.socket:
    """Hand a host's stdin (``in_r``) and stdout (``out_w``) to the daemon's stdio socket,
    as ``mcpx serve`` does: the connection, answered OK. Ours are closed: the daemon has
    its own copies now."""
    from mcpx.daemon._stdio_accept import HANDOFF

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(60)
        sock.connect(str(DaemonPaths(daemon.state).stdio_socket))
        socket.send_fds(sock, [HANDOFF], [in_r, out_w])
        os.close(in_r)
        os.close(out_w)
        assert sock.recv(64) == b"OK\n"
    except BaseException:
        sock.close()
        raise
    return sock


def _read_until(fd: int, needle: bytes, limit: float = 60) -> bytes:
    data = b""
    while needle not in data:
        ready, _, _ = select.select([fd], [], [], limit)
        assert ready, f"no {needle!r} within {limit} s; so far {data!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"EOF before {needle!r}; so far {data!r}"
        data += chunk
    return data


def test_an_upstream_started_during_a_hand_off_does_not_hold_the_hosts_pipes(
    daemon: Daemon,
) -> None:
    """Descriptors received with a hand-off are not inherited by upstreams the daemon
    spawns: otherwise the host's stdout would stay open, after the session ended, for
    as long as such an upstream lives."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    pipes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in (in_r, out_w)}
    with _hand_off(daemon, in_r, out_w):
        call = {"server": "mine", "tool": "echo", "arguments": {"text": "hi"}}
        lines = [
            _request(1, "initialize", _INIT),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _request(2, "tools/call", {"name": "mcpx_call", "arguments": call}),
        ]
        os.write(in_w, "".join(json.dumps(x) + "\n" for x in lines).encode())
        _read_until(out_r, b'"id":2')
        with daemon.http() as client:
            servers = client.get("/v1/servers").json()["servers"]
        mine = next(s for s in servers if s["name"] == "mine")
        pid = mine["instances"][0]["pid"]
        held = {os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
        assert not pipes & held, f"upstream {pid} holds the host's pipes"
        os.close(in_w)
        _read_all(out_r)  # EOF: nothing else holds the host's stdout open
        os.kill(pid, 0)  # while that upstream still runs
    os.close(out_r)


def test_daemon_refuses_what_it_cannot_serve(daemon: Daemon, tmp_path: Path) -> None:
    # Regular files cannot be waited on: refused, the descriptors closed, the connection too.
    from mcpx.daemon._stdio_accept import HANDOFF

    plain = tmp_path / "plain"
    plain.write_text("")
    with plain.open("rb") as f, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(DaemonPaths(daemon.state).stdio_socket))
        socket.send_fds(sock, [HANDOFF], [f.fileno(), f.fileno()])
        reply = b""
        while chunk := sock.recv(256):
            reply += chunk
    assert reply.startswith(b"NO ") and reply.endswith(b"\n"), reply


@pytest.mark.obligation("S-LIFE-9")
def test_killed_shim_ends_a_handed_off_session(daemon: Daemon) -> None:
    """The host's pipes are the daemon's to close: when ``mcpx serve`` dies (its
    connection closes) the daemon ends the session as at EOF, so the host sees stdout
    close even though it keeps stdin open."""
    proc = _spawn_serve(daemon)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(_request(1, "initialize", _INIT)) + "\n").encode())
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready
        assert json.loads(proc.stdout.readline())["id"] == 1
        assert _mode(daemon, proc.pid) == "hand-off"
        proc.kill()
        proc.wait(timeout=30)
        assert _read_all(proc.stdout.fileno()) == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()


_SHIM = """
import socket, sys
from pathlib import Path
if sys.argv[2] == "no-send-fds":
    del socket.send_fds
from mcpx.cli._serve import serve_stdio
serve_stdio(Path(sys.argv[1]))
"""


def _fake_channel(path: Path, first: str, seen: dict[str, Any]) -> None:
    """A stand-in for the daemon's channel: the first connection is refused as ``first``
    says (unless it is the relay already), the relay connection answers one line."""
    answer = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(2)
        server.settimeout(60)
        for _ in range(2):
            conn, _ = server.accept()
            with conn:
                conn.settimeout(60)
                msg, fds, _, _ = socket.recv_fds(conn, 65536, 2)
                for fd in fds:
                    os.close(fd)
                if fds:  # a hand-off: refused the way ``first`` says
                    seen["handoff"] = (msg, len(fds))
                    conn.sendall(first.encode())
                    continue
                data = msg
                while chunk := conn.recv(65536):
                    data += chunk
                seen["relayed"] = data
                conn.sendall(answer)
                return


@pytest.mark.obligation("S-STDIO-9")
@pytest.mark.parametrize(
    "case",
    [
        "refused",  # the daemon says NO
        "older-daemon",  # a daemon without hand-offs answers the line as JSON: a parse error
        "no-send-fds",  # the platform cannot pass descriptors: straight to the relay
    ],
)
def test_shim_falls_back_to_the_relay(tmp_path: Path, case: str) -> None:
    from mcpx.cli._serve import HANDOFF

    first = {
        "refused": "NO not today\n",
        "older-daemon": '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}\n',
        "no-send-fds": "",
    }[case]
    path = tmp_path / "stdio.sock"
    seen: dict[str, Any] = {}
    fake = threading.Thread(target=_fake_channel, args=(path, first, seen), daemon=True)
    fake.start()
    while not path.exists() and fake.is_alive():
        threading.Event().wait(0.01)
    data = json.dumps(_request(1, "ping")).encode() + b"\n"
    done = subprocess.run(
        [sys.executable, "-c", _SHIM, str(path), case],
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )
    fake.join(timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    if case == "no-send-fds":
        assert "handoff" not in seen
    else:
        assert seen["handoff"] == (HANDOFF, 2)
    # The relay carried every byte of stdin: nothing was read before the fallback.
    assert seen["relayed"] == data
    assert json.loads(done.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.obligation("S-CANC-2")
@pytest.mark.parametrize("mode", ["hand-off", "carried"])
def test_malformed_cancellations_are_ignored(daemon: Daemon, mode: str) -> None:
    cancelled = "notifications/cancelled"
    lines: list[dict[str, Any] | str] = [
        _request(1, "initialize", _INIT),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": cancelled, "params": {"requestId": {"x": 1}}},
        {"jsonrpc": "2.0", "method": cancelled, "params": [1, 2]},
        {"jsonrpc": "2.0", "method": cancelled, "params": {"requestId": True}},
        {"jsonrpc": "2.0", "method": cancelled},
        _request(2, "ping"),
    ]
    answers = _serve(daemon, lines, mode)
    assert answers[2]["result"] == {}
    with daemon.http() as client:  # the daemon is still serving
        assert client.get("/health").status_code == 200
