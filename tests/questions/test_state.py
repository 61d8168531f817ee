"""requestState: signed, bound to the request, expiring, carrying the rounds count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.questions import StateError, StateSigner, binding

PARAMS = {"name": "deploy", "arguments": {"env": "prod"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _signer(clock: Clock | None = None) -> StateSigner:
    return StateSigner(60, key=b"k" * 32, clock=clock or Clock())


def test_round_trip_carries_call_and_rounds() -> None:
    signer = _signer()
    state = signer.issue("call-1", "tools/call", PARAMS, 3)
    # The retry carries inputResponses, the state and a new _meta: still the same request.
    retry = {**PARAMS, "inputResponses": {"a": {}}, "requestState": state, "_meta": {"x": 1}}
    found = signer.verify(state, "tools/call", retry)
    assert (found.call, found.rounds) == ("call-1", 3)


def test_each_failure_says_which() -> None:
    clock = Clock()
    signer = _signer(clock)
    state = signer.issue("call-1", "tools/call", PARAMS, 0)
    cases = {
        "malformed": "not-a-state",
        "tampered": state[:-2] + ("AA" if not state.endswith("AA") else "BB"),
    }
    for reason, bad in cases.items():
        with pytest.raises(StateError) as caught:
            signer.verify(bad, "tools/call", PARAMS)
        assert caught.value.reason == reason
        assert caught.value.code == -32602
    with pytest.raises(StateError, match="another request") as other:
        signer.verify(state, "tools/call", {**PARAMS, "arguments": {"env": "dev"}})
    assert other.value.reason == "other-request"
    with pytest.raises(StateError, match="another request"):
        signer.verify(state, "prompts/get", PARAMS)
    clock.now += 61
    with pytest.raises(StateError, match="expired"):
        signer.verify(state, "tools/call", PARAMS)


def test_another_daemons_state_is_tampered() -> None:
    state = StateSigner(60).issue("c", "tools/call", PARAMS, 0)
    with pytest.raises(StateError) as caught:
        StateSigner(60).verify(state, "tools/call", PARAMS)
    assert caught.value.reason == "tampered"


def test_binding_ignores_what_a_retry_adds_and_key_order() -> None:
    a = binding("tools/call", {"arguments": {"b": 1, "a": 2}, "name": "t"})
    b = binding("tools/call", {"name": "t", "arguments": {"a": 2, "b": 1}, "requestState": "s"})
    assert a == b


@given(st.text(max_size=200))
def test_any_text_is_refused_cleanly(text: str) -> None:
    with pytest.raises(StateError):
        _signer().verify(text, "tools/call", PARAMS)
