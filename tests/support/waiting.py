"""Waiting in tests for a condition, never for a guessed length of time.

``wait_until(condition)`` calls ``condition`` until it returns something truthy and returns
that; ``await_until`` is the same inside an async test, where a blocking poll would stop the
very event loop the condition waits on. Both are bounded: once ``timeout`` seconds have
passed they raise ``WaitTimedOut`` saying what never became true and what the condition last
returned, so a test fails with a message and never hangs.

A sleep stays only where there is no condition to wait on: a fixture server that is slow on
purpose, or a test showing that something does *not* happen within a while.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class WaitTimedOut(AssertionError):
    """A condition did not hold within its timeout (a test failure, not an error)."""


Message = str | Callable[[], object] | None


def _failure(
    condition: Callable[[], object], timeout: float, last: object, message: Message
) -> WaitTimedOut:
    said = message() if callable(message) else message
    what = said or getattr(condition, "__qualname__", repr(condition))
    return WaitTimedOut(f"{what}: still not true after {timeout:g} s (it last gave {last!r})")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    message: Message = None,
) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns a truthy value, and
    return that value.

    Raises:
        WaitTimedOut: ``condition`` still returned a falsy value after ``timeout`` seconds;
            its text is ``message`` (called then, if it is a function: what the test wants
            to show of the state at that moment), else the condition's name.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(condition, timeout, value, message)
        time.sleep(interval)


async def await_until(
    condition: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    message: Message = None,
) -> T:
    """``wait_until`` for an async test: the loop runs while the condition is false.

    Raises:
        WaitTimedOut: as ``wait_until``.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(condition, timeout, value, message)
        await anyio.sleep(interval)
