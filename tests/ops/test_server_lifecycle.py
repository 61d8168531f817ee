"""An operator starts, stops and restarts a server's instances (issue 25): POST
/v1/servers/{server}/start|stop|restart and ``mcpx server start|stop|restart``, against a
real daemon running the bundled demo, each process checked by its pid."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.processes import process_gone
from support.waiting import wait_until

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
# Says something on stderr, then exits before any handshake: a start that fails.
BROKEN = {
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stderr.write('lifecycle-fixture: no such database\\n')"],
}
OPERATOR = "stopped by an operator"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("lifecycle")
    with running_daemon(tmp, {"demo": DEMO, "broken": BROKEN}) as running:
        yield running


@pytest.fixture
def api(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.http() as client:
        yield client


def _instances(api: httpx.Client, server: str = "demo") -> list[dict[str, Any]]:
    servers = api.get("/v1/servers").json()["servers"]
    [found] = [s for s in servers if s["name"] == server]
    return list(found["instances"])


def _post(api: httpx.Client, what: str, server: str = "demo", **body: Any) -> httpx.Response:
    return api.post(f"/v1/servers/{server}/{what}", json=body)


def _started(api: httpx.Client) -> dict[str, Any]:
    r = _post(api, "start")
    assert r.status_code == 200, r.text
    inst: dict[str, Any] = r.json()["instance"]
    return inst


def test_start_answers_the_ready_instance_with_its_pid(api: httpx.Client) -> None:
    r = _post(api, "start")
    assert r.status_code == 200, r.text
    doc = r.json()
    inst = doc["instance"]
    assert doc["server"] == "demo"
    assert inst["state"] == "ready" and inst["scope"] == "shared", inst
    assert isinstance(inst["pid"], int) and not process_gone(inst["pid"]), inst
    assert inst["era"] and inst["revision"], inst
    # As /v1/servers shows it; started again, the same instance (it runs already).
    assert [i["id"] for i in _instances(api)] == [inst["id"]]
    again = _started(api)
    assert (again["id"], again["pid"]) == (inst["id"], inst["pid"])


def test_restart_answers_a_new_process_and_the_old_one_is_gone(api: httpx.Client) -> None:
    old = _started(api)
    r = _post(api, "restart")
    assert r.status_code == 200, r.text
    doc = r.json()
    new = doc["instance"]
    assert [i["id"] for i in doc["stopped"]] == [old["id"]]
    assert doc["stopped"][0]["state"] == "closed", doc
    assert new["state"] == "ready" and new["id"] != old["id"], doc
    assert new["pid"] != old["pid"] and not process_gone(new["pid"]), doc
    wait_until(lambda: process_gone(old["pid"]), timeout=30, message="the old process gone")
    assert [i["id"] for i in _instances(api)] == [new["id"]]


def test_stop_ends_the_process_and_the_next_call_starts_one(api: httpx.Client) -> None:
    old = _started(api)
    r = _post(api, "stop")
    assert r.status_code == 200, r.text
    assert [i["id"] for i in r.json()["stopped"]] == [old["id"]]
    assert _instances(api) == []
    wait_until(lambda: process_gone(old["pid"]), timeout=30, message="the stopped process gone")
    # Nothing runs: stopping again stops nothing.
    assert _post(api, "stop").json() == {"server": "demo", "stopped": []}
    called = api.post(
        "/v1/call", json={"server": "demo", "tool": "add", "arguments": {"a": 1, "b": 2}}
    )
    assert called.status_code == 200, called.text
    [inst] = _instances(api)
    assert inst["state"] == "ready" and inst["pid"] != old["pid"], inst
    assert not process_gone(inst["pid"]), inst


def test_stop_during_a_slow_call_fails_it_saying_an_operator_stopped_it(
    daemon: Daemon, api: httpx.Client
) -> None:
    _started(api)
    answers: list[httpx.Response] = []

    def slow_call() -> None:
        with daemon.http() as own:
            body = {"server": "demo", "tool": "slow", "arguments": {"seconds": 120, "steps": 2}}
            answers.append(own.post("/v1/call", json=body))

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    wait_until(lambda: [i for i in _instances(api) if i["inFlight"] == 1], timeout=30)
    began = time.monotonic()
    r = _post(api, "stop")
    assert r.status_code == 200, r.text
    caller.join(timeout=60)
    assert not caller.is_alive(), "the slow call still hangs after its instance was stopped"
    assert time.monotonic() - began < 30  # not the 120 s the tool would have taken
    [answer] = answers
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] == "upstream_error", error
    assert OPERATOR in error["message"] and "tools/call was ended" in error["message"], error
    # The call log says the same of it.
    [logged] = api.get("/v1/log", params={"tool": "slow", "limit": 1}).json()["calls"]
    assert OPERATOR in str(logged["error"]), logged


def test_one_instance_is_named_by_its_id(api: httpx.Client) -> None:
    inst = _started(api)
    missing = _post(api, "stop", instance=inst["id"] + 1000)
    assert missing.status_code == 404, missing.text
    error = missing.json()["error"]
    assert error["code"] == "unknown_instance" and error["details"]["known"] == [inst["id"]]
    assert "runs no instance" in error["message"], error
    assert [i["id"] for i in _instances(api)] == [inst["id"]]  # nothing was stopped
    r = _post(api, "restart", instance=inst["id"])
    assert r.status_code == 200, r.text
    assert [i["id"] for i in r.json()["stopped"]] == [inst["id"]]
    new = r.json()["instance"]
    r = _post(api, "stop", instance=new["id"])
    assert [i["id"] for i in r.json()["stopped"]] == [new["id"]], r.text
    assert _instances(api) == []


def test_an_unknown_server_is_404_naming_the_servers(api: httpx.Client) -> None:
    for what in ("start", "stop", "restart"):
        r = _post(api, what, server="nope")
        assert r.status_code == 404, r.text
        error = r.json()["error"]
        assert error["code"] == "unknown_server", error
        assert error["details"]["known"] == ["broken", "demo"], error
        assert "no server named 'nope'" in error["message"], error


def test_a_failing_start_is_the_pools_error_with_the_stderr_tail(api: httpx.Client) -> None:
    for what in ("start", "restart"):
        r = _post(api, what, server="broken")
        assert r.status_code == 502, r.text
        error = r.json()["error"]
        assert error["code"] == "upstream_error" and error["details"] == {"server": "broken"}
        # The first failures say why (its stderr); later ones that starts are paused for it.
        assert "no such database" in error["message"] or "not started again" in error["message"]
    assert _instances(api, "broken") == []


def test_bad_input_is_refused_naming_the_field(api: httpx.Client) -> None:
    r = _post(api, "stop", instance=0)
    assert r.status_code == 400, r.text
    assert "instance" in r.json()["error"]["message"], r.text
    r = _post(api, "restart", instance="one")
    assert r.status_code == 400, r.text


def test_openapi_lists_the_three(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for what in ("start", "stop", "restart"):
        post = paths[f"/v1/servers/{{server}}/{what}"]["post"]
        assert post["operationId"] == f"servers.{what}", post
        names = [p["name"] for p in post.get("parameters", [])]
        assert "server" in names, post
    body = paths["/v1/servers/{server}/stop"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]
    assert schema["properties"]["instance"]["type"] == "integer", schema


def test_the_cli_commands(daemon: Daemon) -> None:
    started = daemon.cli("server", "start", "demo")
    assert started.returncode == 0, started.stderr
    assert "ready" in started.stdout and "shared, pid " in started.stdout, started.stdout
    restarted = daemon.cli("server", "restart", "demo")
    assert restarted.returncode == 0, restarted.stderr
    assert "demo: stopped instance " in restarted.stdout, restarted.stdout
    assert " ready (shared, pid " in restarted.stdout, restarted.stdout
    stopped = daemon.cli("server", "stop", "demo", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert '"stopped"' in stopped.stdout, stopped.stdout
    none = daemon.cli("server", "stop", "demo")
    assert (none.returncode, none.stdout.strip()) == (0, "demo: no instance was running")
    unknown = daemon.cli("server", "restart", "nope")
    assert unknown.returncode == 4 and "no server named 'nope'" in unknown.stderr, unknown
    no_instance = daemon.cli("server", "stop", "demo", "--instance", "999999")
    assert no_instance.returncode == 4 and "runs no instance" in no_instance.stderr, no_instance
    failing = daemon.cli("server", "start", "broken")
    assert failing.returncode == 5 and "broken" in failing.stderr, failing
    # The daemon's own commands are untouched by the group.
    assert "Stop the daemon" in daemon.cli("stop", "--help").stdout
