"""The CLI driven as a user would: a real ``mcpx`` process, its output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpx import __version__
from mcpx.spec import REVISIONS


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    clean["XDG_CONFIG_HOME"] = str(cwd / "xdg-config")
    return subprocess.run(
        [sys.executable, "-m", "mcpx", *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def settings_json(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = run("settings", "--json", *args, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in doc["settings"]}


def test_version(tmp_path: Path) -> None:
    proc = run("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"mcpx, version {__version__}"


def test_settings_defaults_and_origins(tmp_path: Path) -> None:
    doc = settings_json(tmp_path)
    assert doc["config"] is None
    rows = by_name(doc)
    assert rows["pool.callTimeout"]["display"] == "2m"
    assert rows["pool.callTimeout"]["origin"]["kind"] == "default"
    assert rows["pool.callTimeout"]["env"] == "MCPX_POOL_CALL_TIMEOUT"
    assert rows["pool.callTimeout"]["flag"] == "--pool-call-timeout"
    assert doc["spec"]["precedence"] == list(reversed(REVISIONS))


def test_sources_in_order_file_env_flag(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {}, "settings": {"pool.max": 2, "pool.callTimeout": "30s"}})
    )
    (tmp_path / "sub").mkdir()
    doc = settings_json(
        tmp_path / "sub",
        "--pool-max",
        "7",
        env={"MCPX_POOL_MAX": "5", "MCPX_MCP_SPEC": "2025-06-18"},
    )
    assert doc["config"]["path"] == str(tmp_path / ".mcp.json")
    assert "nearest .mcp.json" in doc["config"]["foundBy"]
    rows = by_name(doc)
    assert rows["pool.max"]["value"] == 7
    assert rows["pool.max"]["origin"]["kind"] == "flag"
    assert rows["pool.callTimeout"]["display"] == "30s"
    assert rows["pool.callTimeout"]["origin"]["kind"] == "file"
    assert rows["spec.first"]["origin"] == {"kind": "env", "detail": "MCPX_MCP_SPEC"}
    assert doc["spec"]["first"] == "2025-06-18"


def test_a_boolean_flag_alone_means_true_and_takes_a_value(tmp_path: Path) -> None:
    alone = by_name(settings_json(tmp_path, "--insecure-no-auth"))["daemon.insecureNoAuth"]
    assert alone["value"] is True and alone["origin"]["kind"] == "flag"
    given = by_name(settings_json(tmp_path, "--upstream-era-cache", "false"))
    assert given["upstream.eraCache"]["value"] is False
    # Any other setting's flag still needs its value.
    proc = run("settings", "--pool-max", cwd=tmp_path)
    assert proc.returncode == 2 and "requires an argument" in proc.stderr


def test_unknown_revision_is_refused_naming_the_five(tmp_path: Path) -> None:
    proc = run("settings", cwd=tmp_path, env={"MCPX_MCP_SPEC": "1999-01-01"})
    assert proc.returncode == 2
    assert "1999-01-01" in proc.stderr
    for rev in REVISIONS:
        assert rev in proc.stderr
    flag = run("protocol", "--mcp-spec", "latest", cwd=tmp_path)
    assert flag.returncode == 2
    assert all(rev in flag.stderr for rev in REVISIONS)


def test_bad_config_file_names_path_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / ".mcpx.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": 3}\n  }\n}\n')
    proc = run("settings", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{path}:3:22:" in proc.stderr  # where the 3 starts
    assert "mcpServers.a.command" in proc.stderr


def test_table_output_names_each_setting_and_its_source(tmp_path: Path) -> None:
    proc = run("settings", "--pool-idle-timeout", "90s", cwd=tmp_path)
    assert proc.returncode == 0
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("pool.idleTimeout"))
    assert "1m30s" in line and "flag --pool-idle-timeout" in line
    assert "config file: none" in proc.stdout


def test_protocol_json_and_table(tmp_path: Path) -> None:
    proc = run("protocol", "--json", "--mcp-spec", "2024-11-05", cwd=tmp_path)
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc["spec"]["first"] == "2024-11-05"
    names = {(m["name"], m["direction"]) for m in doc["methods"]}
    assert ("server/discover", "client") in names
    table = run("protocol", "--kind", "request", cwd=tmp_path)
    assert table.returncode == 0
    init = next(ln for ln in table.stdout.splitlines() if ln.startswith("request      initialize"))
    assert init.split()[-5:] == ["✔", "✔", "✔", "✔", "✗"]


@pytest.mark.parametrize("bad", [["protocol", "--kind", "nope"], ["nosuch"]])
def test_usage_errors_exit_2(tmp_path: Path, bad: list[str]) -> None:
    assert run(*bad, cwd=tmp_path).returncode == 2


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("serve", ["--passthrough"]),
        ("daemon", ["--port", "--address", "--daemon-auth", "--state-dir"]),
        ("call", []),
    ],
)
def test_help_shows_a_commands_own_settings_and_points_at_the_rest(
    tmp_path: Path, command: str, shown: list[str]
) -> None:
    proc = run(command, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = {word.rstrip(",") for line in proc.stdout.splitlines() for word in line.split()}
    assert set(shown) <= listed
    # The other sixty-odd settings stay out of the way, pointed at instead.
    assert "--proto-state-ttl" not in listed
    assert "`mcpx settings` lists them." in " ".join(proc.stdout.split())
    # And a hidden flag still works.
    assert run(command, "--proto-state-ttl", "1h", "--help", cwd=tmp_path).returncode == 0
