"""The relay's rules on their own: tokens, forward-only progress, the final report, levels."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcpx.questions import CallsInFlight, more_verbose
from mcpx.questions._calls_in_flight import LOG_LINES_PER_SECOND, PROGRESS_INTERVAL
from support.waiting import wait_until


class Host:
    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        self.got.append((method, params))


@pytest.mark.obligation("S-PROG-1", "S-PROG-4", "C-PROG-3")
def test_progress_token_swapped_and_restored() -> None:
    relay, host = CallsInFlight(), Host()
    with relay.call("s", host, {"progressToken": "host-1"}, None) as token:
        assert token is not None and token.startswith("mcpx-")
        assert (
            relay.upstream_notified(
                "s", "notifications/progress", {"progressToken": token, "progress": 1, "total": 2}
            )
            == 1
        )
    assert host.got == [
        ("notifications/progress", {"progressToken": "host-1", "progress": 1, "total": 2})
    ]
    # After the call: nothing more reaches the host.
    assert (
        relay.upstream_notified(
            "s", "notifications/progress", {"progressToken": token, "progress": 2}
        )
        == 0
    )


@pytest.mark.obligation("S-PROG-2", "S-PROG-4", "S-PROG-5", "C-PROG-3")
def test_only_forward_rate_limited_final_always_then_nothing() -> None:
    relay, host = CallsInFlight(), Host()
    with relay.call("s", host, {"progressToken": 5}, None) as token:

        def report(progress: float) -> int:
            params = {"progressToken": token, "progress": progress, "total": 10}
            return relay.upstream_notified("s", "notifications/progress", params)

        def interval_passed() -> bool:
            return time.monotonic() - last >= PROGRESS_INTERVAL

        assert report(1) == 1
        last = time.monotonic()  # no earlier than the relayed report
        assert report(1) == 0  # no movement
        assert report(0.5) == 0  # backwards
        assert report(2) == 0  # within 20 ms of the last one
        wait_until(interval_passed, interval=0.005)
        assert report(3) == 1
        assert report(10) == 1  # the final one, however soon
        last = time.monotonic()
        wait_until(interval_passed, interval=0.005)
        assert report(11) == 0  # nothing after the total, even once the interval passed
    assert [p["progress"] for _, p in host.got] == [1, 3, 10]


@pytest.mark.obligation("S-PROG-1")
def test_no_token_no_progress_and_no_notify_no_route() -> None:
    relay, host = CallsInFlight(), Host()
    with relay.call("s", host, {}, "info") as token:
        assert token is None
    with relay.call("s", None, {"progressToken": 1}, "info") as token:
        assert token is None


def _log(relay: CallsInFlight, server: str, scope: str, level: str, data: str) -> int:
    params = {"level": level, "data": data}
    return relay.upstream_notified(server, "notifications/message", params, scope)


@pytest.mark.obligation("C-LOG-4", "S-LOG-4")
def test_log_messages_by_level_to_the_only_call_on_that_instance() -> None:
    relay = CallsInFlight()
    verbose, quiet, elsewhere, unset = Host(), Host(), Host(), Host()
    with relay.call("s", verbose, None, "debug", scope="a"):
        assert _log(relay, "s", "a", "warning", "w") == 1
        with relay.call("t", elsewhere, None, "debug", scope="a"):
            assert _log(relay, "s", "a", "info", "i") == 1  # another server's call: no matter
    with relay.call("s", quiet, None, "error", scope="a"):
        assert _log(relay, "s", "a", "warning", "below its level") == 0
        assert _log(relay, "s", "a", "critical", "c") == 1
    with relay.call("s", unset, None, None, scope="a"):
        assert _log(relay, "s", "a", "critical", "no level set") == 0
    assert [p["data"] for _, p in verbose.got] == ["w", "i"]
    assert [p["data"] for _, p in quiet.got] == ["c"]
    assert elsewhere.got == [] and unset.got == []


@pytest.mark.obligation("S-HTTP-12", "S-HTTP-13")
def test_a_log_line_no_call_can_be_credited_with_reaches_no_host() -> None:
    relay = CallsInFlight()
    one, two, own = Host(), Host(), Host()
    with (
        relay.call("s", one, None, "debug", scope=""),
        relay.call("s", two, None, "debug", scope=""),
        relay.call("s", own, None, "debug", scope="identity:x"),
    ):
        # Two calls on the shared instance: the line names no request, so neither gets it.
        assert _log(relay, "s", "", "info", "whose?") == 0
        # The identity-scoped instance has one call: its lines are that call's.
        assert _log(relay, "s", "identity:x", "info", "mine") == 1
    assert one.got == [] and two.got == []
    assert [p["data"] for _, p in own.got] == ["mine"]


def test_more_verbose() -> None:
    assert more_verbose("error", "info") == "info"
    assert more_verbose(None, "warning") == "warning"
    assert more_verbose(None, None) is None


@pytest.mark.obligation("C-LOG-5")
def test_a_flood_of_log_lines_is_rate_limited_per_call() -> None:
    relay, host = CallsInFlight(), Host()
    with relay.call("s", host, None, "debug"):
        told = sum(
            _log(relay, "s", "", "info", f"line {i}") for i in range(3 * LOG_LINES_PER_SECOND)
        )
    assert told == LOG_LINES_PER_SECOND  # the rest of that second's lines were dropped
    assert [p["data"] for _, p in host.got][-1] == f"line {LOG_LINES_PER_SECOND - 1}"
