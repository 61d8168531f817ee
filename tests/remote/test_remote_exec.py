"""``mcpx exec`` against a daemon elsewhere: the script runs on the remote daemon, where
the tools are, through ``ssh://`` (a real sshd on loopback, ``support.sshd``) and through
``http://`` with a bearer token (a real daemon on 127.0.0.1).

What proves where it ran: the remote daemon's own call log (``/v1/log`` over its unix
socket) records the script's calls with door ``exec``, and the CLI's state dir never
gets a ``daemon.json`` (no local daemon was started to run it). The upstreams: the demo,
and the official SDK's fixture server on 1.23.3, whose ``ask`` asks a question nobody
present can answer, so ``mcpx exec`` exits 75 and the run goes on as a task.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.remote import client_env
from support.sshd import Sshd, running_sshd

EX_TEMPFAIL: Final = 75
DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
SERVERS: Final = {"demo": DEMO, "sdk": sdk_entry("1.23.3")}
TOKEN: Final = secrets.token_urlsafe(32)
TOKEN_VAR: Final = "REMOTE_EXEC_TEST_TOKEN"
AUTH: Final = {"daemon.auth": "token", "daemon.tokens": [f"ci={TOKEN_VAR}"]}
TWO_TOOLS: Final = (
    "total = demo.add(a=2, b=40)['sum']\n"
    "said = demo.echo(text=f'total {total}')\n"
    "print(total)\n"
    "print(said)\n"
)


@dataclass
class Target:
    """A CLI whose ``daemon.endpoint`` is elsewhere, and that daemon's own /v1."""

    endpoint: str
    env: dict[str, str]
    cwd: Path
    api: Callable[[], httpx.Client]  # the remote daemon's /v1, over its unix socket

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "mcpx", *args]
        return subprocess.run(
            argv, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=180
        )

    def no_local_daemon(self) -> None:
        state = Path(self.env["MCPX_STATE_DIR"])
        assert not (state / "daemon.json").exists(), "a local daemon was started"

    def last_logged(self) -> int:
        """The remote call log's newest id (0 while it is empty)."""
        with self.api() as api:
            last = api.get("/v1/log", params={"limit": 1}).json()["last"]
        return int(last or 0)

    def logged_after(self, cursor: int) -> list[dict[str, Any]]:
        """The remote daemon's calls recorded after ``cursor``, oldest first."""
        with self.api() as api:
            calls: list[dict[str, Any]] = api.get("/v1/log", params={"after": cursor}).json()[
                "calls"
            ]
        return calls


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TOKEN_VAR, TOKEN)
        with running_daemon(tmp_path_factory.mktemp("exec-daemon"), SERVERS, AUTH) as d:
            yield d


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with running_sshd(tmp_path_factory.mktemp("exec-sshd"), SERVERS) as box:
        yield box


def ssh_target(box: Sshd, tmp: Path) -> Target:
    endpoint = f"ssh://{box.host_alias}"
    env, home = client_env(tmp, endpoint, MCPX_DAEMON_SSH_COMMAND=f"ssh -F {box.config}")
    return Target(endpoint, env, home, box.remote_http)


@pytest.fixture(params=["ssh", "http"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "ssh":
        box: Sshd = request.getfixturevalue("sshd")
        started = ssh_target(box, tmp_path).cli("servers")  # the remote daemon up, there
        assert started.returncode == 0, started.stderr
        return ssh_target(box, tmp_path)
    daemon: Daemon = request.getfixturevalue("daemon")
    env, home = client_env(tmp_path, daemon.info["url"], MCPX_DAEMON_TOKEN=TOKEN)
    return Target(daemon.info["url"], env, home, daemon.http)


def test_a_script_calling_two_tools_runs_on_the_remote_daemon(target: Target) -> None:
    cursor = target.last_logged()
    ran = target.cli("exec", "-c", TWO_TOOLS)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:2] == ["42", "total 42"], ran.stdout
    calls = target.logged_after(cursor)
    assert [(c["server"], c["tool"], c["door"]) for c in calls] == [
        ("demo", "add", "exec"),
        ("demo", "echo", "exec"),
    ], calls
    assert all(c["outcome"] == "ok" for c in calls), calls
    target.no_local_daemon()


def test_a_scripts_exit_status_passes_through(target: Target) -> None:
    raised = target.cli("exec", "-c", "raise RuntimeError('broken over there')")
    assert raised.returncode == 1, (raised.returncode, raised.stderr)
    assert "RuntimeError: broken over there" in raised.stderr, raised.stderr
    assert raised.stdout == "", raised.stdout
    chosen = target.cli("exec", "-c", "import sys\nprint(demo.add(a=1, b=1)['sum'])\nsys.exit(3)")
    assert chosen.returncode == 3, (chosen.returncode, chosen.stderr)
    assert chosen.stdout.strip() == "2", chosen.stdout
    as_json = target.cli("exec", "--json", "-c", "def main():\n    return {'n': 7}")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["ok"], doc["exitCode"], doc["result"]) == (True, 0, {"n": 7}), doc
    target.no_local_daemon()


def test_a_question_during_a_script_over_ssh_is_answered_and_collected(
    sshd: Sshd, tmp_path: Path
) -> None:
    target = ssh_target(sshd, tmp_path)
    code = (
        "def main():\n"
        "    said = sdk.ask(question='which colour, over ssh?')\n"
        "    return {'answer': said, 'sum': demo.add(a=1, b=2)['sum']}\n"
    )
    asked = target.cli("exec", "-c", code)
    assert asked.returncode == EX_TEMPFAIL, (asked.returncode, asked.stderr)
    assert "which colour, over ssh?" in asked.stderr, asked.stderr
    question = re.search(r"mcpx elicit answer (\S+)", asked.stderr)
    task = re.search(r"mcpx task result (\S+)", asked.stderr)
    assert question and task, asked.stderr
    with target.api() as api:  # the run waits on the remote daemon, as a task
        shown = api.get(f"/v1/tasks/{task[1]}").json()
    assert shown["status"] in ("working", "input_required"), shown

    answered = target.cli("elicit", "answer", question[1], "answer=teal")
    assert answered.returncode == 0, answered.stderr
    collected = target.cli("task", "result", task[1], "--json")
    assert collected.returncode == 0, collected.stderr
    doc = json.loads(collected.stdout)  # the run's outcome, as `mcpx exec --json` has it
    assert (doc["ok"], doc["exitCode"], doc["result"]["sum"]) == (True, 0, 3), doc
    assert "teal" in json.dumps(doc["result"]["answer"]), doc
    target.no_local_daemon()
