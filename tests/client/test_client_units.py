"""The client's sans-IO pieces: the era cache file, auth blocks, x-mcp-header."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mcpx.client import AuthError, EraCache, apply_auth, config_key
from mcpx.client._era_cache import FORMAT
from mcpx.config import ServerConfig
from mcpx.shapes import InvalidHeaderAnnotation, param_header_values, param_headers

SERVER = ServerConfig(name="a", transport="stdio", command="python3", args=("-m", "x"))


def test_era_cache_round_trip_atomic_and_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "upstream-eras.json"
    cache = EraCache(path)
    assert cache.get(SERVER) is None
    cache.put(SERVER, "modern", "2026-07-28", "stdio")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert doc["format"] == FORMAT
    fresh = EraCache(path).get(SERVER)
    assert fresh is not None
    assert (fresh.era, fresh.revision, fresh.transport, fresh.server) == (
        "modern",
        "2026-07-28",
        "stdio",
        "a",
    )
    assert [p.name for p in path.parent.iterdir()] == ["upstream-eras.json"]  # no temp left


@pytest.mark.parametrize(
    "content", ["{not json", '{"format": 999, "eras": {}}', "[]", '{"format": 1, "eras": {"k": 3}}']
)
def test_a_bad_cache_file_is_empty_and_rewritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / "upstream-eras.json"
    path.write_text(content)
    cache = EraCache(path)
    assert cache.get(SERVER) is None
    cache.put(SERVER, "legacy", "2025-06-18", "stdio")
    assert json.loads(path.read_text())["format"] == FORMAT


def test_the_key_follows_the_process_definition() -> None:
    same = ServerConfig(name="renamed", transport="stdio", command="python3", args=("-m", "x"))
    other = ServerConfig(name="a", transport="stdio", command="python3", args=("-m", "y"))
    env = ServerConfig(
        name="a", transport="stdio", command="python3", args=("-m", "x"), env={"A": "1"}
    )
    assert config_key(SERVER) == config_key(same)
    assert len({config_key(SERVER), config_key(other), config_key(env)}) == 3


def test_forget(tmp_path: Path) -> None:
    cache = EraCache(tmp_path / "e.json")
    cache.put(SERVER, "legacy", "2024-11-05", "stdio")
    cache.forget(SERVER)
    assert EraCache(tmp_path / "e.json").get(SERVER) is None


def test_auth_blocks() -> None:
    env = {"TOKEN": "t0k", "PW": "pw"}
    assert apply_auth("s", {"type": "bearer", "tokenEnv": "TOKEN"}, env).headers == {
        "Authorization": "Bearer t0k"
    }
    basic = apply_auth("s", {"type": "basic", "username": "u", "passwordEnv": "PW"}, env)
    assert basic.headers == {"Authorization": "Basic dTpwdw=="}
    header = apply_auth("s", {"type": "header", "name": "X-Key", "value": "v"}, env)
    assert header.headers == {"X-Key": "v"}
    query = apply_auth("s", {"type": "query", "name": "key", "value": "a b"}, env)
    assert query.url("http://127.0.0.1:1/mcp?x=1") == "http://127.0.0.1:1/mcp?x=1&key=a+b"
    assert apply_auth("s", {"type": "env", "name": "API", "valueEnv": "TOKEN"}, env).env == {
        "API": "t0k"
    }
    assert apply_auth("s", None, env).headers == {}


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"type": "bearer", "tokenEnv": "NOPE"}, "NOPE, which is not set"),
        ({"type": "bearer"}, "needs 'token'"),
        ({"type": "header", "value": "v"}, "needs a 'name'"),
        ({"type": "magic"}, "unknown auth type"),
    ],
)
def test_bad_auth_blocks_are_refused_clearly(block: dict[str, object], words: str) -> None:
    with pytest.raises(AuthError, match=words):
        apply_auth("srv", block, {})


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {
            "type": "object",
            "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}},
        },
        "query": {"type": "string"},
    },
}


@pytest.mark.obligation("C-HTTP-26", "C-HTTP-27", "C-HTTP-28")
def test_param_headers_found_and_mirrored() -> None:
    marked = param_headers(SCHEMA)
    assert [(h.header, h.path) for h in marked] == [
        ("Mcp-Param-Region", ("region",)),
        ("Mcp-Param-Dry", ("opts", "dry")),
    ]
    values = param_header_values(marked, {"region": "eu-west", "opts": {"dry": True}})
    assert values == {"Mcp-Param-Region": "eu-west", "Mcp-Param-Dry": "true"}
    assert param_header_values(marked, {"query": "x"}) == {}
    assert param_header_values(marked, {"region": "Zürich"})["Mcp-Param-Region"].startswith(
        "=?base64?"
    )


# C-HTTP-31: invalid x-mcp-header annotations invalidate the tool.
@pytest.mark.obligation("C-HTTP-31")
@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}},
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"},
            }
        },
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
        {"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}},
    ],
)
def test_invalid_annotations_invalidate_the_tool(schema: dict[str, object]) -> None:
    with pytest.raises(InvalidHeaderAnnotation):
        param_headers(schema)
