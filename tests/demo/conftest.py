"""Fixtures for the demo server tests: real ``python -m mcpx.demo`` processes.

``start(rev)`` starts one (as many as a test wants) and does the handshake of ``rev``'s era;
``peer`` is one already started, for each of the five revisions in turn. Every frame each
server sends is validated strictly against the revision in force (``sent_frames``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from demo.peer import DemoPeer, Start, demo_peer
from mcpx import spec
from support.schemas import FrameLog


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def start(sent_frames: FrameLog) -> Iterator[Start]:
    with ExitStack() as stack:

        def _start(rev: str | None = None, argv: list[str] | None = None) -> DemoPeer:
            peer = stack.enter_context(demo_peer(sent_frames, argv))
            if rev is not None:
                peer.handshake(rev)
            return peer

        yield _start


@pytest.fixture(params=spec.REVISIONS)
def rev(request: pytest.FixtureRequest) -> str:
    revision: str = request.param
    return revision


@pytest.fixture
def peer(start: Start, rev: str) -> DemoPeer:
    return start(rev)
