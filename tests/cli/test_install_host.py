"""``mcpx install-host claude|vscode|cursor`` (issue 26, "Getting servers in").

The command runs as a user runs it (``python -m mcpx``, its own process) with ``HOME`` a
temporary directory, so each host's file lands where that host reads it on Linux. The
round trip reads the written file back as the host would (its servers key, its entry) and
starts exactly that command with a real MCP host (``tests/fixtures/sdk_host.py`` on the
official Python SDK) against a real daemon on the demo upstream: tools listed, ``mcpx_call``
answered. The other platforms' locations and the text splice are checked as tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx.config._host_configs import (
    BACKUP_INFIX,
    HOSTS,
    host_config_path,
    put_entry,
    serve_entry,
)
from support.daemon import Daemon, running_daemon
from support.hosts import ECHO_TEXT, GATEWAY_TOOLS, README_URI, SDK_HOST, run_host
from support.peers import peer_python

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
# Where each host's file is on Linux, under HOME, with XDG_CONFIG_HOME unset.
LINUX_FILES = {
    "claude": ".config/Claude/claude_desktop_config.json",
    "vscode": ".config/Code/User/mcp.json",
    "cursor": ".cursor/mcp.json",
}
SERVERS_KEY = {"claude": "mcpServers", "vscode": "servers", "cursor": "mcpServers"}
# The mcpx this test's interpreter runs (python -m mcpx in the virtualenv): its script.
MCPX = str(Path(sys.executable).parent / "mcpx")
EX_USAGE = 2


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("install-host"), {"demo": DEMO}) as d:
        yield d


def install(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    drop = ("XDG_CONFIG_HOME", "APPDATA")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_") and k not in drop}
    return subprocess.run(
        [sys.executable, "-m", "mcpx", "install-host", *args],
        cwd=home,
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + BACKUP_INFIX + "*"))


def host_entry(path: Path, host: str, name: str = "mcpx") -> dict[str, Any]:
    """The entry ``host`` would start, read from its file as it reads it."""
    servers = json.loads(path.read_text(encoding="utf-8"))[SERVERS_KEY[host]]
    entry: dict[str, Any] = servers[name]
    return entry


@pytest.mark.parametrize("host", sorted(LINUX_FILES))
def test_round_trip_the_host_starts_mcpx_serve(host: str, tmp_path: Path, daemon: Daemon) -> None:
    done = install(tmp_path, host)
    assert done.returncode == 0, done.stderr
    path = tmp_path / LINUX_FILES[host]
    assert str(path) in done.stdout
    entry = host_entry(path, host)
    assert entry["command"] == MCPX and entry["args"] == ["serve"], entry
    if host == "vscode":
        assert entry["type"] == "stdio", entry  # VS Code's user mcp.json names the transport
    assert path.stat().st_mode & 0o777 == 0o600  # a new host file: its env may hold secrets
    assert backups(path) == []  # nothing was there to back up

    sdk = [str(peer_python("1.23.3")), str(SDK_HOST), "--transport", "stdio"]
    run = run_host([*sdk, "--read", README_URI, "--", entry["command"], *entry["args"]], daemon)
    assert run.seen["serverInfo"] == "mcpx", run.seen
    assert set(run.seen["tools"]) >= GATEWAY_TOOLS, run.seen["tools"]
    assert ECHO_TEXT in run.seen["call"]["text"] and not run.seen["call"]["isError"], run.seen


def test_a_second_run_changes_nothing_and_says_so(tmp_path: Path) -> None:
    assert install(tmp_path, "cursor").returncode == 0
    path = tmp_path / LINUX_FILES["cursor"]
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = install(tmp_path, "cursor")
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert backups(path) == []


def test_the_original_is_backed_up_and_the_rest_of_it_kept(tmp_path: Path) -> None:
    path = tmp_path / LINUX_FILES["claude"]
    path.parent.mkdir(parents=True)
    original = (
        '{\n    "globalShortcut": "Ctrl+Space",\n    "mcpServers": {\n'
        '        "time": {"command": "uvx", "args": ["mcp-server-time"]}\n    }\n}\n'
    )
    path.write_text(original, encoding="utf-8")
    path.chmod(0o640)
    done = install(tmp_path, "claude")
    assert done.returncode == 0, done.stderr
    [backup] = backups(path)
    assert backup.read_text(encoding="utf-8") == original
    assert str(backup) in done.stdout
    text = path.read_text(encoding="utf-8")
    # The other server and key are there as they were written, mcpx added after them.
    assert text.startswith(original[: original.index("}\n    }")] + '},\n        "mcpx": {')
    assert json.loads(text)["globalShortcut"] == "Ctrl+Space"
    assert json.loads(text)["mcpServers"]["time"] == {"command": "uvx", "args": ["mcp-server-time"]}
    assert path.stat().st_mode & 0o777 == 0o640

    # A change (another profile) is one more backup, of the file as it was then.
    changed = install(tmp_path, "claude", "--profile", "work")
    assert changed.returncode == 0, changed.stderr
    assert len(backups(path)) == 2
    assert text in [b.read_text(encoding="utf-8") for b in backups(path)]
    assert host_entry(path, "claude")["args"] == ["serve", "--profile", "work"]


def test_print_shows_the_snippet_and_writes_nothing(tmp_path: Path) -> None:
    done = install(tmp_path, "vscode", "--print", "--name", "gateway", "--profile", "work")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "servers": {
            "gateway": {"type": "stdio", "command": MCPX, "args": ["serve", "--profile", "work"]}
        }
    }
    assert str(tmp_path / LINUX_FILES["vscode"]) in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n', ":4:3: invalid JSON"),
        ('{"mcpServers": ["mcpx"]}', ":1:16: mcpServers is not an object"),
        ('{"mcpServers": {"mcpx": "serve"}}', ":1:25: mcpServers.mcpx is not a server entry"),
        ("[]", ":1:1: the top level is not a JSON object"),
    ],
)
def test_a_file_that_does_not_parse_is_refused_and_untouched(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / LINUX_FILES["cursor"]
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    done = install(tmp_path, "cursor")
    assert done.returncode == EX_USAGE, done.stderr
    assert f"{path}{where}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_text(encoding="utf-8") == text
    assert backups(path) == []


def test_an_empty_profile_is_refused(tmp_path: Path) -> None:
    done = install(tmp_path, "claude", "--profile", "")
    assert done.returncode == EX_USAGE
    assert "--profile" in done.stderr
    assert list(tmp_path.iterdir()) == []


HOME = Path("/h")


@pytest.mark.parametrize(
    ("host", "platform", "env", "expected"),
    [
        ("claude", "linux", {}, "/h/.config/Claude/claude_desktop_config.json"),
        ("claude", "linux", {"XDG_CONFIG_HOME": "/x"}, "/x/Claude/claude_desktop_config.json"),
        (
            "claude",
            "linux",
            {"XDG_CONFIG_HOME": "rel"},
            "/h/.config/Claude/claude_desktop_config.json",
        ),
        (
            "claude",
            "darwin",
            {},
            "/h/Library/Application Support/Claude/claude_desktop_config.json",
        ),
        ("claude", "win32", {"APPDATA": "/ad"}, "/ad/Claude/claude_desktop_config.json"),
        ("claude", "win32", {}, "/h/AppData/Roaming/Claude/claude_desktop_config.json"),
        ("vscode", "linux", {}, "/h/.config/Code/User/mcp.json"),
        ("vscode", "darwin", {}, "/h/Library/Application Support/Code/User/mcp.json"),
        ("vscode", "win32", {"APPDATA": "/ad"}, "/ad/Code/User/mcp.json"),
        ("cursor", "linux", {}, "/h/.cursor/mcp.json"),
        ("cursor", "darwin", {}, "/h/.cursor/mcp.json"),
        ("cursor", "win32", {"APPDATA": "/ad"}, "/h/.cursor/mcp.json"),
    ],
)
def test_where_each_host_keeps_its_config(
    host: str, platform: str, env: dict[str, str], expected: str
) -> None:
    assert host_config_path(HOSTS[host], platform, HOME, env) == Path(expected)


ENTRY = serve_entry(HOSTS["cursor"], "/bin/mcpx")
ENTRY_TEXT = '{"command": "/bin/mcpx", "args": ["serve"]}'


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # Compact stays compact, and other keys stay where they were.
        ('{"a": 1}', '{"a": 1, "mcpServers": {"mcpx": ' + ENTRY_TEXT + "}}"),
        ('{"mcpServers": {}}\n', '{"mcpServers": {"mcpx": ' + ENTRY_TEXT + "}}\n"),
        (
            '{"mcpServers": {"b": {}} , "z": [1,2]}',
            '{"mcpServers": {"b": {}, "mcpx": ' + ENTRY_TEXT + '} , "z": [1,2]}',
        ),
        # Tabs are kept, and so is an empty object's place.
        (
            '{\n\t"mcpServers": {}\n}',
            '{\n\t"mcpServers": {\n\t\t"mcpx": {\n\t\t\t"command": "/bin/mcpx",\n'
            '\t\t\t"args": [\n\t\t\t\t"serve"\n\t\t\t]\n\t\t}\n\t}\n}',
        ),
        # A stale entry is replaced, keeping keys the user added to it.
        (
            '{\n  "mcpServers": {\n    "mcpx": {"command": "old", "env": {"A": "1"}}\n  },\n'
            '  "k": true\n}',
            '{\n  "mcpServers": {\n    "mcpx": {\n      "command": "/bin/mcpx",\n'
            '      "env": {\n        "A": "1"\n      },\n      "args": [\n        "serve"\n'
            '      ]\n    }\n  },\n  "k": true\n}',
        ),
        # A byte-order mark is kept.
        ('\ufeff{"mcpServers": {}}', '\ufeff{"mcpServers": {"mcpx": ' + ENTRY_TEXT + "}}"),
        # Nothing (or only whitespace) there: a new document.
        (
            " \n",
            json.dumps({"mcpServers": {"mcpx": ENTRY}}, indent=2) + "\n",
        ),
    ],
)
def test_the_entry_is_spliced_into_the_text(before: str, after: str) -> None:
    edited = put_entry(before, Path("f.json"), HOSTS["cursor"], "mcpx", ENTRY)
    assert edited == after
    assert put_entry(edited, Path("f.json"), HOSTS["cursor"], "mcpx", ENTRY) is None
