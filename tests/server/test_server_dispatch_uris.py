"""The gateway's ``mcpx://`` URIs: exact round trips, and templates that still expand."""

from __future__ import annotations

import pytest

from mcpx.ops import gateway_template, gateway_uri, original_uri, split_gateway


def _back(uri: str, resources: tuple[str, ...] = (), templates: tuple[str, ...] = ()) -> str:
    parts = split_gateway(uri)
    assert parts is not None
    return original_uri(parts[1], resources=resources, templates=templates)


@pytest.mark.parametrize(
    "uri",
    [
        "demo://readme",
        "file:///tmp/a b/c%2Fd.txt",
        "https://example.com/x?q=1&r=2#frag",
        "s3://bucket/ключ/{not a template}",
    ],
)
def test_a_resource_uri_reads_back_exactly(uri: str) -> None:
    mapped = gateway_uri("demo", uri)
    assert mapped.startswith("mcpx://demo/") and "/" not in mapped[len("mcpx://demo/") :]
    assert _back(mapped) == uri
    assert _back(mapped, resources=(uri,)) == uri


def test_template_keeps_its_expressions() -> None:
    mapped = gateway_template("demo", "demo://greeting/{name}")
    assert mapped == "mcpx://demo/demo%3A%2F%2Fgreeting%2F{name}"


@pytest.mark.parametrize(
    ("template", "expanded", "original"),
    [
        # Simple expansion encodes "/" in a value; the upstream must see it still encoded.
        ("demo://greeting/{name}", "a%2Fb", "demo://greeting/a%2Fb"),
        ("demo://greeting/{name}", "Ada", "demo://greeting/Ada"),
        ("file:///{+path}", "a/b c", "file:///a/b c"),
        ("https://x/search{?q,n}", "?q=hi&n=2", "https://x/search?q=hi&n=2"),
    ],
)
def test_an_expanded_template_maps_back_by_the_template(
    template: str, expanded: str, original: str
) -> None:
    mapped = gateway_template("srv", template)
    head, _, tail = mapped.partition("{")
    uri = head + expanded + tail.partition("}")[2]
    assert _back(uri, templates=(template,)) == original


def test_the_template_itself_maps_back_to_the_template() -> None:
    template = "demo://greeting/{name}"
    assert _back(gateway_template("demo", template), templates=(template,)) == template


def test_a_listed_resource_wins_over_a_template_it_matches() -> None:
    listed = "demo://greeting/a%2Fb"
    mapped = gateway_uri("demo", listed)
    assert _back(mapped, (listed,), ("demo://greeting/{name}",)) == listed


@pytest.mark.parametrize("uri", ["demo://readme", "mcpx://", "mcpx:///x", "mcpx://demo"])
def test_other_uris_are_not_gateway_uris(uri: str) -> None:
    assert split_gateway(uri) is None


def test_server_names_are_encoded_too() -> None:
    mapped = gateway_uri("my server", "x://y")
    assert split_gateway(mapped) == ("my server", "x%3A%2F%2Fy")


def test_an_absolute_path_is_listed_as_a_path_and_resolved_by_the_listing() -> None:
    # Issue 8: /abs/doc is listed as mcpx://demo/abs/doc and read back through the
    # server's own resource list.
    mapped = gateway_uri("demo", "/abs/doc")
    assert mapped == "mcpx://demo/abs/doc"
    assert _back(mapped, resources=("/abs/doc", "abs/doc-other")) == "/abs/doc"
    spaced = gateway_uri("demo", "/a b/c")
    assert spaced == "mcpx://demo/a%20b/c"
    assert _back(spaced, resources=("/a b/c",)) == "/a b/c"
