"""Server definitions: the hosts' shapes taken unchanged, mcpx's keys, positioned errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from mcpx.config import ConfigError, ServerConfig, parse_config_text

PATH = Path("/home/u/.mcp.json")
Locate = Callable[..., str]  # the ``at`` fixture (conftest.py)

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/u/Desktop"],
      "env": {"DEBUG": "1"}
    },
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "cwd": "/tmp"},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "typed": {"type": "http", "url": "https://mcp.example.com/mcp"},
    "streamable": {"type": "streamable-http", "url": "http://127.0.0.1:3000/mcp"},
    "legacy": {"type": "sse", "url": "https://mcp.example.com/sse", "disabled": true}
  }
}"""

VS_CODE = """{
  "inputs": [{"type": "promptString", "id": "token", "description": "Token", "password": true}],
  "servers": {
    "github": {
      "type": "stdio",
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_TOKEN": "${input:token}"},
      "envFile": "${workspaceFolder}/.env",
      "cwd": "${workspaceFolder}"
    },
    "copilot": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": {"Authorization": "Bearer ${input:token}"}
    },
    "events": {"type": "sse", "url": "http://localhost:3000/sse"}
  }
}"""


def _servers(text: str) -> dict[str, ServerConfig]:
    return dict(parse_config_text(text, PATH).servers)


_FIELDS: tuple[str, ...] = ("name", "transport", "command", "args", "env", "cwd", "url", "headers")
_FIELDS += ("scope", "protocol", "auth")  # every field but raw


@pytest.mark.parametrize(
    ("text", "block", "expected"),
    [
        (
            CLAUDE_DESKTOP,
            "mcpServers",
            {
                "filesystem": ServerConfig(
                    name="filesystem",
                    transport="stdio",
                    command="npx",
                    args=("-y", "@modelcontextprotocol/server-filesystem", "/Users/u/Desktop"),
                    env={"DEBUG": "1"},
                ),
                "time": ServerConfig(
                    name="time",
                    transport="stdio",
                    command="uvx",
                    args=("mcp-server-time",),
                    cwd="/tmp",
                ),
                "remote": ServerConfig(
                    name="remote",
                    transport="http",
                    url="https://mcp.example.com/mcp",
                    headers={"Authorization": "Bearer t"},
                ),
                "typed": ServerConfig(
                    name="typed", transport="http", url="https://mcp.example.com/mcp"
                ),
                "streamable": ServerConfig(
                    name="streamable", transport="http", url="http://127.0.0.1:3000/mcp"
                ),
                "legacy": ServerConfig(
                    name="legacy", transport="sse", url="https://mcp.example.com/sse"
                ),
            },
        ),
        (
            VS_CODE,
            "servers",
            {
                "github": ServerConfig(
                    name="github",
                    transport="stdio",
                    command="docker",
                    args=(
                        "run",
                        "-i",
                        "--rm",
                        "-e",
                        "GITHUB_TOKEN",
                        "ghcr.io/github/github-mcp-server",
                    ),
                    env={"GITHUB_TOKEN": "${input:token}"},
                    cwd="${workspaceFolder}",
                ),
                "copilot": ServerConfig(
                    name="copilot",
                    transport="http",
                    url="https://api.githubcopilot.com/mcp/",
                    headers={"Authorization": "Bearer ${input:token}"},
                ),
                "events": ServerConfig(
                    name="events", transport="sse", url="http://localhost:3000/sse"
                ),
            },
        ),
    ],
)
def test_host_shapes_are_taken_unchanged(
    text: str, block: str, expected: dict[str, ServerConfig]
) -> None:
    servers = _servers(text)
    original = json.loads(text)[block]
    assert list(servers) == list(expected)
    for name, server in servers.items():
        # raw is the entry exactly as written, host-only keys (disabled, envFile) included.
        assert server.raw == original[name]
        want = expected[name]
        assert {f: getattr(server, f) for f in _FIELDS} == {f: getattr(want, f) for f in _FIELDS}


def test_mcpx_keys_scope_protocol_and_auth() -> None:
    server = _servers(
        """{"mcpServers": {"gh": {
            "url": "https://api.example.com/mcp",
            "scope": "identity",
            "protocol": "force-initialize",
            "auth": {"type": "bearer", "token": "${GH_TOKEN}", "extra": [1, 2]}
        }}}"""
    )["gh"]
    assert server.scope == "identity"
    assert server.protocol == "force-initialize"
    assert server.auth == {"type": "bearer", "token": "${GH_TOKEN}", "extra": [1, 2]}


@pytest.mark.parametrize("auth", ["bearer", "basic", "header", "query", "env", "oauth"])
def test_every_auth_type_is_accepted(auth: str) -> None:
    text = f'{{"servers": {{"a": {{"url": "https://a.example", "auth": {{"type": "{auth}"}}}}}}}}'
    assert _servers(text)["a"].auth == {"type": auth}


def test_defaults_and_null_as_absent() -> None:
    server = _servers('{"mcpServers": {"a": {"command": "a", "cwd": null, "url": null}}}')["a"]
    assert (server.transport, server.cwd, server.url, server.scope, server.protocol) == (
        "stdio",
        None,
        None,
        "shared",
        None,
    )
    assert (server.args, dict(server.env), dict(server.headers), server.auth) == ((), {}, {}, None)


def test_a_server_is_immutable() -> None:
    server = _servers('{"mcpServers": {"a": {"command": "a", "env": {"K": "v"}}}}')["a"]
    with pytest.raises(FrozenInstanceError):
        server.command = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        server.env["K"] = "w"  # type: ignore[index]


def _entry(body: str) -> str:
    return '{"mcpServers": {"a": ' + body + "}}"


# (server entry, the text the error points at, which occurrence, message after the position)
BAD: list[tuple[str, str, int, str]] = [
    ('{"command": ["npx"]}', '["npx"]', 0, "mcpServers.a.command must be a non-empty string"),
    ('{"command": ""}', '""', 0, "mcpServers.a.command must be a non-empty string"),
    ('{"command": "x", "args": "-y"}', '"-y"', 0, "mcpServers.a.args must be a list of strings"),
    ('{"command": "x", "args": ["-y", 3]}', "3", 0, "mcpServers.a.args[1] must be a string"),
    (
        '{"command": "x", "env": ["A=1"]}',
        '["A=1"]',
        0,
        "mcpServers.a.env must be an object of strings",
    ),
    (
        '{"command": "x", "env": {"PORT": 8080}}',
        "8080",
        0,
        "mcpServers.a.env.PORT must be a string",
    ),
    ('{"command": "x", "cwd": 1}', "1", 0, "mcpServers.a.cwd must be a non-empty string"),
    ('{"url": "ftp://x.example"}', '"ftp:', 0, "mcpServers.a.url must be an http or https URL"),
    ('{"url": "localhost:3000"}', '"localhost', 0, "mcpServers.a.url must be an http or https URL"),
    ('{"url": "http://"}', '"http://"', 0, "mcpServers.a.url must be an http or https URL"),
    ('{"url": 80}', "80", 0, "mcpServers.a.url must be an http or https URL"),
    (
        '{"url": "https://a.example", "headers": {"X": true}}',
        "true",
        0,
        "mcpServers.a.headers.X must be a string",
    ),
    (
        '{"type": "websocket", "url": "https://a.example"}',
        '"websocket"',
        0,
        "mcpServers.a.type must be one of stdio, http, streamable-http, sse",
    ),
    (
        '{"type": "stdio", "url": "https://a.example"}',
        "{",
        2,
        "mcpServers.a has type 'stdio' but no command",
    ),
    ('{"type": "sse", "command": "x"}', "{", 2, "mcpServers.a has type 'sse' but no url"),
    (
        '{"disabled": true}',
        "{",
        2,
        "mcpServers.a needs a command (a stdio server) or a url (an http or sse server)",
    ),
    (
        '{"command": "x", "url": "https://a.example"}',
        "{",
        2,
        'mcpServers.a has both command and url; add "type" to say which transport',
    ),
    (
        '{"type": "stdio", "command": "x", "headers": {}}',
        '"headers"',
        0,
        "mcpServers.a.headers is not used by stdio servers",
    ),
    (
        '{"type": "http", "url": "https://a.example", "args": []}',
        '"args"',
        0,
        "mcpServers.a.args is not used by http servers",
    ),
    (
        '{"command": "x", "scope": "per-user"}',
        '"per-user"',
        0,
        "mcpServers.a.scope must be one of shared, identity",
    ),
    (
        '{"command": "x", "protocol": "discover"}',
        '"discover"',
        0,
        "mcpServers.a.protocol must be one of prefer-discover, prefer-initialize,"
        " force-discover, force-initialize",
    ),
    ('{"command": "x", "auth": "token"}', '"token"', 0, "mcpServers.a.auth must be an object"),
    (
        '{"command": "x", "auth": {"token": "t"}}',
        '{"token"',
        0,
        "mcpServers.a.auth needs a type: one of bearer, basic, header, query, env, oauth",
    ),
    (
        '{"command": "x", "auth": {"type": "magic"}}',
        '"magic"',
        0,
        "mcpServers.a.auth.type must be one of bearer, basic, header, query, env, oauth",
    ),
]


@pytest.mark.parametrize(("body", "needle", "nth", "problem"), BAD)
def test_bad_entries_are_refused_at_the_offending_value(
    body: str, needle: str, nth: int, problem: str, at: Locate
) -> None:
    text = _entry(body)
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, PATH)
    assert str(caught.value) == f"{PATH}:{at(text, needle, nth)}: {problem}"


def test_an_empty_server_name_is_refused_at_its_key(at: Locate) -> None:
    text = '{"servers": {\n  "": {"command": "x"}}}'
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, PATH)
    where = at(text, '""')
    assert str(caught.value) == f'{PATH}:{where}: servers[""] needs a non-empty server name'
