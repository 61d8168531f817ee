"""The broker: durable questions, validated answers, expiry as cancel."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import pytest

from mcpx.questions import Broker, QuestionClosed
from mcpx.wire import InvalidParams
from support.waiting import await_until

pytestmark = pytest.mark.anyio

FORM = {
    "message": "demo (via mcpx) asks: which environment?",
    "requestedSchema": {
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}},
        "required": ["env"],
    },
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _broker(tmp_path: Path, clock: Clock | None = None) -> Broker:
    return Broker(tmp_path / "questions.db", clock=clock or Clock())


async def test_survives_a_restart_and_is_private(tmp_path: Path) -> None:
    clock = Clock()
    first = _broker(tmp_path, clock)
    asked = first.ask("demo", "elicitation/create", FORM, identity="stdio:1", routing="broker")
    first.close()
    assert stat.S_IMODE((tmp_path / "questions.db").stat().st_mode) == 0o600
    again = _broker(tmp_path, clock)
    [pending] = again.pending()
    assert (pending.id, pending.server, pending.params) == (asked.id, "demo", FORM)
    assert pending.time_left(clock.now) == 120.0
    assert again.pending(identity="stdio:2") == []  # one client's question is not another's


async def test_answer_is_validated_and_wakes_the_waiter(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    q = broker.ask("demo", "elicitation/create", FORM, identity=None, routing="broker")
    with pytest.raises(Exception, match="env"):
        broker.answer(q.id, {"env": "staging"})
    assert broker.get(q.id).state == "pending"  # type: ignore[union-attr]  # still open
    got: list[dict[str, object]] = []

    async def waiter() -> None:
        got.append(await broker.wait(q.id))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await await_until(lambda: q.id in broker._events)  # it is waiting
        broker.answer(q.id, {"env": "prod"})
    assert got == [{"action": "accept", "content": {"env": "prod"}}]
    with pytest.raises(QuestionClosed, match="answered"):
        broker.decline(q.id)


async def test_decline_cancel_and_expiry_as_cancel(tmp_path: Path) -> None:
    clock = Clock()
    broker = _broker(tmp_path, clock)
    a = broker.ask("s", "elicitation/create", FORM, identity=None, routing="broker")
    b = broker.ask("s", "elicitation/create", FORM, identity=None, routing="broker")
    c = broker.ask("s", "elicitation/create", FORM, identity=None, routing="broker", ttl=5)
    assert broker.decline(a.id).result == {"action": "decline"}
    assert broker.cancel(b.id).result == {"action": "cancel"}
    clock.now += 6
    assert broker.expire() == 1
    found = broker.get(c.id)
    assert found is not None and (found.state, found.result) == ("expired", {"action": "cancel"})
    assert await broker.wait(c.id) == {"action": "cancel"}
    clock.now += 3601  # finished rows are pruned after an hour
    broker.expire()
    assert broker.get(a.id) is None and broker.get(c.id) is None


async def test_sampling_answers_are_the_result(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    q = broker.ask("s", "sampling/createMessage", {"messages": []}, identity=None, routing="broker")
    result = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "human"}
    assert broker.answer(q.id, result).result == result


# C-SAMP-1 C-ELIC-1: a wrong answer is refused and the question stays open; a url
# elicitation's empty answer is an accept (ElicitResult needs its action).
@pytest.mark.obligation("C-SAMP-1", "C-ELIC-1")
async def test_answers_are_made_valid_or_refused(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    q = broker.ask("s", "sampling/createMessage", {"messages": []}, identity=None, routing="broker")
    with pytest.raises(InvalidParams, match="model"):
        broker.answer(q.id, {"role": "assistant", "content": {"type": "text", "text": "hi"}})
    assert broker.get(q.id).state == "pending"  # type: ignore[union-attr]
    url = {"mode": "url", "message": "go", "url": "https://example.test", "elicitationId": "1"}
    u = broker.ask("s", "elicitation/create", url, identity=None, routing="broker")
    assert broker.answer(u.id, {}).result == {"action": "accept"}
    r = broker.ask("s", "roots/list", {}, identity=None, routing="broker")
    with pytest.raises(InvalidParams, match="roots"):
        broker.answer(r.id, {"roots": "file:///a"})
