"""The telemetry tests' OTLP receiver, one per module (a daemon per module sends to it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from telemetry.otlp_receiver import Receiver, receiving


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with receiving() as got:
        yield got
