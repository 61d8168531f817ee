"""A script's run owns the questions its calls ask, and nothing once it is over.

The attribution rule (design record, "A script is one call that makes many"): a question
on a key whose in-flight calls all belong to one run is that run's, including calls the
script makes in parallel; two runs, or a run and anyone else, on one key: nobody's (the
broker). When the run ends its membership is removed everywhere.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

from mcpx.questions import CallsInFlight, HostAsker


def _asker(name: str) -> HostAsker:
    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"by": name}

    return HostAsker(can=lambda method, params: True, ask=ask)


def test_parallel_calls_of_one_run_are_the_runs() -> None:
    calls, starter = CallsInFlight(), _asker("starter")
    with (
        calls.run("r1", starter),
        calls.call("s", None, None, None, starter, "", "r1"),
        calls.call("s", None, None, None, starter, "", "r1"),
        calls.call("s", None, None, None, starter, "", "r1"),
    ):
        assert calls.owner("s", "", in_flight=3) is starter
        # Somebody else's request in flight on the key (counted by the pool, not here).
        assert calls.owner("s", "", in_flight=4) is None


def test_a_run_sharing_a_key_with_anyone_else_owns_nothing() -> None:
    calls, starter, other = CallsInFlight(), _asker("starter"), _asker("other")
    with (
        calls.run("r1", starter),
        calls.run("r2", other),
        calls.call("s", None, None, None, starter, "", "r1"),
        calls.call("s", None, None, None, other, "", "r2"),
    ):
        assert calls.owner("s", "", in_flight=2) is None
    with (
        calls.run("r1", starter),
        calls.call("s", None, None, None, starter, "", "r1"),
        calls.call("s", None, None, None, other, ""),
    ):
        assert calls.owner("s", "", in_flight=2) is None
        # Another instance (scope key) is another matter.
        assert calls.owner("s", "user-b", in_flight=0) is None


def test_a_straggler_of_an_ended_run_is_nobodys() -> None:
    calls, starter = CallsInFlight(), _asker("starter")
    with ExitStack() as run:
        run.enter_context(calls.run("r1", starter))
        with calls.call("s", None, None, None, starter, "", "r1"):
            assert calls.owner("s", "", in_flight=1) is starter
            run.close()  # the run ends while its call goes on
            assert calls.owner("s", "", in_flight=1) is None
    # Naming a run that is over (or never was) joins nothing.
    with calls.call("s", None, None, None, None, "", "r1"):
        assert calls.owner("s", "", in_flight=1) is None


def test_run_asker_only_for_a_live_run() -> None:
    calls, starter = CallsInFlight(), _asker("starter")
    with calls.run("r1", starter):
        assert calls.run_asker("r1") is starter
    with pytest.raises(KeyError):
        calls.run_asker("r1")
