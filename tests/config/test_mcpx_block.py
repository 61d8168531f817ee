"""A server entry's ``mcpx`` block: filters, namespace, profiles, disabled."""

from __future__ import annotations

import pytest

from mcpx.config import (
    ConfigError,
    UnknownProfile,
    filter_notes,
    known_profiles,
    parse_config_text,
    profile_reach,
)

from .conftest import Locate

PATH = "/cfg/.mcpx.json"


def _text(**entries: str) -> str:
    body = ", ".join(f'"{name}": {entry}' for name, entry in entries.items())
    return '{"mcpServers": {' + body + "}}"


def test_every_key_is_read() -> None:
    text = _text(
        github='{"command": "gh", "mcpx": {"tools": ["issue_*", "search_*"], '
        '"excludeTools": ["*delete*"], "namespace": "gh", "description": "GitHub", '
        '"profiles": ["work"], "default": true}}'
    )
    [server] = parse_config_text(text, PATH).servers.values()
    assert (server.name, server.key) == ("gh", "github")
    assert server.tools == ("issue_*", "search_*")
    assert server.exclude_tools == ("*delete*",)
    assert server.description == "GitHub"
    assert server.profiles == ("work",) and server.in_default
    assert [
        n for n in ("issue_get", "issue_delete", "search_code", "pr_merge") if server.offers_tool(n)
    ] == [
        "issue_get",
        "search_code",
    ]


def test_defaults_offer_everything_in_the_default_profile() -> None:
    [server] = parse_config_text(_text(a='{"command": "x"}'), PATH).servers.values()
    assert (server.name, server.key, server.filtered, server.in_default) == ("a", "a", False, True)
    assert server.offers_tool("anything") and not server.disabled


def test_listing_profiles_leaves_the_default_profile_unless_said() -> None:
    text = _text(
        a='{"command": "x", "mcpx": {"profiles": ["work"]}}',
        b='{"command": "x", "mcpx": {"profiles": ["work"], "default": true}}',
        c='{"command": "x"}',
        d='{"command": "x", "mcpx": {"default": false}}',
    )
    servers = parse_config_text(text, PATH).servers
    assert known_profiles(servers) == ["default", "work"]
    assert profile_reach(servers, "default") == {"b", "c"}
    assert profile_reach(servers, "work") == {"a", "b"}
    with pytest.raises(
        UnknownProfile, match="no profile named 'wrok'; the config has: default, work"
    ):
        profile_reach(servers, "wrok")


def test_a_disabled_server_is_kept_apart() -> None:
    text = _text(a='{"command": "x", "mcpx": {"disabled": true}}', b='{"command": "x"}')
    loaded = parse_config_text(text, PATH)
    assert list(loaded.servers) == ["b"] and list(loaded.disabled) == ["a"]


BAD = [
    ('{"command": "x", "mcpx": []}', "[]", "mcpServers.a.mcpx must be an object"),
    (
        '{"command": "x", "mcpx": {"tool": ["a"]}}',
        '"tool"',
        "mcpServers.a.mcpx.tool is not an mcpx key: one of tools, excludeTools, namespace, "
        "description, disabled, profiles, default",
    ),
    (
        '{"command": "x", "mcpx": {"tools": "a*"}}',
        '"a*"',
        "mcpServers.a.mcpx.tools must be a list of strings",
    ),
    (
        '{"command": "x", "mcpx": {"profiles": [""]}}',
        '""',
        "mcpServers.a.mcpx.profiles[0] must be a non-empty string",
    ),
    (
        '{"command": "x", "mcpx": {"disabled": "yes"}}',
        '"yes"',
        "mcpServers.a.mcpx.disabled must be true or false",
    ),
    (
        '{"command": "x", "mcpx": {"namespace": "a b"}}',
        '"a b"',
        "mcpServers.a.mcpx.namespace must be letters, digits, '_', '.' or '-'",
    ),
]


@pytest.mark.parametrize(("entry", "needle", "problem"), BAD)
def test_a_bad_block_is_refused_at_the_offending_value(
    entry: str, needle: str, problem: str, at: Locate
) -> None:
    text = _text(a=entry)
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, PATH)
    assert str(caught.value) == f"{PATH}:{at(text, needle)}: {problem}"


def test_two_servers_offered_under_one_name_are_refused(at: Locate) -> None:
    text = _text(github='{"command": "x", "mcpx": {"namespace": "gh"}}', gh='{"command": "y"}')
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, PATH)
    where = at(text, '"gh": {')
    assert str(caught.value) == (
        f"{PATH}:{where}: mcpServers.gh is offered as 'gh', as "
        "mcpServers.github is; a name must be unique (mcpx.namespace)"
    )


def test_filter_notes_name_overlaps_typos_and_what_was_hidden() -> None:
    text = _text(
        a='{"command": "x", "mcpx": {"tools": ["issue_*", "pr_*"], '
        '"excludeTools": ["issue_delete*", "isue_*"]}}'
    )
    [server] = parse_config_text(text, PATH).servers.values()
    assert filter_notes(server) == [
        "excludeTools 'issue_delete*' overlaps tools 'issue_*': a tool matching both is "
        "hidden (excludeTools wins)"
    ]
    listed = ["issue_get", "issue_delete", "pr_merge", "repo_list"]
    assert filter_notes(server, listed)[1:] == [
        "excludeTools 'isue_*' matches none of the 4 tools listed",
        "admitted by tools, hidden by excludeTools: issue_delete",
    ]
