"""The shared client factory: bounded connects and pool waits, unbounded stream reads."""

from __future__ import annotations

import httpx
import pytest

from mcpx.transport import http_client

pytestmark = pytest.mark.anyio


async def test_defaults() -> None:
    async with http_client(headers={"User-Agent": "mcpx-test"}) as client:
        assert client.timeout == httpx.Timeout(connect=10.0, read=None, write=30.0, pool=30.0)
        assert client.follow_redirects is True
        assert client.headers["user-agent"] == "mcpx-test"


async def test_limits_are_passed_on() -> None:
    async with http_client(max_connections=4, max_keepalive=10, connect_timeout=1) as client:
        pool = client._transport._pool  # type: ignore[attr-defined]
        assert pool._max_connections == 4
        assert pool._max_keepalive_connections == 4  # never more idle than allowed open
        assert client.timeout.connect == 1


def test_nonsense_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_connections must be positive"):
        http_client(max_connections=0)
