"""Lists a modern upstream will not announce are polled (C-SUB-3).

End to end: a real daemon whose upstream (tests/fixtures/quiet_lists_server.py, a real
process) declares prompt list changes but leaves them out of its listen
acknowledgement, then changes its prompts silently.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx.pool._list_polls import left_out
from support.daemon import Daemon, running_daemon

QUIET = Path(__file__).parents[1] / "fixtures" / "quiet_lists_server.py"


def test_left_out_are_the_kinds_asked_for_and_not_acknowledged() -> None:
    asked = {"toolsListChanged": True, "promptsListChanged": True}
    assert left_out(asked, {"notifications": {"toolsListChanged": True}}) == ["prompts"]
    assert left_out(asked, {"notifications": asked}) == []
    assert left_out(asked, {}) == ["tools", "prompts"]  # no filter at all: nothing agreed
    assert left_out({"toolsListChanged": True}, {"notifications": "junk"}) == ["tools"]
    assert left_out({}, {"notifications": {}}) == []  # nothing asked, nothing to poll


@pytest.fixture
def quiet(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Daemon]:
    servers = {"quiet": {"command": sys.executable, "args": [str(QUIET)]}}
    settings = {"protoMessages.listMaxAge": request.param}
    with running_daemon(tmp_path, servers, settings=settings) as daemon:
        yield daemon


def _prompt_names(daemon: Daemon) -> list[str]:
    with daemon.http() as api:
        listed = api.get("/v1/prompts", params={"server": "quiet"})
    assert listed.status_code == 200, listed.text
    body: dict[str, Any] = listed.json()
    return sorted(p["name"].removeprefix("quiet_") for p in body["prompts"])


def _add_prompt(daemon: Daemon) -> None:
    with daemon.http() as api:
        body = {"server": "quiet", "tool": "add_prompt", "arguments": {}}
        assert api.post("/v1/call", json=body, timeout=60).status_code == 200


# C-SUB-3
@pytest.mark.parametrize("quiet", ["300ms"], indirect=True)
def test_a_list_left_out_of_the_acknowledgement_is_polled(quiet: Daemon) -> None:
    assert _prompt_names(quiet) == ["first"]
    _add_prompt(quiet)
    deadline = time.monotonic() + 30
    while _prompt_names(quiet) == ["first"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _prompt_names(quiet) == ["added1", "first"]
    logged = [line["msg"] for line in quiet.log_lines()]
    assert any("acknowledged no ['prompts'] list changes: polling" in m for m in logged)


@pytest.mark.parametrize("quiet", ["1h"], indirect=True)
def test_without_polling_the_silent_change_goes_unseen(quiet: Daemon) -> None:
    # The control: the catalogue keeps a listing until told otherwise, so only the
    # polling of the test above can have seen the change.
    assert _prompt_names(quiet) == ["first"]
    _add_prompt(quiet)
    time.sleep(1.5)
    assert _prompt_names(quiet) == ["first"]
