"""Property: downgrade never edits its input, whatever subset of the rich
shapes it is given, and an unchanged result is the input itself."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx import spec
from mcpx.shapes import downgrade
from shapes.rich import results
from support.schemas import frame_errors

RICH = results()
REQUIRED = {"name", "uri", "uriTemplate", "type", "text", "data", "mimeType", "blob",
            "inputSchema", "content", "role", "resource", "messages", "completion",
            "values", "capabilities", "serverInfo", "protocolVersion", "version",
            "supportedVersions", "src", "contents", "tools", "prompts", "resources",
            "resourceTemplates"}  # fmt: skip


def _thin(draw: st.DrawFn, value: Any) -> Any:
    """A random sub-shape: optional keys dropped, list items kept or not."""
    if isinstance(value, dict):
        return {k: _thin(draw, v) for k, v in value.items() if k in REQUIRED or draw(st.booleans())}
    if isinstance(value, list):
        return [_thin(draw, v) for v in value if draw(st.booleans())]
    return value


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    method = draw(st.sampled_from(sorted(RICH)))
    return method, _thin(draw, RICH[method]), draw(st.sampled_from(spec.REVISIONS))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_input_is_never_mutated(case: tuple[str, dict[str, Any], str]) -> None:
    method, result, rev = case
    before = copy.deepcopy(result)
    out = downgrade(method, result, rev)
    assert result == before
    # Downgrading what was already downgraded changes nothing more.
    assert downgrade(method, out, rev) is out


@settings(max_examples=150, deadline=None)
@given(cases())
def test_thinned_results_stay_valid_where_the_full_one_is(
    case: tuple[str, dict[str, Any], str],
) -> None:
    method, result, rev = case
    if rev == spec.NEWEST or not spec.defined("request", method, rev, "client"):
        return  # the newest needs the envelope's required fields, which thinning drops
    out = downgrade(method, result, rev)
    frame = {"jsonrpc": "2.0", "id": 1, "result": out}
    assert frame_errors(frame, rev, sender="server", answering=method) == []
