"""The CLI against a daemon elsewhere (``daemon.endpoint``): ``unix://``, ``http://`` with a
bearer token, and ``ssh://`` through a real sshd on loopback (``support.sshd``), whose
"remote" mcpx is this checkout with its own state dir and starts its own daemon.

Every command runs as a user runs it: a real ``mcpx`` process whose own state dir is
empty, and stays so: a configured endpoint is never replaced by a local daemon.
"""

from __future__ import annotations

import http.server
import json
import queue
import secrets
import signal
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from mcpx import __version__
from mcpx.daemon import DaemonPaths
from mcpx.questions import Broker
from support.daemon import Daemon, running_daemon
from support.remote import client_env
from support.sshd import Sshd, running_sshd

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SERVERS = {"demo": DEMO}
TOKEN = secrets.token_urlsafe(32)
TOKEN_VAR = "ENDPOINT_TEST_TOKEN"
AUTH = {"daemon.auth": "token", "daemon.tokens": [f"ci={TOKEN_VAR}"]}
WAIT = 60.0
FORMS = "unix:///path/mcpx.sock, http(s)://host:port or ssh://[user@]host[:port]"


@dataclass
class Target:
    """One way to the daemon: the client's environment, and the daemon's own side."""

    name: str
    endpoint: str
    env: dict[str, str]
    cwd: Path
    state: Callable[[], Path]  # the daemon's state dir (its broker file)
    api: Callable[[], httpx.Client]  # the daemon's /v1, over its unix socket

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "mcpx", *args]
        return subprocess.run(
            argv, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    @property
    def local_state(self) -> Path:
        return Path(self.env["MCPX_STATE_DIR"])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TOKEN_VAR, TOKEN)
        with running_daemon(tmp_path_factory.mktemp("endpoint-daemon"), SERVERS, AUTH) as d:
            yield d


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with running_sshd(tmp_path_factory.mktemp("endpoint-sshd"), SERVERS) as box:
        yield box


def ssh_target(box: Sshd, tmp: Path, **extra: str) -> Target:
    endpoint = f"ssh://{box.host_alias}"
    ssh = {"MCPX_DAEMON_SSH_COMMAND": f"ssh -F {box.config}", **extra}
    env, home = client_env(tmp, endpoint, **ssh)
    return Target("ssh", endpoint, env, home, lambda: box.remote_state, box.remote_http)


@pytest.fixture(params=["unix", "http", "ssh"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "ssh":
        return ssh_target(request.getfixturevalue("sshd"), tmp_path)
    daemon: Daemon = request.getfixturevalue("daemon")
    if request.param == "unix":
        endpoint = f"unix://{daemon.info['socket']}"
        env, home = client_env(tmp_path, endpoint)
    else:
        endpoint = daemon.info["url"]
        env, home = client_env(tmp_path, endpoint, MCPX_DAEMON_TOKEN=TOKEN)
    return Target(request.param, endpoint, env, home, lambda: daemon.state, daemon.http)


def _no_local_daemon(target: Target) -> None:
    assert not (target.local_state / "daemon.json").exists(), "a local daemon was started"


# -- every command through the endpoint ----------------------------------------------------


def test_servers_call_and_status_go_to_the_endpoint(target: Target) -> None:
    servers = target.cli("servers", "--json")
    assert servers.returncode == 0, servers.stderr
    assert [s["name"] for s in json.loads(servers.stdout)["servers"]] == ["demo"]

    called = target.cli("call", "demo", "echo", "text=through-the-endpoint")
    assert called.returncode == 0, called.stderr
    assert "through-the-endpoint" in called.stdout

    status = target.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    said = json.loads(status.stdout)
    assert said["running"] is True and said["endpoint"] == target.endpoint
    assert said["version"] == __version__
    if target.name != "http":  # over http the pid is not the client's to know
        with target.api() as api:
            assert api.get("/health").status_code == 200
        info = json.loads((target.state() / "daemon.json").read_text())
        assert said["pid"] == info["pid"]
    plain = target.cli("status")
    assert plain.returncode == 0 and f"the daemon at {target.endpoint}" in plain.stdout
    said_started = [
        line
        for line in (servers.stderr + called.stderr + status.stderr).splitlines()
        if "started the daemon" in line
    ]
    # Only the remote host's own daemon is ever started (ssh://: there, on demand).
    assert all(f"state {target.state()})" in line for line in said_started), said_started
    assert len(said_started) <= (1 if target.name == "ssh" else 0), said_started
    _no_local_daemon(target)


def test_task_list_through_the_endpoint(target: Target) -> None:
    listed = target.cli("task", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout)["tasks"], list)
    _no_local_daemon(target)


@contextmanager
def brokered_question(target: Target) -> Iterator[str]:
    """A pending question in the daemon's broker (its state dir, on this machine)."""
    assert target.cli("servers").returncode == 0  # the daemon is up (ssh: started there)
    broker = Broker(DaemonPaths(target.state()).questions)
    message = f"which colour? ({secrets.token_hex(4)})"
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    params = {"message": message, "requestedSchema": schema}
    question = broker.ask("demo", "elicitation/create", params, identity=None, routing="test")
    try:
        yield question.id
    finally:
        broker.close()
        with target.api() as api:
            api.post(f"/v1/questions/{question.id}/cancel")  # 409 once settled: fine


def test_elicit_list_and_answer_through_the_endpoint(target: Target) -> None:
    with brokered_question(target) as qid:
        listed = target.cli("elicit", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert qid in listed.stdout
        answered = target.cli("elicit", "answer", qid, "answer=blue")
        assert answered.returncode == 0, answered.stderr
        with target.api() as api:
            shown = api.get(f"/v1/questions/{qid}").json()
        assert shown["state"] != "pending", shown
    _no_local_daemon(target)


def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    assert stream is not None
    for line in stream:
        lines.put(line.rstrip("\n"))


def test_events_through_the_endpoint(target: Target) -> None:
    marker = f"evt-{secrets.token_hex(4)}"
    assert target.cli("call", "demo", "echo", f"text={marker}").returncode == 0
    argv = [sys.executable, "-m", "mcpx", "events", "--since", "0", "--kind", "call.finished"]
    proc = subprocess.Popen(
        argv,
        cwd=target.cwd,
        env=target.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    out: queue.Queue[str] = queue.Queue()
    pump = threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True)
    pump.start()
    try:
        line = out.get(timeout=WAIT)  # replayed from history: nothing to trigger
        assert "call.finished" in line and "demo" in line, line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        pump.join(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    _no_local_daemon(target)


# -- stop and restart -----------------------------------------------------------------------


def test_stop_and_restart_need_remote(target: Target) -> None:
    for what in ("stop", "restart"):
        refused = target.cli(what)
        assert refused.returncode == 2, refused.stderr
        assert "add --remote" in refused.stderr and target.endpoint in refused.stderr
    with target.api() as api:
        assert api.get("/health").status_code == 200  # still running


def test_stop_over_http_is_refused_saying_why(daemon: Daemon, tmp_path: Path) -> None:
    env, home = client_env(tmp_path, daemon.info["url"], MCPX_DAEMON_TOKEN=TOKEN)
    target = Target("http", daemon.info["url"], env, home, lambda: daemon.state, daemon.http)
    refused = target.cli("stop", "--remote")
    assert refused.returncode == 2
    assert "no operation that stops a daemon" in refused.stderr and "ssh://" in refused.stderr


def test_stop_remote_over_ssh_stops_the_remote_daemon(sshd: Sshd, tmp_path: Path) -> None:
    target = ssh_target(sshd, tmp_path)
    assert target.cli("servers").returncode == 0
    info = sshd.remote_info()
    assert info is not None
    stopped = target.cli("stop", "--remote")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the daemon (pid {info['pid']})" in stopped.stdout
    assert not Path(f"/proc/{info['pid']}").exists() or _zombie(int(info["pid"]))
    _no_local_daemon(target)


def _logging_ssh(tmp: Path, box: Sshd) -> tuple[str, Path]:
    """An ssh command that writes each of its argument lists as a JSON line to a log, then
    is ssh: what ran on the host, seen from here."""
    log = tmp / "ssh-argv.jsonl"
    wrapper = tmp / "logging-ssh"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "os.execvp('ssh', ['ssh', *sys.argv[1:]])\n"
    )
    wrapper.chmod(0o755)
    return f"{wrapper} -F {box.config}", log


def _ran_on_host(log: Path) -> list[str]:
    """The remote commands the log shows, each as one string (ssh's own -O verbs left out)."""
    ran = []
    for line in log.read_text().splitlines():
        argv = json.loads(line)
        if "-O" not in argv and "-N" not in argv and HOST in argv:
            ran.append(" ".join(argv[argv.index(HOST) + 1 :]))
    return ran


HOST = "mcpx-test-box"


def test_the_hosts_state_dir_is_remembered_so_the_next_command_starts_no_mcpx_there(
    sshd: Sshd, tmp_path: Path
) -> None:
    ssh, log = _logging_ssh(tmp_path, sshd)
    target = ssh_target(sshd, tmp_path, MCPX_DAEMON_SSH_COMMAND=ssh)
    first = target.cli("servers", "--json")
    assert first.returncode == 0, first.stderr
    assert _ran_on_host(log) == ["mcpx bridge --print-socket"]
    remembered = target.local_state / "ssh-hosts.json"
    assert remembered.stat().st_mode & 0o777 == 0o600
    assert list(json.loads(remembered.read_text()).values()) == [str(sshd.remote_state)]
    log.unlink()
    called = target.cli("call", "demo", "echo", "text=remembered")
    assert called.returncode == 0, called.stderr
    assert "remembered" in called.stdout
    assert _ran_on_host(log) == [f"cat {sshd.remote_state}/daemon.json"]
    status = target.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    info = sshd.remote_info()
    assert info is not None and json.loads(status.stdout)["pid"] == info["pid"]
    _no_local_daemon(target)


def test_a_remembered_host_whose_daemon_stopped_is_started_again(
    sshd: Sshd, tmp_path: Path
) -> None:
    ssh, log = _logging_ssh(tmp_path, sshd)
    target = ssh_target(sshd, tmp_path, MCPX_DAEMON_SSH_COMMAND=ssh)
    assert target.cli("servers").returncode == 0
    sshd.stop_remote_daemon()
    log.unlink()
    called = target.cli("call", "demo", "echo", "text=again")
    assert called.returncode == 0, called.stderr
    assert "again" in called.stdout
    ran = _ran_on_host(log)
    assert ran[-1] == "mcpx bridge --print-socket", ran  # the fallback, which starts it
    _no_local_daemon(target)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


# -- bad input and faults -------------------------------------------------------------------


@pytest.mark.parametrize(
    "endpoint",
    ["ftp://box", "box:22", "unix://relative.sock", "https://user:pw@box:1", "http://box/mcp"],
)
def test_an_endpoint_of_no_known_form_is_a_usage_error(tmp_path: Path, endpoint: str) -> None:
    env, home = client_env(tmp_path, "")
    done = Target("bad", endpoint, env, home, Path, httpx.Client).cli(
        "servers", "--daemon", endpoint
    )
    assert done.returncode == 2
    assert repr(endpoint) in done.stderr and FORMS in done.stderr
    assert not (tmp_path / "client-state" / "daemon.json").exists()


@pytest.mark.parametrize(
    ("endpoint", "why"),
    [
        ("http://127.0.0.1:9", "connection refused"),
        ("unix:///nonexistent/mcpx.sock", "no socket there"),
        ("http://no-such-host.invalid:80", "unknown host"),
    ],
)
def test_unreachable_is_exit_5_naming_the_endpoint(tmp_path: Path, endpoint: str, why: str) -> None:
    env, home = client_env(tmp_path, endpoint)
    done = Target("down", endpoint, env, home, Path, httpx.Client).cli("servers")
    assert done.returncode == 5, done.stderr
    assert f"cannot reach the daemon at {endpoint}: {why}" in done.stderr
    assert not (tmp_path / "client-state" / "daemon.json").exists()


def test_a_missing_token_is_said(daemon: Daemon, tmp_path: Path) -> None:
    env, home = client_env(tmp_path, daemon.info["url"])
    done = Target("http", "", env, home, Path, httpx.Client).cli("servers")
    assert done.returncode == 5
    assert "refused this client (HTTP 401)" in done.stderr and "MCPX_DAEMON_TOKEN" in done.stderr
    assert TOKEN not in done.stderr


def test_unknown_host_alias(sshd: Sshd, tmp_path: Path) -> None:
    env, home = client_env(
        tmp_path, "ssh://no-such-box.invalid", MCPX_DAEMON_SSH_COMMAND=f"ssh -F {sshd.config}"
    )
    done = Target("ssh", "", env, home, Path, httpx.Client).cli("servers")
    assert done.returncode == 5
    assert "cannot reach the daemon at ssh://no-such-box.invalid: unknown host" in done.stderr
    assert not (tmp_path / "client-state" / "daemon.json").exists()


def test_a_refused_key(sshd: Sshd, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger_key"
    keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)]
    subprocess.run(keygen, check=True, capture_output=True, timeout=30)
    config = tmp_path / "ssh_config"
    text = sshd.config.read_text()
    lines = [
        f"  IdentityFile {stranger}" if line.strip().startswith("IdentityFile") else line
        for line in text.splitlines()
    ]
    config.write_text("\n".join(lines) + "\n")
    target = ssh_target(sshd, tmp_path, MCPX_DAEMON_SSH_COMMAND=f"ssh -F {config}")
    done = target.cli("servers")
    assert done.returncode == 5
    assert f"cannot reach the daemon at {target.endpoint}: the key was refused" in done.stderr
    _no_local_daemon(target)


@contextmanager
def sshd_variant(tmp: Path, change: Callable[[str], str]) -> Iterator[Sshd]:
    """A real sshd as ``running_sshd`` starts it, its sshd_config changed by ``change``."""
    import support.sshd as sshd_module

    made = sshd_module._sshd_config
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sshd_module, "_sshd_config", lambda *args: change(made(*args)))
        tmp.mkdir()
        with running_sshd(tmp, SERVERS) as box:
            yield box


def test_without_socket_forwarding_requests_go_through_mcpx_bridge(tmp_path: Path) -> None:
    with sshd_variant(
        tmp_path / "box", lambda text: text + "AllowStreamLocalForwarding no\n"
    ) as box:
        target = ssh_target(box, tmp_path)
        called = target.cli("call", "demo", "echo", "text=bridged")
        assert called.returncode == 0, called.stderr
        assert "bridged" in called.stdout
        listed = target.cli("servers", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [s["name"] for s in json.loads(listed.stdout)["servers"]] == ["demo"]
        _no_local_daemon(target)


def test_a_host_without_mcpx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import support.sshd as sshd_module

    made = sshd_module._sshd_config

    def without_mcpx(*args: Any) -> str:
        # The same sshd, but its sessions' PATH lacks the checkout's venv: no mcpx there.
        return "\n".join(
            line.replace(line.split()[1], "PATH=/usr/bin:/bin", 1)
            if line.startswith("SetEnv ")
            else line
            for line in made(*args).splitlines()
        )

    monkeypatch.setattr(sshd_module, "_sshd_config", without_mcpx)
    (tmp_path / "bare").mkdir()
    with running_sshd(tmp_path / "bare", SERVERS) as box:
        target = ssh_target(box, tmp_path)
        done = target.cli("servers")
        assert done.returncode == 5, done.stderr
        assert f"no mcpx on {box.host_alias}'s PATH" in done.stderr
        assert "mcpx: command not found" in done.stderr
        _no_local_daemon(target)


# -- a daemon of another version --------------------------------------------------------------


class _OlderDaemon(http.server.BaseHTTPRequestHandler):
    """A daemon of mcpx 0.0.1 on a unix socket: /health, its version, and no other route."""

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"ok": True})
        elif self.path == "/openapi.json":
            self._json(200, {"openapi": "3.1.0", "info": {"title": "mcpx", "version": "0.0.1"}})
        else:
            message = f"no route GET {self.path}"
            self._json(404, {"error": {"code": "unknown_operation", "message": message}})

    def _json(self, status: int, doc: dict[str, Any]) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def address_string(self) -> str:
        return "unix"


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def test_another_version_is_said_and_a_missing_operation_names_both(tmp_path: Path) -> None:
    path = tmp_path / "old.sock"
    with _UnixServer(str(path), _OlderDaemon) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            env, home = client_env(tmp_path, f"unix://{path}")
            done = Target("old", "", env, home, Path, httpx.Client).cli("servers")
        finally:
            server.shutdown()
            thread.join(timeout=30)
    assert f"runs mcpx 0.0.1; this is mcpx {__version__}" in done.stderr
    assert done.stderr.count(f"; this is mcpx {__version__}") == 1  # said once
    assert done.returncode == 5
    assert "has no GET /v1/servers" in done.stderr and f"({__version__}) needs it" in done.stderr
    assert not (tmp_path / "client-state" / "daemon.json").exists()
