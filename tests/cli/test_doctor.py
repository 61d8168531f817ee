"""``mcpx doctor`` (issue 24): a good server, a crashing one, a misconfigured file, a
state dir others can read, the daemon's version; exit 0 only when nothing is broken."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.daemon import bad_entry, running_daemon

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


def _doctor(
    home: Path, config: dict[str, Any] | str, state: Path
) -> subprocess.CompletedProcess[str]:
    path = home / ".mcpx.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_")}
    env |= {"MCPX_STATE_DIR": str(state), "MCPX_CONFIG": str(path)}
    return subprocess.run(
        [sys.executable, "-m", "mcpx", "doctor", "--json"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_good_server_is_all_good(tmp_path: Path) -> None:
    done = _doctor(tmp_path, {"mcpServers": {"demo": DEMO}}, tmp_path / "state")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    [demo] = report["servers"]
    assert demo["ok"] and demo["tools"] >= 1 and demo["revision"] and demo["era"]
    assert demo["auth"] == "none" and demo["firstAnswerMs"] > 0
    assert report["config"]["servers"] == ["demo"] and report["problems"] == []
    assert not (tmp_path / "state").exists()  # no daemon was started


def test_crashing_server_is_broken_with_its_stderr(tmp_path: Path) -> None:
    servers = {"demo": DEMO, "crash": bad_entry("exit-at-start")}
    done = _doctor(tmp_path, {"mcpServers": servers}, tmp_path / "state")
    assert done.returncode == 8, done.stdout + done.stderr
    report = json.loads(done.stdout)
    crash = next(s for s in report["servers"] if s["name"] == "crash")
    assert not crash["ok"] and crash["error"]
    assert [p for p in report["problems"] if "crash" in p["what"] and p["fix"]]
    assert next(s for s in report["servers"] if s["name"] == "demo")["ok"]


def test_misconfigured_file_names_the_key(tmp_path: Path) -> None:
    text = json.dumps({"mcpServers": {"demo": DEMO}, "setings": {}})
    done = _doctor(tmp_path, text, tmp_path / "state")
    assert done.returncode == 8, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert "setings" in report["config"]["error"]
    assert "settings" in report["problems"][0]["what"]  # did you mean


def test_loose_state_dir_and_the_daemon(tmp_path: Path) -> None:
    with running_daemon(tmp_path, {"demo": DEMO}) as d:
        done = d.cli("doctor", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert report["daemon"]["running"] and report["daemon"]["version"]
        assert report["daemon"]["version"] == report["daemon"]["cliVersion"]
        assert report["daemon"]["url"] == d.info["url"]
        loose = d.state / "loose.txt"
        loose.write_text("x")
        loose.chmod(0o644)
        done = d.cli("doctor")
        assert done.returncode == 8
        assert f"chmod 600 {loose}" in done.stdout
