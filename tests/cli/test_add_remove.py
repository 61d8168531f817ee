"""``mcpx add`` / ``remove`` / ``enable`` / ``disable`` against a running daemon, and
``add --from-registry``: the config file edited in place, the daemon following it live
while an MCP host (``mcpx serve``) stays connected.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx.cli._server_json import SCHEMAS, ServerJsonError, convert
from support.daemon import Daemon, running_daemon
from support.peers import stdio_peer
from support.waiting import wait_until

DEMO = [sys.executable, "-m", "mcpx", "demo-server"]
SETTINGS = {"daemon.configPoll": "0.2s"}
SCHEMA = SCHEMAS[-1]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running_daemon(tmp_path, {"first": {"command": DEMO[0], "args": DEMO[1:]}}, SETTINGS) as d:
        yield d


def _servers(daemon: Daemon) -> dict[str, dict[str, Any]]:
    with daemon.http() as api:
        return {s["name"]: s for s in api.get("/v1/servers").json()["servers"]}


def test_added_server_answers_and_a_connected_host_calls_it_then_remove(daemon: Daemon) -> None:
    before = daemon.config.read_text()
    with stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env()) as host:
        host.initialize("2025-11-25")
        added = daemon.cli("add", "second", "--", *DEMO)
        assert added.returncode == 0, added.stderr
        assert "second answered: era" in added.stdout and " tools" in added.stdout, added.stdout
        # The file: the old text with one member more.
        after = daemon.config.read_text()
        assert after.startswith(before[: before.index("}}, ")])
        assert json.loads(after)["mcpServers"]["second"] == {"command": DEMO[0], "args": DEMO[1:]}
        assert "second" in _servers(daemon)  # no restart
        call = {"server": "second", "tool": "echo", "arguments": {"text": "live"}}
        reply = host.request(2, "tools/call", {"name": "mcpx_call", "arguments": call}, timeout=60)
        assert reply["result"]["content"][0]["text"] == "live", reply
        removed = daemon.cli("remove", "second")
        assert removed.returncode == 0, removed.stderr
        assert daemon.config.read_text() == before
        wait_until(lambda: "second" not in _servers(daemon), message="second gone")
        gone = host.request(3, "tools/call", {"name": "mcpx_call", "arguments": call}, timeout=60)
        assert "error" in gone or gone["result"].get("isError"), gone


def test_existing_name_is_refused_without_force_and_unknown_name_is_4(daemon: Daemon) -> None:
    before = daemon.config.read_bytes()
    again = daemon.cli("add", "first", "--url", "http://127.0.0.1:9/mcp")
    assert again.returncode == 2 and "first" in again.stderr and "--force" in again.stderr
    assert daemon.config.read_bytes() == before
    missing = daemon.cli("remove", "nope")
    assert missing.returncode == 4 and "nope" in missing.stderr
    assert daemon.cli("disable", "nope").returncode == 4
    assert daemon.config.read_bytes() == before


def test_an_upstream_that_fails_is_exit_5_and_its_entry_stays(daemon: Daemon) -> None:
    failing = daemon.cli("add", "broken", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert failing.returncode == 5, (failing.stdout, failing.stderr)
    assert "broken did not answer" in failing.stderr
    assert "broken" in json.loads(daemon.config.read_text())["mcpServers"]


def test_disable_and_enable_set_mcpx_disabled(daemon: Daemon) -> None:
    assert daemon.cli("disable", "first").returncode == 0
    assert json.loads(daemon.config.read_text())["mcpServers"]["first"]["mcpx"] == {
        "disabled": True
    }
    enabled = daemon.cli("enable", "first")
    assert enabled.returncode == 0, enabled.stderr
    assert json.loads(daemon.config.read_text())["mcpServers"]["first"]["mcpx"] == {
        "disabled": False
    }


def _server_json(**extra: Any) -> dict[str, Any]:
    return {"$schema": SCHEMA, "name": "io.github.someone/weather", "version": "1.2.0", **extra}


@pytest.mark.parametrize(
    ("package", "command", "args"),
    [
        (
            {"registryType": "npm", "identifier": "@someone/weather", "version": "1.2.0"},
            "npx",
            ["-y", "@someone/weather@1.2.0"],
        ),
        (
            {"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0"},
            "uvx",
            ["weather-mcp==1.2.0"],
        ),
        (
            {"registryType": "oci", "identifier": "docker.io/someone/weather", "version": "1.2.0"},
            "docker",
            ["run", "--rm", "-i", "-e", "API_KEY", "docker.io/someone/weather:1.2.0"],
        ),
    ],
)
def test_registry_packages_become_commands(
    package: dict[str, Any], command: str, args: list[str]
) -> None:
    env = [
        {"name": "API_KEY", "isRequired": True, "isSecret": True, "description": "the key"},
        {"name": "UNITS", "description": "metric or imperial"},
    ]
    found = convert(_server_json(packages=[{**package, "environmentVariables": env}]), "s.json")
    assert found.name == "weather" and found.source == package["registryType"]
    assert found.entry == {"command": command, "args": args, "env": {"API_KEY": "<API_KEY>"}}
    needs = {(n.name, n.required, n.secret) for n in found.needs}
    assert needs == {("API_KEY", True, True), ("UNITS", False, False)}


def test_registry_remote_and_unknown_schema() -> None:
    remote = {
        "type": "streamable-http",
        "url": "https://weather.example/mcp",
        "headers": [{"name": "Authorization", "isRequired": True, "isSecret": True}],
    }
    found = convert(_server_json(remotes=[remote]), "s.json")
    assert found.entry == {
        "type": "http",
        "url": "https://weather.example/mcp",
        "headers": {"Authorization": "<Authorization>"},
    }
    old = "https://static.modelcontextprotocol.io/schemas/2024-01-01/server.schema.json"
    with pytest.raises(ServerJsonError, match="2024-01-01"):
        convert({**_server_json(remotes=[remote]), "$schema": old}, "s.json")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A server.json on a local http server (127.0.0.1)."""
    doc = _server_json(
        packages=[{"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0"}]
    )
    (tmp_path / "server.json").write_text(json.dumps(doc))

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/server.json"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_add_from_registry_url_dry_run_and_unknown_schema_file(
    daemon: Daemon, served: str, tmp_path: Path
) -> None:
    before = daemon.config.read_bytes()
    shown = daemon.cli("add", "--from-registry", served, "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "would add weather" in shown.stdout and "weather-mcp==1.2.0" in shown.stdout
    assert daemon.config.read_bytes() == before
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({**_server_json(), "$schema": "https://x.test/v9/server.json"}))
    refused = daemon.cli("add", "--from-registry", str(odd))
    assert refused.returncode == 2 and "https://x.test/v9/server.json" in refused.stderr
    assert daemon.config.read_bytes() == before
