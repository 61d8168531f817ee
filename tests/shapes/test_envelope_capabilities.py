"""envelope() and server_capabilities(): valid for every revision, strictly."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from mcpx import spec
from mcpx.shapes import CACHE_SCOPES, downgrade, envelope, server_capabilities
from shapes.rich import SERVER_INFO, SERVER_INFO_KEY
from support.schemas import errors, frame_errors

BARE: dict[str, dict[str, Any]] = {
    "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
    "tools/call": {"content": [{"type": "text", "text": "ok"}]},
    "prompts/list": {"prompts": [{"name": "p"}]},
    "prompts/get": {"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]},
    "resources/list": {"resources": [{"uri": "file:///a", "name": "a"}]},
    "resources/templates/list": {"resourceTemplates": [{"uriTemplate": "f:///{x}", "name": "f"}]},
    "resources/read": {"contents": [{"uri": "file:///a", "text": "a"}]},
    "completion/complete": {"completion": {"values": []}},
    "server/discover": {
        "supportedVersions": list(spec.REVISIONS),
        "capabilities": server_capabilities(spec.NEWEST),
    },
}


def _env(method: str, result: dict[str, Any], list_age: float = 60, read_age: float = 0) -> Any:
    return envelope(
        method,
        result,
        server_info=dict(SERVER_INFO),
        list_max_age_s=list_age,
        read_max_age_s=read_age,
    )


def _frame_errors(result: dict[str, Any], rev: str, method: str) -> list[str]:
    frame = {"jsonrpc": "2.0", "id": 1, "result": result}
    return frame_errors(frame, rev, sender="server", answering=method)


@pytest.mark.parametrize("method", sorted(BARE))
def test_envelope_validates_for_the_newest(method: str) -> None:
    before = copy.deepcopy(BARE[method])
    out = _env(method, BARE[method])
    assert _frame_errors(out, spec.NEWEST, method) == []
    assert BARE[method] == before
    assert out["resultType"] == "complete"
    assert out["_meta"][SERVER_INFO_KEY] == SERVER_INFO


@pytest.mark.parametrize("method", sorted(CACHE_SCOPES))
def test_cache_hints(method: str) -> None:
    out = _env(method, BARE[method], list_age=60, read_age=1.5)
    expected_ttl = 1500 if method == "resources/read" else 60000
    assert out["ttlMs"] == expected_ttl and isinstance(out["ttlMs"], int)
    assert out["cacheScope"] == CACHE_SCOPES[method][0]
    public = {"server/discover", "tools/list", "prompts/list", "resources/templates/list"}
    assert (out["cacheScope"] == "public") is (method in public)


def test_negative_age_is_stale_now() -> None:
    assert _env("tools/list", BARE["tools/list"], list_age=-5)["ttlMs"] == 0


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_input_required_carries_no_hints(method: str) -> None:
    interim = {"resultType": "input_required", "requestState": "s", "ttlMs": 5, "cacheScope": "x"}
    out = _env(method, interim)
    assert out["resultType"] == "input_required"
    assert "ttlMs" not in out and "cacheScope" not in out
    assert _frame_errors(out, spec.NEWEST, method) == []


def test_existing_meta_is_kept_and_server_info_is_ours() -> None:
    result = {**BARE["tools/call"], "_meta": {"com.example/k": 1, SERVER_INFO_KEY: {"name": "up"}}}
    out = _env("tools/call", result)
    assert out["_meta"] == {"com.example/k": 1, SERVER_INFO_KEY: SERVER_INFO}
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "up"}


@pytest.mark.parametrize("rev", spec.REVISIONS)
@pytest.mark.parametrize("method", sorted(BARE))
def test_enveloped_then_downgraded_validates(method: str, rev: str) -> None:
    if not spec.defined("request", method, rev, "client"):
        return  # no result type to validate against in that revision
    out = downgrade(method, _env(method, BARE[method]), rev)
    assert _frame_errors(out, rev, method) == []


# -- capabilities -------------------------------------------------------------

FLAGS = list(itertools.product([False, True], repeat=4))


def _caps(rev: str, flags: tuple[bool, ...]) -> dict[str, Any]:
    passthrough, logging, can_push, tasks = flags
    return server_capabilities(
        rev, passthrough=passthrough, logging=logging, can_push=can_push, tasks=tasks
    )


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_capabilities_validate_strictly(rev: str, flags: tuple[bool, ...]) -> None:
    caps = _caps(rev, flags)
    if spec.defined("request", "initialize", rev, "client"):
        init = {
            "protocolVersion": rev,
            "capabilities": caps,
            "serverInfo": {"name": "m", "version": "1"},
        }
        assert _frame_errors(init, rev, "initialize") == []
    else:
        found = _env("server/discover", {"supportedVersions": [rev], "capabilities": caps})
        assert _frame_errors(found, rev, "server/discover") == []
    assert errors(caps, rev, "ServerCapabilities") == []


@pytest.mark.obligation("S-LOG-1")
@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("rev", spec.REVISIONS)
def test_capability_rules(rev: str, flags: tuple[bool, ...]) -> None:
    passthrough, logging, can_push, tasks = flags
    caps = _caps(rev, flags)
    assert caps["tools"]["listChanged"] is (passthrough and can_push)
    assert caps["resources"] == {"subscribe": True, "listChanged": can_push}
    # S-LOG-1: declared wherever log lines can reach the client (2026-07-28: on the
    # request's own stream).
    modern = spec.era_of(rev) is spec.Era.MODERN
    assert ("logging" in caps) is (logging and (can_push or modern))
    assert ("completions" in caps) is spec.defined("capability", "completions", rev, "server")
    assert ("tasks" in caps) is (tasks and spec.defined("capability", "tasks", rev, "server"))
    has_ext = tasks and spec.defined("capability", "extensions", rev, "server")
    assert ("extensions" in caps) is has_ext
    if has_ext:
        assert caps["extensions"] == {spec.TASKS_EXTENSION: {}}
    assert not ("tasks" in caps and "extensions" in caps)
