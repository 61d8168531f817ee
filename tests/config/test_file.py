"""The config file: its layout, its settings block, and errors with exact line and column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcpx.config import ConfigError, ConfigFile, load_config_file, parse_config_text

PATH = Path("/proj/.mcpx.json")
Locate = Callable[..., str]  # the ``at`` fixture (conftest.py)


def _load(text: str) -> ConfigFile:
    return parse_config_text(text, PATH)


def _refused(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _load(text)
    return caught.value


def test_the_position_oracle(at: Locate) -> None:
    text = 'ab\n  "x": 1,\n"x"'
    assert at(text, "ab") == "1:1"
    assert at(text, '"x"') == "2:3"
    assert at(text, '"x"', 1) == "3:1"


@pytest.mark.parametrize(
    ("block", "settings"),
    [
        ('{"pool.callTimeout": "10s"}', {"pool.callTimeout": "10s"}),
        ('{"pool": {"callTimeout": "10s"}}', {"pool.callTimeout": "10s"}),
        (
            '{"pool": {"callTimeout": 10, "max": 2}, "spec.lenient": ["2026-07-28"]}',
            {"pool.callTimeout": 10, "pool.max": 2, "spec.lenient": ["2026-07-28"]},
        ),
        (
            '{"protoMessages": {"listMaxAge": "2m"}, "proto": {"askTTL": "1h"}}',
            {"protoMessages.listMaxAge": "2m", "proto.askTTL": "1h"},
        ),
        ('{"spec": {"first": null}}', {"spec.first": None}),
        ("{}", {}),
    ],
)
def test_settings_dotted_nested_or_mixed(block: str, settings: dict[str, object]) -> None:
    loaded = _load(f'{{"settings": {block}}}')
    assert dict(loaded.settings) == settings
    assert loaded.path == PATH


def test_vs_code_keys_are_ignored_and_both_server_blocks_merge() -> None:
    loaded = _load(
        """{
  "$schema": "https://example.com/schema.json",
  "inputs": [{"type": "promptString", "id": "token", "password": true}],
  "mcpServers": {"a": {"command": "a"}},
  "servers": {"b": {"type": "http", "url": "https://b.example/mcp"}}
}"""
    )
    assert list(loaded.servers) == ["a", "b"]
    assert dict(loaded.settings) == {}


def test_an_empty_object_is_an_empty_config() -> None:
    loaded = _load("{}")
    assert (dict(loaded.settings), dict(loaded.servers)) == ({}, {})


def test_the_readme_example_loads() -> None:
    loaded = _load(
        """{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    "remote": {"url": "https://example.com/mcp", "headers": {"X-Team": "a"}}
  },
  "settings": {"pool.callTimeout": "30s", "spec": {"lenient": ["2026-07-28"]}}
}"""
    )
    assert dict(loaded.settings) == {"pool.callTimeout": "30s", "spec.lenient": ["2026-07-28"]}
    assert [s.transport for s in loaded.servers.values()] == ["stdio", "http"]


def test_the_briefs_example_position_counted_by_hand() -> None:
    text = """{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time"]
    },
    "github": {
      "command": "docker",
      "env": {"GITHUB_TOKEN": "x"},
      "args":

    "run --rm"
    }
  }
}"""
    assert str(_refused(text)) == (
        "/proj/.mcpx.json:12:5: mcpServers.github.args must be a list of strings"
    )


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ('{\n  "a": 1,\n  "b": }', "3:8", "invalid JSON: Expecting value"),
        ('{"a": 1,}', "1:9", "invalid JSON: Expecting property name enclosed in double quotes"),
        ('{\n  // a comment\n  "a": 1}', "2:3", "invalid JSON: Expecting property name"),
        ('{"a" 1}', "1:6", "invalid JSON: Expecting ':' delimiter"),
        ("", "1:1", "invalid JSON: Expecting value"),
        ('{"a": 1} {}', "1:10", "invalid JSON: Extra data"),
    ],
)
def test_syntax_errors_use_the_decoders_position(text: str, where: str, problem: str) -> None:
    err = _refused(text)
    assert str(err).startswith(f"/proj/.mcpx.json:{where}: {problem}")
    assert (err.path, f"{err.line}:{err.column}") == (PATH, where)


# (text, the text the error must point at, which occurrence, the message after the position)
SEMANTIC: list[tuple[str, str, int, str]] = [
    ("[1, 2]", "[", 0, "the top level must be a JSON object"),
    ('\n\n   "just a string"', '"just', 0, "the top level must be a JSON object"),
    (
        '{"settings": {},\n "mcpservers": {}}',
        '"mcpservers"',
        0,
        "mcpservers is not a config file key; did you mean mcpServers?",
    ),
    ('{"version": 1}', '"version"', 0, "version is not a config file key"),
    ('{"mcpServers": []}', "[", 0, "mcpServers must be an object of servers by name"),
    ('{"servers": {"a": "npx a"}}', '"npx a"', 0, "servers.a must be an object"),
    ('{"settings": [1]}', "[", 0, "settings must be an object of settings by name"),
    (
        '{"settings": {\n  "pool.mx": 3}}',
        '"pool.mx"',
        0,
        'settings["pool.mx"] is not a setting; did you mean pool.max?',
    ),
    (
        '{"settings": {"pool": {\n    "calltimeout": "1s"}}}',
        '"calltimeout"',
        0,
        "settings.pool.calltimeout is not a setting; did you mean pool.callTimeout?",
    ),
    ('{"settings": {"pool": 5}}', "5", 0, "settings.pool must be an object of pool.* settings"),
    ('{"settings": {"nope": {"x": 1}}}', '"nope"', 0, "settings.nope is not a setting"),
    (
        '{"settings": {\n  "pool": {\n    "max": 0\n  }\n}}',
        "0",
        0,
        "settings.pool.max has invalid value 0 (below the minimum 1); expected an integer >= 1",
    ),
    (
        '{"settings": {"pool.callTimeout": "-2s"}}',
        '"-2s"',
        0,
        'settings["pool.callTimeout"] has invalid value "-2s" (negative); expected a duration'
        " such as 500ms, 90s, 10m or 1h30m, or a number of seconds",
    ),
    (
        '{"settings": {"spec": {"first": "2025-01-01"}}}',
        '"2025-01-01"',
        0,
        'settings.spec.first has invalid value "2025-01-01"; expected one of 2024-11-05,'
        " 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, or none",
    ),
    (
        '{"settings": {"mcp.passthrough": ["a", 1]}}',
        '["a"',
        0,
        'settings["mcp.passthrough"] has invalid value ["a", 1] (item 1 is not a string);'
        " expected a comma-separated list (a JSON array of strings in a file)",
    ),
    (
        '{"settings": {"pool.max": 2,\n  "pool": {"max": 3}}}',
        '"max"',
        0,
        "settings.pool.max sets pool.max again (first set at 1:15)",
    ),
    ('{"settings": {},\n  "settings": {}}', '"settings"', 1, "settings is given twice"),
    (
        '{"servers": {"a": {"command": "x", "command": "y"}}}',
        '"command"',
        1,
        "servers.a.command is given twice",
    ),
    (
        '{"settings": {"pool.max": NaN}}',
        "NaN",
        0,
        'settings["pool.max"] is NaN, which JSON does not allow',
    ),
    (
        '{"settings": {"pool.max": [1, -Infinity]}}',
        "-Infinity",
        0,
        'settings["pool.max"][1] is -Infinity, which JSON does not allow',
    ),
    (
        '{"mcpServers": {"gh": {"command": "gh"}},\n "servers": {"gh": {"command": "x"}}}',
        '"gh"',
        2,
        "servers.gh is also defined in mcpServers; a name must be unique",
    ),
]


@pytest.mark.parametrize(("text", "needle", "nth", "problem"), SEMANTIC)
def test_semantic_errors_point_at_the_offending_value_or_key(
    text: str, needle: str, nth: int, problem: str, at: Locate
) -> None:
    err = _refused(text)
    assert str(err) == f"/proj/.mcpx.json:{at(text, needle, nth)}: {problem}"
    assert f"{err.line}:{err.column}" == at(text, needle, nth)


def test_columns_count_characters_not_bytes() -> None:
    text = '{"mcpServers": {"ünïcode": {"command": 1}}}'
    assert str(_refused(text)) == (
        '/proj/.mcpx.json:1:40: mcpServers["ünïcode"].command must be a non-empty string'
    )


def test_deep_nesting_is_refused_not_crashed() -> None:
    err = _refused('{"settings": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested too deeply" in str(err)


def test_load_reads_a_file_with_or_without_a_byte_order_mark(tmp_path: Path) -> None:
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    plain.write_text('{"settings": {"pool.max": 2}}', encoding="utf-8")
    marked.write_text('{"settings": {"pool.max": 3}}', encoding="utf-8-sig")
    assert load_config_file(plain).settings == {"pool.max": 2}
    assert load_config_file(str(marked)).settings == {"pool.max": 3}
    assert load_config_file(plain).path == plain


def test_load_errors_name_the_path(tmp_path: Path) -> None:
    def refused(path: Path) -> str:
        with pytest.raises(ConfigError) as caught:
            load_config_file(path)
        assert caught.value.path == path
        return str(caught.value)

    missing = tmp_path / "missing.json"
    assert refused(missing) == f"{missing}: no such config file"
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"settings": {"daemon.address": "caf\xe9"}}')
    assert refused(latin) == f"{latin}: is not UTF-8 text (byte 36: invalid continuation byte)"
    assert refused(tmp_path).startswith(f"{tmp_path}: cannot be read: ")
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "settings": {"pool.max": "x"}\n}', encoding="utf-8")
    assert refused(broken) == (
        f'{broken}:2:28: settings["pool.max"] has invalid value "x"; expected an integer >= 1'
    )


def test_a_bad_setting_chains_the_setting_error() -> None:
    err = _refused('{"settings": {"pool.max": 0}}')
    cause = err.__cause__
    assert cause is not None
    assert str(cause) == (
        "pool.max from file /proj/.mcpx.json has invalid value 0 (below the minimum 1);"
        " expected an integer >= 1"
    )
