"""Every official Python SDK release as a real MCP host of mcpx, over stdio and Streamable HTTP.

Each host (``tests/fixtures/sdk_host.py`` on that release's own python) spawns ``mcpx
serve`` as its stdio server, or talks to the daemon's ``/mcp``, and lists tools, calls
``mcpx_call``, gets ``demo_hello`` and reads the demo readme through its ``mcpx://`` URI.
The revision it ends up speaking must be its release's (2.3.0: 2026-07-28 in ``auto``
mode, 2025-11-25 in ``legacy`` mode); what it saw must be what the demo upstream serves;
and every frame the daemon sent it is at that revision, so the daemon's teardown sweep
checks each one against that revision's schema, strictly.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from support.daemon import Daemon
from support.hosts import (
    HOST_METHODS,
    PYTHON_HOST_MODES,
    PYTHON_HOST_TRANSPORTS,
    HostRun,
    answered,
    check_content,
    mcp_url,
    python_host,
    python_host_revision,
    run_host,
)
from support.peers import MODERN_REVISION, PEER_VERSIONS

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def _cases(transport: str) -> list[Any]:
    return [
        pytest.param(version, mode, id=f"{version}-{mode}" if mode else version)
        for version in PEER_VERSIONS
        if transport in PYTHON_HOST_TRANSPORTS[version]
        for mode in PYTHON_HOST_MODES[version]
    ]


def _check_run(run: HostRun, version: str, mode: str | None, direct: dict[str, Any]) -> None:
    rev = python_host_revision(version, mode)
    seen = run.seen
    assert seen["sdk"] == version
    assert seen["protocolVersion"] == rev, seen
    check_content(seen, direct)
    # S-TOOL-1, S-PROMPT-1, S-RES-1: each capability is declared, and its methods worked.
    assert {"tools", "prompts", "resources"} <= set(seen["capabilities"]), seen["capabilities"]

    # S-LIFE-7, S-LIFE-8 (legacy hosts): every frame mcpx sent this host is at the
    # negotiated revision, and the daemon's sweep holds each to that revision's schema,
    # strictly (no field the revision lacks). Modern hosts get the same check.
    assert {r for r, _ in answered(run.frames)} == {rev}, answered(run.frames)
    opening = "server/discover" if rev == MODERN_REVISION else "initialize"
    assert {m for _, m in answered(run.frames)} >= HOST_METHODS | {opening}
    if rev == MODERN_REVISION:
        for frame in (f["frame"] for f in run.frames):
            # S-MSG-10: every 2026-07-28 result says resultType (complete, here).
            assert frame["result"]["resultType"] == "complete", frame
            # S-LIFE-20: and names the server in its _meta.
            assert frame["result"]["_meta"][SERVER_INFO]["name"] == "mcpx", frame


@pytest.mark.obligation(
    "S-TOOL-1",
    "S-PROMPT-1",
    "S-RES-1",
    "S-LIFE-7",
    "S-LIFE-8",
    "S-MSG-10",
    "S-LIFE-20",
    "S-LIFE-2",
    "S-LIFE-3",
)
@pytest.mark.parametrize(("version", "mode"), _cases("stdio"))
def test_python_host_over_stdio(
    daemon: Daemon, demo_direct: dict[str, Any], version: str, mode: str | None
) -> None:
    # S-LIFE-2, S-LIFE-3 (legacy hosts): mcpx answered the host's initialize, offering its
    # newest revision, with that same revision and its serverInfo (checked in _check_run).
    run = run_host(python_host(version, "stdio", "", mode), daemon)
    _check_run(run, version, mode, demo_direct)


@pytest.mark.obligation(
    "S-TOOL-1",
    "S-PROMPT-1",
    "S-RES-1",
    "S-LIFE-7",
    "S-LIFE-8",
    "S-MSG-10",
    "S-LIFE-20",
    "S-LIFE-2",
    "S-LIFE-3",
    "S-HTTP-5",
    "S-HTTP-2",
)
@pytest.mark.parametrize(("version", "mode"), _cases("http"))
def test_python_host_over_streamable_http(
    daemon: Daemon, demo_direct: dict[str, Any], version: str, mode: str | None
) -> None:
    # S-LIFE-2, S-LIFE-3 (legacy hosts) as over stdio; S-HTTP-5: the SDK took every reply
    # as application/json or text/event-stream (it accepts no other); S-HTTP-2 (2.3.0
    # auto): the single endpoint answered 2026-07-28 POSTs.
    run = run_host(python_host(version, "http", mcp_url(daemon), mode), daemon)
    _check_run(run, version, mode, demo_direct)


@pytest.mark.obligation("S-LIFE-25")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_hosts_of_every_era_at_once(
    daemon: Daemon, demo_direct: dict[str, Any], transport: str
) -> None:
    """Every release's host at the same time, on one daemon: each gets its own revision."""
    cases = [(p.values[0], p.values[1]) for p in _cases(transport)]
    target = mcp_url(daemon) if transport == "http" else ""
    before = len(daemon.sent_frames())
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        runs = list(
            pool.map(lambda c: run_host(python_host(c[0], transport, target, c[1]), daemon), cases)
        )
    frames = daemon.sent_frames()[before:]
    for (version, mode), run in zip(cases, runs, strict=True):
        assert run.seen["sdk"] == version
        assert run.seen["protocolVersion"] == python_host_revision(version, mode), run.seen
        check_content(run.seen, demo_direct)
    # S-LIFE-25: legacy sessions and 2026-07-28 requests served side by side (on the one
    # /mcp endpoint; through one daemon for stdio), each in its own era: per host, one
    # frame per request, at its revision.
    wanted: Counter[tuple[str | None, str | None]] = Counter()
    for version, mode in cases:
        rev = python_host_revision(version, mode)
        opening = "server/discover" if rev == MODERN_REVISION else "initialize"
        wanted.update((rev, method) for method in HOST_METHODS | {opening})
    got = Counter(answered(frames))
    assert not wanted - got, f"missing: {wanted - got}"
    assert set(got) == set(wanted), f"unexpected: {set(got) - set(wanted)}"
