"""What a modern upstream will not announce is polled (C-SUB-3).

End to end: a real daemon whose upstream (tests/fixtures/quiet_server.py, a real
process) declares prompt list changes and resource subscriptions but leaves both out of
its listen acknowledgement, then changes its prompts and its resource silently.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from mcpx.pool._polls import left_out, unacknowledged_uris
from support.daemon import Daemon, running_daemon
from support.waiting import wait_until

QUIET = Path(__file__).parents[1] / "fixtures" / "quiet_server.py"
NOTE = "quiet://note"
WATCHED = f"mcpx://quiet/{quote(NOTE, safe='')}"


def test_left_out_are_the_kinds_asked_for_and_not_acknowledged() -> None:
    asked = {"toolsListChanged": True, "promptsListChanged": True}
    assert left_out(asked, {"notifications": {"toolsListChanged": True}}) == ["prompts"]
    assert left_out(asked, {"notifications": asked}) == []
    assert left_out(asked, {}) == ["tools", "prompts"]  # no filter at all: nothing agreed
    assert left_out({"toolsListChanged": True}, {"notifications": "junk"}) == ["tools"]
    assert left_out({}, {"notifications": {}}) == []  # nothing asked, nothing to poll


def test_unacknowledged_uris_are_the_ones_asked_for_and_not_listed() -> None:
    asked = ["a://1", "a://2"]
    kept = {"notifications": {"resourceSubscriptions": ["a://2", "a://3"]}}
    assert unacknowledged_uris(asked, kept) == ["a://1"]
    assert unacknowledged_uris(asked, {"notifications": {}}) == asked
    assert unacknowledged_uris(asked, {"notifications": {"resourceSubscriptions": "a://1"}}) == (
        asked
    )
    assert unacknowledged_uris([], {}) == []


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


def _call(daemon: Daemon, tool: str) -> None:
    with daemon.http() as api:
        body = {"server": "quiet", "tool": tool, "arguments": {}}
        assert api.post("/v1/call", json=body, timeout=60).status_code == 200


@pytest.mark.obligation("C-SUB-3")
@pytest.mark.parametrize("quiet", ["300ms"], indirect=True)
def test_a_list_left_out_of_the_acknowledgement_is_polled(quiet: Daemon) -> None:
    assert _prompt_names(quiet) == ["first"]
    _call(quiet, "add_prompt")
    wait_until(lambda: _prompt_names(quiet) != ["first"], timeout=30, interval=0.1)
    assert _prompt_names(quiet) == ["added1", "first"]
    logged = [line["msg"] for line in quiet.log_lines()]
    assert any("acknowledged no ['prompts'] list changes: polling" in m for m in logged)


@pytest.mark.parametrize("quiet", ["1h"], indirect=True)
def test_without_polling_the_silent_change_goes_unseen(quiet: Daemon) -> None:
    # The control: the catalogue keeps a listing until told otherwise, so only the
    # polling of the test above can have seen the change.
    assert _prompt_names(quiet) == ["first"]
    _call(quiet, "add_prompt")
    time.sleep(1.5)  # five times the 300 ms the test above polls at: a poll would show it
    assert _prompt_names(quiet) == ["first"]


def _events(daemon: Daemon, got: list[dict[str, Any]], want: int, ready: threading.Event) -> None:
    # Watches the note for as long as the stream is open (GET /v1/events?uri=).
    with daemon.http() as api, api.stream("GET", "/v1/events", params={"uri": WATCHED}) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data: "):
                continue
            got.append(json.loads(line[len("data: ") :]))
            ready.set()
            if len(got) >= want:
                return


@pytest.mark.obligation("C-SUB-3")
@pytest.mark.parametrize("quiet", ["300ms"], indirect=True)
def test_a_resource_left_out_of_the_acknowledgement_is_polled(quiet: Daemon) -> None:
    got: list[dict[str, Any]] = []
    ready = threading.Event()
    reader = threading.Thread(target=_events, args=(quiet, got, 2, ready), daemon=True)
    reader.start()
    assert ready.wait(30)
    assert got[0]["kind"] == "resource.watching" and got[0]["data"]["subscribed"] is True
    # The first read is the baseline, and an unchanged read says nothing.
    wait_until(lambda: _logged(quiet, "acknowledged no subscription to"), timeout=30)
    time.sleep(1)  # a read or two: had an unchanged read said something, it would be here
    assert len(got) == 1
    _call(quiet, "edit_note")
    reader.join(timeout=30)
    assert got[1]["kind"] == "resource.updated" and got[1]["uri"] == NOTE
    assert _logged(quiet, f"acknowledged no subscription to ['{NOTE}']: polling")


def _logged(daemon: Daemon, text: str) -> bool:
    return any(text in line["msg"] for line in daemon.log_lines())
