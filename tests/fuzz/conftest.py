"""The fuzz modules' shared fixture: each module runs its own ``daemon``; ``http`` is a
``/mcp`` client and a ``/v1`` client on it, for the module's life."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fuzz.helpers import clients
from support.daemon import Daemon


@pytest.fixture(scope="module")
def http(daemon: Daemon) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    mcp, api = clients(daemon)
    with mcp, api:
        yield mcp, api
