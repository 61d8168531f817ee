"""The daemon as a real process: /v1, the pool, bad input, the CLI as a user runs it."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from support.daemon import Daemon, bad_entry, running_daemon, sdk_entry
from support.waiting import wait_until


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {
        "sdk": sdk_entry("1.23.3"),
        "modern": sdk_entry("2.3.0"),
        "crash": bad_entry("exit"),
        "hang": bad_entry("hang"),
    }
    with running_daemon(tmp_path_factory.mktemp("d"), servers, {"pool.callTimeout": "3s"}) as d:
        yield d


def test_health_files_and_socket_mode(daemon: Daemon) -> None:
    with daemon.http() as client:
        health = client.get("/health").json()
    # /health says nothing more (issue 18: it is open on TCP); daemon.json has the pid.
    assert health == {"ok": True} and daemon.info["pid"] == daemon.proc.pid
    assert stat.S_IMODE(Path(daemon.info["socket"]).stat().st_mode) == 0o600
    assert daemon.info["url"].startswith("http://127.0.0.1:")
    # The TCP port serves the same app.
    import httpx

    assert httpx.get(daemon.info["url"] + "/health", timeout=10).json() == {"ok": True}


def test_openapi_is_valid_3_1(daemon: Daemon) -> None:
    with daemon.http() as client:
        doc = client.get("/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    validate(doc)
    assert {"/v1/call", "/v1/tools", "/v1/servers", "/v1/protocol", "/health"} <= set(doc["paths"])


def test_call_and_listing(daemon: Daemon) -> None:
    with daemon.http() as client:
        result = client.post(
            "/v1/call", json={"server": "sdk", "tool": "add", "arguments": {"a": 2, "b": 5}}
        )
        assert result.status_code == 200
        assert result.json()["content"][0]["text"] == "7"
        modern = client.post(
            "/v1/call", json={"server": "modern", "tool": "echo", "arguments": {"text": "m"}}
        )
        assert modern.json()["resultType"] == "complete"
        servers = {s["name"]: s for s in client.get("/v1/servers").json()["servers"]}
        sdk = servers["sdk"]["instances"][0]
        assert (sdk["era"], sdk["revision"], sdk["state"]) == ("legacy", "2025-11-25", "ready")
        assert isinstance(sdk["pid"], int) and sdk["calls"] >= 1
        assert servers["modern"]["instances"][0]["era"] == "modern"
        protocol = client.get("/v1/protocol").json()
        assert protocol["spec"]["first"] == "2026-07-28"
        prompts = client.get("/v1/prompts", params={"server": "sdk"}).json()
        assert [(p["server"], p["name"]) for p in prompts["prompts"]] == [("sdk", "greet")]
        resources = client.get("/v1/resources", params={"server": "modern"}).json()["resources"]
        assert "fixture://static" in {r["uri"] for r in resources}
        templates = client.get("/v1/resources/templates", params={"server": "sdk"}).json()
        assert templates["resourceTemplates"][0]["uriTemplate"] == "fixture://item/{id}"
        read = client.post(
            "/v1/resources/read", json={"server": "modern", "uri": "fixture://item/3"}
        )
        assert read.json()["contents"][0]["text"] == "item 3"
        everything = client.get("/v1/tools").json()
        assert {"crash", "hang", "modern", "sdk"} >= {t["server"] for t in everything["tools"]}


def test_search_ranks_exact_name_first(daemon: Daemon) -> None:
    with daemon.http() as client:
        found = client.get("/v1/tools", params={"server": "sdk", "search": "echo"}).json()["tools"]
        assert found[0]["name"] == "echo"
        both = client.get("/v1/tools", params={"search": "add integers"}).json()["tools"]
        assert {t["name"] for t in both} == {"add"}
        anyword = client.get("/v1/tools", params={"server": "sdk", "search": "add zzz"}).json()
        assert [t["name"] for t in anyword["tools"]] == ["add"]


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"server": "nope", "tool": "x"}, 404, "unknown_server", "configured:"),
        ({"server": "sdk", "tool": "nope"}, 404, "unknown_tool", "it has: add"),
        (
            {"server": "sdk", "tool": "add", "arguments": {"a": "x", "b": 1}},
            400,
            "invalid_input",
            "a:",
        ),
        ({"server": "sdk"}, 400, "invalid_input", "tool"),
        ({"server": "sdk", "tool": "add", "extra": 1}, 400, "invalid_input", "extra"),
    ],
)
def test_bad_input_is_refused_before_any_upstream(
    daemon: Daemon, body: dict[str, object], status: int, code: str, words: str
) -> None:
    with daemon.http() as client:
        response = client.post("/v1/call", json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and words in error["message"]


def test_a_body_that_is_not_json(daemon: Daemon) -> None:
    with daemon.http() as client:
        response = client.post(
            "/v1/call", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "bad_request"
        assert client.get("/v1/nothing").json()["error"]["code"] == "unknown_operation"


def test_a_crashed_upstream_names_server_and_status(daemon: Daemon) -> None:
    with daemon.http() as client:
        first = client.post(
            "/v1/call", json={"server": "crash", "tool": "echo", "arguments": {"text": "x"}}
        )
        assert first.status_code == 502
        message = first.json()["error"]["message"]
        assert "crash" in message and "status 3" in message and "boom" in message
        # It is started again on the next call (and crashes again, as it does).
        again = client.post(
            "/v1/call", json={"server": "crash", "tool": "echo", "arguments": {"text": "x"}}
        )
        assert again.status_code == 502 and "status 3" in again.json()["error"]["message"]


@pytest.mark.obligation("C-STDIO-11")
def test_a_killed_instance_is_replaced(daemon: Daemon) -> None:
    with daemon.http() as client:
        client.post("/v1/call", json={"server": "sdk", "tool": "echo", "arguments": {"text": "a"}})
        listed = {s["name"]: s for s in client.get("/v1/servers").json()["servers"]}
        pid = listed["sdk"]["instances"][0]["pid"]
        os.kill(pid, signal.SIGKILL)

        statuses: list[int] = []

        def call_answered() -> bool:
            again = client.post(
                "/v1/call", json={"server": "sdk", "tool": "echo", "arguments": {"text": "b"}}
            )
            statuses.append(again.status_code)
            return again.status_code == 200

        wait_until(
            call_answered,
            timeout=20,
            interval=0.1,
            message=lambda: f"no call answered after the kill (last statuses {statuses[-3:]})",
        )
        servers = {s["name"]: s for s in client.get("/v1/servers").json()["servers"]}
        assert servers["sdk"]["instances"][0]["pid"] != pid


@pytest.mark.obligation("C-CANC-10", "C-CANC-12")
def test_timeouts_are_clamped_never_raised(daemon: Daemon) -> None:
    with daemon.http() as client:
        low = client.post(
            "/v1/call",
            json={"server": "hang", "tool": "echo", "arguments": {"text": "x"}, "timeout": 0.5},
        )
        assert low.status_code == 504 and "within 0.5s" in low.json()["error"]["message"]
        high = client.post(
            "/v1/call",
            json={"server": "hang", "tool": "echo", "arguments": {"text": "x"}, "timeout": 600},
        )
        # pool.callTimeout is 3s in this daemon's config: 600 is clamped to it.
        assert high.status_code == 504 and "within 3s" in high.json()["error"]["message"]


def test_concurrent_first_calls_start_one_instance(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"sdk": sdk_entry("1.12.4")}) as d, d.http() as client:

        def one(i: int) -> int:
            body = {"server": "sdk", "tool": "echo", "arguments": {"text": str(i)}}
            return client.post("/v1/call", json=body).status_code

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            codes = list(pool.map(one, range(6)))
        assert codes == [200] * 6
        instances = client.get("/v1/servers").json()["servers"][0]["instances"]
        assert len(instances) == 1 and instances[0]["calls"] == 6
        # The catalogue is on disk after the first calls.
        catalogue = d.state / "catalogue.json"
        wait_until(catalogue.exists, timeout=20)
        tools = json.loads(catalogue.read_text())["servers"]["sdk"]["tools"]
        assert "echo" in {t["name"] for t in tools}


def test_idle_instances_are_reaped(tmp_path: Path) -> None:
    settings = {"pool.idleTimeout": "0.3s"}
    with running_daemon(tmp_path, {"sdk": sdk_entry("1.9.4")}, settings) as d, d.http() as client:
        client.post("/v1/call", json={"server": "sdk", "tool": "echo", "arguments": {"text": "x"}})
        wait_until(
            lambda: client.get("/v1/servers").json()["servers"][0]["instances"] == [],
            timeout=20,
            interval=0.1,
            message="the idle instance is still listed",
        )
        # The catalogue still answers without starting anything.
        tools = client.get("/v1/tools").json()["tools"]
        assert "echo" in {t["name"] for t in tools}
        assert client.get("/v1/servers").json()["servers"][0]["instances"] == []


def test_upstream_stderr_is_in_the_log_tagged_by_server(daemon: Daemon) -> None:
    with daemon.http() as client:
        client.post(
            "/v1/call", json={"server": "crash", "tool": "echo", "arguments": {"text": "x"}}
        )
    lines = [line for line in daemon.log_lines() if line.get("server") == "crash"]
    assert any("boom" in line["msg"] for line in lines)


def test_cli_as_a_user(daemon: Daemon) -> None:
    tools = daemon.cli("tools", "sdk")
    assert tools.returncode == 0 and "echo" in tools.stdout
    call = daemon.cli("call", "sdk", "add", "a=20", "b=22")
    assert call.returncode == 0 and call.stdout.strip() == "42"
    as_json = daemon.cli("call", "sdk", "echo", "--args", '{"text": "j"}', "--json")
    assert json.loads(as_json.stdout)["content"][0]["text"] == "j"
    failed = daemon.cli("call", "sdk", "fail")
    assert failed.returncode == 1
    unknown = daemon.cli("call", "nope", "x")
    assert unknown.returncode == 4 and "configured:" in unknown.stderr
    bad = daemon.cli("call", "sdk", "add", "a=1")
    assert bad.returncode == 2 and "'b' is a required property" in bad.stderr
    servers = daemon.cli("servers", "--json")
    assert {s["name"] for s in json.loads(servers.stdout)["servers"]} >= {"sdk", "crash"}
    status = daemon.cli("status")
    assert status.returncode == 0 and str(daemon.proc.pid) in status.stdout
    read = daemon.cli("read", "sdk", "fixture://static")
    assert read.stdout.strip() == "static content"


def test_cli_starts_and_stops_a_daemon(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"sdk": sdk_entry("1.23.3")}) as d:
        stopped = d.cli("stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout
        d.proc.wait(timeout=30)
        assert not (d.state / "daemon.json").exists()
        assert d.cli("status").returncode == 3
        started = d.cli("tools", "sdk")
        assert started.returncode == 0 and "started the daemon" in started.stderr
        info = json.loads((d.state / "daemon.json").read_text())
        stopped_again = d.cli("stop")
        assert str(info["pid"]) in stopped_again.stdout


def test_a_server_started_by_a_call_is_catalogued(tmp_path: Path) -> None:
    """prompts/get reaches the pool without listing first: the instance it starts
    refreshes the catalogue in the background."""
    with running_daemon(tmp_path, {"sdk": sdk_entry("1.23.3")}) as d, d.http() as client:
        got = client.post(
            "/v1/prompts/get", json={"server": "sdk", "name": "greet", "arguments": {"name": "x"}}
        )
        assert got.status_code == 200
        catalogue = d.state / "catalogue.json"
        wait_until(catalogue.exists, timeout=20)
        entry = json.loads(catalogue.read_text())["servers"]["sdk"]
        assert {p["name"] for p in entry["prompts"]} == {"greet"}


def test_the_embedded_default_is_a_working_gateway(tmp_path: Path) -> None:
    """No config anywhere: the daemon starts on the bundled demo server."""
    home = tmp_path / "empty"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {"MCPX_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}

    def mcpx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcpx", *args],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    try:
        tools = mcpx("tools", "--json")
        assert tools.returncode == 0, tools.stderr
        assert "started the daemon" in tools.stderr
        assert {("demo", "echo"), ("demo", "slow")} <= {
            (t["server"], t["name"]) for t in json.loads(tools.stdout)["tools"]
        }
        call = mcpx("call", "demo", "add", "a=2", "b=3")
        assert call.returncode == 0 and call.stdout.strip() == "5"
    finally:
        mcpx("stop")


def test_one_daemon_per_state_dir(tmp_path: Path) -> None:
    """Commands that find no daemon at once start one between them; a second daemon on
    the same state dir is refused and leaves the first untouched."""
    home = tmp_path / "empty"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {"MCPX_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    argv = [sys.executable, "-m", "mcpx"]

    def popen(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*argv, *args],
            cwd=home,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    try:
        racing = [popen("servers", "--json") for _ in range(3)]
        outcomes = [p.communicate(timeout=120) for p in racing]
        assert [p.returncode for p in racing] == [0, 0, 0], outcomes
        assert sum("started the daemon" in err for _, err in outcomes) == 1, outcomes
        info = json.loads((tmp_path / "state" / "daemon.json").read_text())
        second = popen("daemon")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 1 and "a daemon already runs" in err, err
        assert f"pid {info['pid']}" in err
        still = subprocess.run(
            [*argv, "status", "--json"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert json.loads(still.stdout)["pid"] == info["pid"], still.stdout
    finally:
        subprocess.run(
            [*argv, "stop"], cwd=home, env=env, capture_output=True, timeout=60, check=False
        )
