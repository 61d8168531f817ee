"""Editing the config file (``config._edit``): every byte outside the edited entry kept,
the file's own layout used for what is new, and an edit that would not load never written.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mcpx.config import (
    ConfigError,
    EditRefused,
    NoSuchServer,
    ServerExists,
    load_config_file,
    parse_config_text,
    plan_edit,
    with_disabled,
    with_server,
    without_server,
    write_edit,
)

P = Path("/cfg/.mcpx.json")
# Hand-laid: odd spacing, a key order no serializer would pick, an inline entry.
TEXT = """{
    "settings":   {"log.level": "info",  "daemon.configPoll": "1s"},
    "mcpServers": {
        "alpha": {"command": "a",   "args": ["x"]},
        "beta": {
            "url": "http://127.0.0.1:1/mcp",
            "headers": {"X-K": "v"}
        }
    }
}
"""
NEW = {"command": "python", "args": ["-m", "mcpx", "demo-server"]}


def test_an_added_entry_leaves_every_other_byte_as_it_was() -> None:
    after = with_server(TEXT, P, "gamma", NEW)
    tail = "\n    }\n}\n"
    head = len(TEXT) - len(tail)  # just past beta's value
    assert after[:head] == TEXT[:head]
    assert after.endswith(tail)
    added = after[head : len(after) - len(tail)]
    # Indented as beta is, in the file's 4-space unit.
    assert added == (
        ',\n        "gamma": {\n            "command": "python",\n            "args": [\n'
        '                "-m",\n                "mcpx",\n                "demo-server"\n'
        "            ]\n        }"
    )
    assert json.loads(after)["mcpServers"]["gamma"] == NEW


def test_removing_each_entry_cuts_only_it_and_one_comma() -> None:
    no_alpha = without_server(TEXT, P, "alpha")
    assert no_alpha == TEXT.replace('"alpha": {"command": "a",   "args": ["x"]},\n        ', "")
    no_beta = without_server(TEXT, P, "beta")
    start = TEXT.index(',\n        "beta"')
    assert no_beta == TEXT[:start] + "\n    }\n}\n"
    assert json.loads(no_beta)["mcpServers"] == {"alpha": {"command": "a", "args": ["x"]}}
    # Add then remove is the identity.
    assert without_server(with_server(TEXT, P, "gamma", NEW), P, "gamma") == TEXT


def test_disable_then_enable_touches_only_the_mcpx_block() -> None:
    off = with_disabled(TEXT, P, "alpha", True)
    # Laid out with the entry's own spacing after a comma.
    assert off == TEXT.replace('["x"]}', '["x"],   "mcpx": {"disabled": true}}')
    on = with_disabled(off, P, "alpha", False)
    assert on == off.replace('"disabled": true', '"disabled": false')
    assert with_disabled(TEXT, P, "beta", False) == TEXT  # nothing to enable
    parse_config_text(off, P)  # loads


def test_force_replaces_in_place_and_without_it_a_name_is_refused() -> None:
    with pytest.raises(ServerExists, match=r"alpha.*--force"):
        with_server(TEXT, P, "alpha", NEW)
    forced = with_server(TEXT, P, "alpha", NEW, force=True)
    assert forced.startswith(TEXT[: TEXT.index('{"command": "a"')])
    assert forced.endswith(TEXT[TEXT.index(',\n        "beta"') :])
    assert json.loads(forced)["mcpServers"]["alpha"] == NEW


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", '{\n  "mcpServers": {\n    "n": {\n      "url": "http://h/"\n    }\n  }\n}\n'),
        ("{}", '{"mcpServers": {"n": {"url": "http://h/"}}}'),
        ('{"settings": {}}', '{"settings": {}, "mcpServers": {"n": {"url": "http://h/"}}}'),
        (
            '{"servers": {"a": {"url": "http://a/"}}}',
            '{"servers": {"a": {"url": "http://a/"}, "n": {"url": "http://h/"}}}',
        ),
        (
            '{\r\n\t"mcpServers": {}\r\n}\r\n',
            '{\r\n\t"mcpServers": {\r\n\t\t"n": {\r\n\t\t\t"url": "http://h/"\r\n\t\t}\r\n\t}\r\n}\r\n',
        ),
    ],
)
def test_new_text_follows_the_file_s_layout(before: str, after: str) -> None:
    assert with_server(before, P, "n", {"url": "http://h/"}) == after


def test_unknown_names_are_refused() -> None:
    with pytest.raises(NoSuchServer):
        without_server(TEXT, P, "nope")
    with pytest.raises(NoSuchServer):
        with_disabled(TEXT, P, "nope", True)


def test_an_edit_that_would_not_load_leaves_the_file_identical(tmp_path: Path) -> None:
    path = tmp_path / ".mcpx.json"
    path.write_bytes(TEXT.encode())
    os.chmod(path, 0o640)
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=r"\.mcpx\.json:\d+:\d+: .*must be one of"):
        plan_edit(path, lambda t, p: with_server(t, p, "bad", {"command": "x", "scope": "nope"}))
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [".mcpx.json"]  # no temporary file left


def test_a_write_is_atomic_keeps_mode_and_bom_and_refuses_a_file_changed_meanwhile(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".mcpx.json"
    path.write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    os.chmod(path, 0o640)
    edit = plan_edit(path, lambda t, p: with_server(t, p, "gamma", NEW))
    write_edit(edit)
    assert path.read_bytes() == b"\xef\xbb\xbf" + with_server(TEXT, P, "gamma", NEW).encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert "gamma" in load_config_file(path).servers
    stale = plan_edit(path, lambda t, p: without_server(t, p, "gamma"))
    path.write_bytes(path.read_bytes() + b" ")
    changed = path.read_bytes()
    with pytest.raises(EditRefused, match="changed while"):
        write_edit(stale)
    assert path.read_bytes() == changed


def test_a_new_file_is_created_private_and_a_symlink_is_written_through(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "config.json"
    write_edit(plan_edit(path, lambda t, p: with_server(t, p, "n", NEW)))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config_file(path).servers["n"].command == "python"
    link = tmp_path / "link.json"
    link.symlink_to(path)
    write_edit(plan_edit(link, lambda t, p: without_server(t, p, "n")))
    assert link.is_symlink() and json.loads(path.read_text()) == {"mcpServers": {}}
