"""The relay's rules on their own: tokens, forward-only progress, the final report, levels."""

from __future__ import annotations

import time
from typing import Any

from mcpx.ops import Relay, more_verbose


class Host:
    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> None:
        self.got.append((method, params))


def test_progress_token_swapped_and_restored() -> None:
    relay, host = Relay(), Host()
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


def test_only_forward_rate_limited_final_always_then_nothing() -> None:
    relay, host = Relay(), Host()
    with relay.call("s", host, {"progressToken": 5}, None) as token:

        def report(progress: float) -> int:
            params = {"progressToken": token, "progress": progress, "total": 10}
            return relay.upstream_notified("s", "notifications/progress", params)

        assert report(1) == 1
        assert report(1) == 0  # no movement
        assert report(0.5) == 0  # backwards
        assert report(2) == 0  # within 20 ms of the last one
        time.sleep(0.03)
        assert report(3) == 1
        assert report(10) == 1  # the final one, however soon
        time.sleep(0.03)
        assert report(11) == 0  # nothing after the total
    assert [p["progress"] for _, p in host.got] == [1, 3, 10]


def test_no_token_no_progress_and_no_notify_no_route() -> None:
    relay, host = Relay(), Host()
    with relay.call("s", host, {}, "info") as token:
        assert token is None
    with relay.call("s", None, {"progressToken": 1}, "info") as token:
        assert token is None


def test_log_messages_by_level_to_calls_on_that_server() -> None:
    relay = Relay()
    verbose, quiet, elsewhere, unset = Host(), Host(), Host(), Host()
    with (
        relay.call("s", verbose, None, "debug"),
        relay.call("s", quiet, None, "error"),
        relay.call("t", elsewhere, None, "debug"),
        relay.call("s", unset, None, None),
    ):
        assert (
            relay.upstream_notified("s", "notifications/message", {"level": "warning", "data": "w"})
            == 1
        )
        assert (
            relay.upstream_notified(
                "s", "notifications/message", {"level": "critical", "data": "c"}
            )
            == 2
        )
    assert [p["data"] for _, p in verbose.got] == ["w", "c"]
    assert [p["data"] for _, p in quiet.got] == ["c"]
    assert elsewhere.got == [] and unset.got == []


def test_more_verbose() -> None:
    assert more_verbose("error", "info") == "info"
    assert more_verbose(None, "warning") == "warning"
    assert more_verbose(None, None) is None
