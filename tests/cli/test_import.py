"""``mcpx import``: servers read from Claude Desktop's, VS Code's and Cursor's own files
(written here in their formats, under a HOME of the test's own), duplicates merged, name
clashes renamed, a file that does not parse refused at its line and column."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcpx.config._host_configs import HOSTS, blank_jsonc, host_files

DEMO = {"command": "python", "args": ["-m", "mcpx", "demo-server"]}
VSCODE_SETTINGS = """{
  // the editor's own settings
  "editor.fontSize": 14,
  "mcp": {
    "servers": {
      /* a remote one */
      "search": {"type": "http", "url": "https://search.example/mcp",},
      "demo-again": {"type": "stdio", "command": "python", "args": ["-m", "mcpx", "demo-server"]},
    },
  },
}
"""


def _run(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCPX_", "XDG_"))}
    env |= {"HOME": str(home), "MCPX_CONFIG": str(config), "MCPX_STATE_DIR": str(home / "st")}
    return subprocess.run(
        [sys.executable, "-m", "mcpx", "import", *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    claude = home / ".config" / "Claude" / "claude_desktop_config.json"
    claude.parent.mkdir(parents=True)
    claude.write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}, "demo": DEMO}}))
    vscode = home / ".config" / "Code" / "User" / "settings.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(VSCODE_SETTINGS)
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"github": {"url": "https://gh.example/mcp"}}}))
    config = home / ".mcpx.json"
    config.write_text(
        '{\n  "mcpServers": {\n    "mine": {"command": "python", "args": ["-m", '
        '"mcpx", "demo-server"]}\n  }\n}\n'
    )
    return home, config


def test_import_from_every_host_merges_duplicates_and_renames_clashes(tmp_path: Path) -> None:
    home, config = _home(tmp_path)
    before = config.read_text()
    shown = _run(home, config, "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert config.read_text() == before
    done = _run(home, config)
    assert done.returncode == 0, done.stderr
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers == {
        "mine": DEMO,
        "github": {"command": "gh-mcp"},
        "search": {"type": "http", "url": "https://search.example/mcp"},
        "github-cursor": {"url": "https://gh.example/mcp"},
    }
    # demo (claude) and demo-again (vscode) are mine under other names: merged, said so.
    assert "merged demo" in done.stdout and "merged demo-again" in done.stdout, done.stdout
    assert "renamed github" in done.stdout and "github-cursor" in done.stdout
    assert config.read_text().startswith(before[: before.index("\n  }\n}")])
    again = _run(home, config)  # nothing new the second time
    assert again.returncode == 0 and "nothing to add" in again.stdout, again.stdout


def test_import_from_one_host_or_a_file(tmp_path: Path) -> None:
    home, config = _home(tmp_path)
    assert _run(home, config, "--from", "cursor").returncode == 0
    assert set(json.loads(config.read_text())["mcpServers"]) == {"mine", "github"}
    other = tmp_path / "theirs.json"
    other.write_text(json.dumps({"servers": {"x": {"url": "https://x.example/"}}}))
    assert _run(home, config, "--from", str(other)).returncode == 0
    assert "x" in json.loads(config.read_text())["mcpServers"]


def test_a_file_that_does_not_parse_is_refused_with_its_position(tmp_path: Path) -> None:
    home, config = _home(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "mcpServers": {\n    "x" {"command": "y"}\n  }\n}\n')
    before = config.read_bytes()
    refused = _run(home, config, "--from", str(bad))
    assert refused.returncode != 0
    assert f"{bad}:3:9: invalid JSON" in refused.stderr, refused.stderr
    assert config.read_bytes() == before


def test_jsonc_is_blanked_in_place_and_locations_follow_the_platform(tmp_path: Path) -> None:
    blanked = blank_jsonc(VSCODE_SETTINGS)
    assert len(blanked) == len(VSCODE_SETTINGS)
    assert blanked.count("\n") == VSCODE_SETTINGS.count("\n")
    assert json.loads(blanked)["mcp"]["servers"]["search"]["type"] == "http"
    assert blank_jsonc('{"a": "// not a comment,}"}') == '{"a": "// not a comment,}"}'
    assert blank_jsonc('\ufeff{"a": [1,],} /* x') == ' {"a": [1 ] }     '
    home, cwd = tmp_path / "h", tmp_path / "w"
    mac = host_files(HOSTS["claude"], "darwin", home, cwd, {})
    assert mac[0].path == home / "Library/Application Support/Claude/claude_desktop_config.json"
    win = host_files(HOSTS["vscode"], "win32", home, cwd, {"APPDATA": "C:/A"})
    assert [f.path for f in win] == [
        Path("C:/A/Code/User/settings.json"),
        Path("C:/A/Code/User/mcp.json"),
        cwd / ".vscode" / "mcp.json",
    ]
    cursor = host_files(HOSTS["cursor"], "linux", home, cwd, {})
    assert [f.path for f in cursor] == [home / ".cursor/mcp.json", cwd / ".cursor/mcp.json"]


def test_mcpx_itself_is_not_imported(tmp_path: Path) -> None:
    home, config = _home(tmp_path)
    cursor = home / ".cursor" / "mcp.json"
    mcpx = {"command": "/opt/venv/bin/mcpx", "args": ["serve", "--profile", "ops"]}
    cursor.write_text(json.dumps({"mcpServers": {"mcpx": mcpx}}))
    run = _run(home, config, "--from", "cursor")
    assert run.returncode == 0, run.stderr
    assert "skipped mcpx" in run.stdout + run.stderr and "mcpx itself" in run.stdout + run.stderr
    assert set(json.loads(config.read_text())["mcpServers"]) == {"mine"}
