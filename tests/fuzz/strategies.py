"""Hypothesis strategies of the fuzz tests: JSON values, and MCP frames a host might send
(requests of the methods mcpx serves, their params mostly right, sometimes not)."""

from __future__ import annotations

import json
from typing import Any, Final

from hypothesis import strategies as st

from mcpx.spec import REVISIONS
from support.hosts import README_URI
from support.modern import modern_meta

# -- JSON ---------------------------------------------------------------------

int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Beyond what orjson (and many peers) carry: an id or value no int64 holds.
huge_ints = st.one_of(st.integers(min_value=2**63), st.integers(max_value=-(2**63) - 1))
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    int64,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=16,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=4)
# Ids JSON-RPC allows, and ones it does not.
good_ids = st.one_of(int64, st.text(max_size=30))
any_ids = st.one_of(good_ids, huge_ints, st.floats(), st.none(), st.booleans(), json_values)
# Printable ASCII (httpx sends str headers as ASCII), no white space around it (which HTTP
# does not count as part of a value).
header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40).map(
    str.strip
)


def one_in(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n`` draws. (An ``integers(0, n) == 0`` is true far more
    often: Hypothesis favours the bounds of a range.) Shrinks to False."""
    return st.sampled_from([False] * (n - 1) + [True])


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], n: int = 5) -> Any:
    """``valid``, but about once in ``n`` draws ``odd``; shrinks towards ``valid``."""
    return one_in(n).flatmap(lambda chosen: odd if chosen else valid)


def dumps(value: Any) -> bytes:
    """JSON as a client would send it (Python's codec: big integers, and NaN as a bare
    ``NaN`` token, which is not JSON: the receiver must call that a parse error)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


# -- frames --------------------------------------------------------------------

KNOWN_METHODS: Final = (
    "initialize",
    "tools/list",
    "tools/call",
    "resources/read",
    "prompts/get",
    "ping",
    "server/discover",
    "subscriptions/listen",
)
OTHER_METHODS: Final = (
    "resources/list",
    "prompts/list",
    "logging/setLevel",
    "completion/complete",
    "notifications/initialized",
    "notifications/cancelled",
    "tasks/get",
)


texts = st.text(max_size=30)
demo_args = mostly(
    st.one_of(
        st.fixed_dictionaries({"text": texts}),
        st.fixed_dictionaries({"a": st.integers(), "b": st.one_of(st.integers(), st.floats())}),
        st.just({}),
    ),
    json_objects,
)
call_args = st.fixed_dictionaries(
    {
        "server": mostly(st.just("demo"), json_values),
        # Not "slow": it waits as long as it is told (bounded by pool.callTimeout only).
        "tool": mostly(st.sampled_from(["echo", "add", "now", "readme"]), json_values),
    },
    optional={
        "arguments": demo_args,
        "timeout": mostly(st.floats(min_value=0.001, max_value=2), json_values),
        "unknown": json_values,
    },
)
tool_params = st.fixed_dictionaries(
    {
        "name": mostly(st.sampled_from(["mcpx_call", "mcpx_servers", "mcpx_search_tools"]), texts),
        "arguments": mostly(call_args, json_values),
    },
)
read_params = st.fixed_dictionaries(
    {"uri": mostly(st.just(README_URI), st.one_of(texts.map("mcpx://demo/".__add__), json_values))}
)
prompt_params = st.fixed_dictionaries(
    {"name": mostly(st.just("demo_hello"), json_values)},
    optional={"arguments": mostly(st.fixed_dictionaries({"name": texts}), json_values)},
)
init_params = st.fixed_dictionaries(
    {
        "protocolVersion": mostly(st.sampled_from(REVISIONS), json_values),
        "capabilities": mostly(st.just({}), json_values),
        "clientInfo": mostly(st.fixed_dictionaries({"name": texts, "version": texts}), json_values),
    }
)
listen_params = st.fixed_dictionaries(
    {
        "notifications": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "toolsListChanged": st.booleans(),
                    "resourcesListChanged": st.booleans(),
                    "resourceSubscriptions": st.lists(mostly(st.just(README_URI), texts)),
                },
            ),
            json_values,
        )
    }
)
PARAMS: Final = {
    "initialize": init_params,
    "tools/call": tool_params,
    "resources/read": read_params,
    "prompts/get": prompt_params,
    "subscriptions/listen": listen_params,
}
methods = mostly(
    st.sampled_from(KNOWN_METHODS), st.one_of(st.sampled_from(OTHER_METHODS), texts), 3
)
metas = st.one_of(
    st.builds(lambda: modern_meta(client="fuzz")),
    st.builds(lambda: modern_meta(client=None)),
    # Wrong revision, wrong types, keys missing.
    st.builds(
        lambda v, c: modern_meta(**{"io.modelcontextprotocol/protocolVersion": v}, capabilities=c),
        st.one_of(st.sampled_from(REVISIONS), texts),
        st.one_of(st.just({}), json_objects),
    ),
    json_objects,
    json_values,
)


@st.composite
def frames(draw: st.DrawFn, modern: bool) -> Any:
    """A request of some method, its params fuzzed; now and then a member of the wrong
    type, one left out, or one JSON-RPC does not know."""
    method = draw(methods)
    params: Any = draw(PARAMS.get(method, st.one_of(st.just({}), json_objects)))
    if isinstance(params, dict) and (modern or draw(one_in(10))):
        params = {**params, "_meta": draw(mostly(st.just(modern_meta()), metas))}
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(good_ids), "method": method}
    if params != {} or draw(st.booleans()):
        frame["params"] = params
    for _ in range(draw(mostly(st.just(0), st.integers(1, 2)))):
        member = draw(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "extra"]))
        if draw(st.booleans()):
            frame.pop(member, None)
        else:
            frame[member] = draw(any_ids if member == "id" else json_values)
    return frame
