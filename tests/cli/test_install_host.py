"""``mcpx install-host claude|vscode|cursor`` (issue 26, "Getting servers in").

The command runs as a user runs it (``python -m mcpx``, its own process) with ``HOME`` a
temporary directory, so each host's file lands where that host reads it on Linux. The
round trip reads the written file back as the host would (its servers key, its entry) and
starts exactly that command with a real MCP host (``tests/fixtures/sdk_host.py`` on the
official Python SDK) against a real daemon on the demo upstream: tools listed, ``mcpx_call``
answered; with ``--profile`` the host sees that profile's servers only, and a profile the
config does not know is refused. The other platforms' locations and the text splice (JSONC:
comments kept) are checked as tables.
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
    Role,
    Under,
    host_config_path,
    host_files,
    put_entry,
    serve_entry,
)
from support.daemon import Daemon, running_daemon
from support.hosts import ECHO_TEXT, GATEWAY_TOOLS, README_URI, SDK_HOST, run_host
from support.peers import peer_python

DEMO = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}
# demo is in profile ops and the default one, other in the default one only.
SERVERS = {"demo": {**DEMO, "mcpx": {"profiles": ["ops"], "default": True}}, "other": DEMO}
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
    with running_daemon(tmp_path_factory.mktemp("install-host"), SERVERS) as d:
        yield d


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config file with profiles default and ops (outside any test's HOME)."""
    path = tmp_path_factory.mktemp("profiles") / "mcpx.json"
    path.write_text(json.dumps({"mcpServers": SERVERS}), encoding="utf-8")
    return path


def install(home: Path, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    drop = ("XDG_CONFIG_HOME", "APPDATA")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPX_") and k not in drop}
    if config is not None:
        env["MCPX_CONFIG"] = str(config)
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
    assert seen_servers(run.seen) == {"demo", "other"}  # no profile: the default one's
    assert [p for p in run.seen["prompts"] if p.startswith("other")], run.seen["prompts"]


def seen_servers(seen: dict[str, Any]) -> set[str]:
    """The upstreams a host was shown, by the gateway URIs of their resources."""
    return {uri.split("/")[2] for uri in seen["resources"] if uri.startswith("mcpx://")}


def test_round_trip_with_a_profile_the_host_sees_only_its_servers(
    tmp_path: Path, daemon: Daemon
) -> None:
    done = install(tmp_path, "cursor", "--profile", "ops", config=daemon.config)
    assert done.returncode == 0, done.stderr
    entry = host_entry(tmp_path / LINUX_FILES["cursor"], "cursor")
    assert entry["args"] == ["serve", "--profile", "ops"], entry

    sdk = [str(peer_python("1.23.3")), str(SDK_HOST), "--transport", "stdio"]
    run = run_host([*sdk, "--read", README_URI, "--", entry["command"], *entry["args"]], daemon)
    assert ECHO_TEXT in run.seen["call"]["text"] and not run.seen["call"]["isError"], run.seen
    assert seen_servers(run.seen) == {"demo"}, run.seen["resources"]
    assert not [p for p in run.seen["prompts"] if p.startswith("other")], run.seen["prompts"]


@pytest.mark.parametrize("mode", [(), ("--print",)])
def test_an_unknown_profile_is_refused_naming_the_known_ones(
    tmp_path: Path, profiles: Path, mode: tuple[str, ...]
) -> None:
    done = install(tmp_path, "claude", *mode, "--profile", "opz", config=profiles)
    assert done.returncode == EX_USAGE, (done.stdout, done.stderr)
    assert "no profile named 'opz'; the config has: default, ops" in done.stderr, done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []
    # With no config file, mcpx offers its embedded demo: only the default profile.
    bare = install(tmp_path, "claude", *mode, "--profile", "ops")
    assert bare.returncode == EX_USAGE, (bare.stdout, bare.stderr)
    assert "no profile named 'ops'; the config has: default" in bare.stderr, bare.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_second_run_changes_nothing_and_says_so(tmp_path: Path) -> None:
    assert install(tmp_path, "cursor").returncode == 0
    path = tmp_path / LINUX_FILES["cursor"]
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    again = install(tmp_path, "cursor")
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert backups(path) == []


def test_the_original_is_backed_up_and_the_rest_of_it_kept(tmp_path: Path, profiles: Path) -> None:
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
    changed = install(tmp_path, "claude", "--profile", "ops", config=profiles)
    assert changed.returncode == 0, changed.stderr
    assert len(backups(path)) == 2
    assert text in [b.read_text(encoding="utf-8") for b in backups(path)]
    assert host_entry(path, "claude")["args"] == ["serve", "--profile", "ops"]


def test_print_shows_the_snippet_and_writes_nothing(tmp_path: Path, profiles: Path) -> None:
    args = ("--print", "--name", "gateway", "--profile", "ops")
    done = install(tmp_path, "vscode", *args, config=profiles)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "servers": {
            "gateway": {"type": "stdio", "command": MCPX, "args": ["serve", "--profile", "ops"]}
        }
    }
    assert str(tmp_path / LINUX_FILES["vscode"]) in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # JSONC (comments, trailing commas) is read; what is not JSONC either is refused.
        ('{\n  "mcpServers": {\n    "a" {"command": "x"},\n  }\n}\n', ":3:9: invalid JSON"),
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


@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_one_table_install_writes_one_of_the_files_import_reads(platform: str) -> None:
    env = {"APPDATA": "/ad"}
    for host in HOSTS.values():
        [written] = [f for f in host.files if f.role is Role.WRITTEN]
        read = [f.path for f in host_files(host, platform, HOME, Path("/w"), env)]
        assert host_config_path(host, platform, HOME, env) == read[host.files.index(written)]
        assert written.under is not Under.WORKSPACE  # the user's own file, wherever mcpx runs
    assert [f.servers for f in HOSTS["vscode"].files] == ["mcp.servers", "servers", "servers"]


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


VSCODE_ENTRY = serve_entry(HOSTS["vscode"], "/bin/mcpx")
VSCODE_MEMBER = (
    '"mcpx": {\n      "type": "stdio",\n      "command": "/bin/mcpx",\n'
    '      "args": [\n        "serve"\n      ]\n    }'
)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # VS Code's mcp.json is JSONC: comments and trailing commas stay as they were.
        (
            '{\n  // servers VS Code starts\n  "servers": {\n    "time": {"command": "uvx"},\n'
            '  },\n  /* prompted */ "inputs": [],\n}\n',
            '{\n  // servers VS Code starts\n  "servers": {\n    "time": {"command": "uvx"},\n'
            "    " + VSCODE_MEMBER + '\n  },\n  /* prompted */ "inputs": [],\n}\n',
        ),
        # A comment beside the last server stays beside it.
        (
            '{\n  "servers": {\n    "time": {"command": "uvx"} // the clock\n  }\n}\n',
            '{\n  "servers": {\n    "time": {"command": "uvx"}, // the clock\n    '
            + VSCODE_MEMBER
            + "\n  }\n}\n",
        ),
        (
            '{\n  "servers": {\n    "time": {"command": "uvx"} /* the clock */\n  }\n}\n',
            '{\n  "servers": {\n    "time": {"command": "uvx"}, /* the clock */\n    '
            + VSCODE_MEMBER
            + "\n  }\n}\n",
        ),
        # An empty object with a comment in it keeps the comment.
        (
            '{\n  "servers": { // none yet\n  }\n}\n',
            '{\n  "servers": {\n    ' + VSCODE_MEMBER + " // none yet\n  }\n}\n",
        ),
        # A stale entry with comments around it (not in it) is replaced.
        (
            '// mine\n{\n  "servers": {\n    "mcpx": {"command": "old"} // the gateway\n  }\n}\n',
            '// mine\n{\n  "servers": {\n    "mcpx": {\n      "command": "/bin/mcpx",\n'
            '      "type": "stdio",\n      "args": [\n        "serve"\n      ]\n    }'
            " // the gateway\n  }\n}\n",
        ),
        (
            '{"servers": {"a": {}, /* c */ }}',
            '{"servers": {"a": {}, "mcpx": {"type": "stdio", '
            '"command": "/bin/mcpx", "args": ["serve"]}, /* c */ }}',
        ),
    ],
)
def test_jsonc_the_entry_is_spliced_keeping_comments(before: str, after: str) -> None:
    edited = put_entry(before, Path("mcp.json"), HOSTS["vscode"], "mcpx", VSCODE_ENTRY)
    assert edited == after
    assert put_entry(edited, Path("mcp.json"), HOSTS["vscode"], "mcpx", VSCODE_ENTRY) is None


def test_jsonc_a_vscode_file_with_comments_is_written_and_one_it_cannot_keep_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / LINUX_FILES["vscode"]
    path.parent.mkdir(parents=True)
    original = (
        '{\n\t// my servers\n\t"servers": {\n\t\t"time": {"command": "uvx"}, // the clock\n'
        "\t},\n}\n"
    )
    path.write_text(original, encoding="utf-8")
    done = install(tmp_path, "vscode")
    assert done.returncode == 0, done.stderr
    text = path.read_text(encoding="utf-8")
    cut = original.index("\n\t},")
    assert text.startswith(original[:cut] + '\n\t\t"mcpx": {\n\t\t\t"type": "stdio"'), text
    assert text.endswith(original[cut:]), text
    [backup] = backups(path)
    assert backup.read_text(encoding="utf-8") == original

    # An entry to change with a comment inside it: rewriting it would drop the comment.
    inside = '{\n  "servers": {\n    "mcpx": {"command": "old" /* pinned */}\n  }\n}\n'
    path.write_text(inside, encoding="utf-8")
    refused = install(tmp_path, "vscode")
    assert refused.returncode == EX_USAGE, refused.stderr
    assert f"{path}:3:13: servers.mcpx has comments" in refused.stderr, refused.stderr
    assert "move them out of this entry" in refused.stderr and "--print" in refused.stderr
    assert "nothing changed" in refused.stderr and "Traceback" not in refused.stderr
    assert path.read_text(encoding="utf-8") == inside
    assert len(backups(path)) == 1
