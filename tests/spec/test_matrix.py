"""The revision matrix against the official schemas: the data cannot drift."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpx.spec import MATRIX, REVISIONS, TASKS_EXTENSION, Row, defined, protocol_json, removed
from support.schemas import definitions, methods

SIDES = ("client", "server")


def _resolve(defs: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].split("/")[-1]]
    return node


def _union_members(defs: dict[str, Any], node: Any) -> list[Any]:
    node = _resolve(defs, node)
    if isinstance(node, dict) and "anyOf" in node:
        return [m for sub in node["anyOf"] for m in _union_members(defs, sub)]
    return [node]


def _present(rev: str, path: str) -> bool:
    """Whether ``Definition.prop[.prop…]`` (with ``[type=x]`` segments) exists in rev."""
    defs = definitions(rev)
    head, *rest = path.split(".")
    if head not in defs:
        return False
    node: Any = _resolve(defs, defs[head])
    for segment in rest:
        m = re.fullmatch(r"(\w+)\[type=(\w+)\]", segment)
        name = m.group(1) if m else segment
        node = _resolve(defs, node.get("properties", {}).get(name))
        if node is None:
            return False
        if m:
            items = _resolve(defs, node.get("items", node))
            types = {
                member.get("properties", {}).get("type", {}).get("const")
                for member in _union_members(defs, items)
            }
            return m.group(2) in types
    return True


def _core(kind: str, direction: str) -> list[Row]:
    return [r for r in MATRIX if r.kind == kind and r.direction == direction and not r.extension]


@pytest.mark.parametrize("rev", REVISIONS)
@pytest.mark.parametrize("kind", ["request", "notification"])
@pytest.mark.parametrize("sender", SIDES)
def test_method_rows_match_the_schema_unions(rev: str, kind: str, sender: str) -> None:
    from_schema = set(methods(rev, kind, sender))
    from_matrix = {r.name for r in _core(kind, sender) if r.defined_in(rev)}
    assert from_matrix == from_schema


@pytest.mark.parametrize("rev", REVISIONS)
def test_input_rows_match_the_input_request_union(rev: str) -> None:
    defs = definitions(rev)
    from_schema = set()
    if "InputRequest" in defs:
        for member in _union_members(defs, defs["InputRequest"]):
            from_schema.add(member["properties"]["method"]["const"])
    from_matrix = {r.name for r in MATRIX if r.kind == "input" and r.defined_in(rev)}
    assert from_matrix == from_schema


def test_extension_rows_match_the_tasks_extension_schema() -> None:
    defs = definitions("ext-tasks")
    from_schema: set[tuple[str, str]] = set()
    for name, node in defs.items():
        for part in node.get("allOf", []):
            method = part.get("properties", {}).get("method", {}).get("const")
            if method:
                kind = "notification" if name.endswith("Notification") else "request"
                from_schema.add((kind, method))
    from_matrix = {(r.kind, r.name) for r in MATRIX if r.extension == TASKS_EXTENSION}
    assert from_matrix == from_schema


def _capability_paths(rev: str, side: str) -> set[str]:
    defs = definitions(rev)
    root = _resolve(defs, defs[f"{side.capitalize()}Capabilities"])
    out = set()
    for name, sub in root.get("properties", {}).items():
        out.add(name)
        sub = _resolve(defs, sub)
        if name in ("experimental", "extensions", "tasks"):
            continue  # open maps, and task sub-flags live under the one tasks row
        for inner in sub.get("properties", {}) if isinstance(sub, dict) else ():
            out.add(f"{name}.{inner}")
    return out


@pytest.mark.parametrize("rev", REVISIONS)
@pytest.mark.parametrize("side", SIDES)
def test_capability_rows_match_the_schema(rev: str, side: str) -> None:
    from_matrix = {r.name for r in _core("capability", side) if r.defined_in(rev)}
    assert from_matrix == _capability_paths(rev, side)


@pytest.mark.parametrize("row", [r for r in MATRIX if r.kind == "field"], ids=lambda r: r.name)
def test_field_rows_match_the_schema(row: Row) -> None:
    presence = {rev: _present(rev, row.name) for rev in REVISIONS}
    assert presence == {rev: row.defined_in(rev) for rev in REVISIONS}


def _differing(name: str) -> set[str]:
    """Properties of a definition present in some revisions that define it, not all."""
    seen: dict[str, set[str]] = {}
    for rev in REVISIONS:
        defs = definitions(rev)
        if name in defs:
            seen[rev] = set(_resolve(defs, defs[name]).get("properties", {}))
    every = set().union(*seen.values()) if seen else set()
    common = set.intersection(*seen.values()) if seen else set()
    # jsonrpc and id moved into the request types' own schemas in 2025-11-25: an
    # artefact of how the schema is generated, not a change on the wire.
    return every - common - {"jsonrpc", "id", "method"}


TRACKED = sorted({r.name.split(".")[0] for r in MATRIX if r.kind == "field"})


@pytest.mark.parametrize("name", TRACKED)
def test_every_differing_property_of_a_tracked_type_has_a_row(name: str) -> None:
    names = {r.name for r in MATRIX if r.kind == "field"}
    # What every result inherits from Result has one row, on Result.
    inherited = {n.split(".")[1] for n in names if n.startswith("Result.")}
    differing = _differing(name) - (inherited if name.endswith("Result") else set())
    missing = {p for p in differing if f"{name}.{p}" not in names}
    assert missing == set()


def test_removed_methods_are_removed_for_2026_and_kept_for_legacy() -> None:
    for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe"):
        assert removed("request", method, "2026-07-28", "client")
        assert defined("request", method, "2025-11-25", "client")
        assert not removed("request", method, "2025-11-25", "client")
    assert not removed("request", "tools/call", "2026-07-28", "client")
    assert not defined("request", "no/such", "2026-07-28", "client")


def test_protocol_json_shape() -> None:
    doc = protocol_json()
    assert [r["revision"] for r in doc["revisions"]] == list(REVISIONS)
    assert [r["era"] for r in doc["revisions"]] == ["legacy"] * 4 + ["modern"]
    assert doc["oldest"] == "2024-11-05" and doc["headerless"] == "2025-03-26"
    assert doc["spec"]["precedence"][0] == "2026-07-28"
    init = next(m for m in doc["methods"] if m["name"] == "initialize")
    assert init["floor"] == "2024-11-05"
    assert init["ceiling"] == "2025-11-25"
    assert init["removedIn"] == "2026-07-28"
    structured = next(f for f in doc["fields"] if f["name"] == "CallToolResult.structuredContent")
    assert structured["revisions"] == ["2025-06-18", "2025-11-25", "2026-07-28"]
    assert structured["ceiling"] is None
