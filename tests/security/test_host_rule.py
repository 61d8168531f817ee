"""The Host rule (``server.host_allowed``): the same strict parse as the Origin check.

Loopback names and the address a request arrived on pass with that port; so do
``transport.allowedHosts`` entries (``host``: any port, ``host:port``: that one). The
forms a resolver might read differently, or a rebinding page sends, fail.
"""

from __future__ import annotations

import pytest

from mcpx.server import host_allowed

OWN = ("127.0.0.1", 8931)
ALLOWED = ["gateway.internal", "proxy.test:8080", "[fd00::7]:9000"]

PASS = [
    ("127.0.0.1:8931", OWN),
    ("localhost:8931", OWN),
    ("LocalHost:8931", OWN),
    ("127.8.9.10:8931", OWN),
    ("[::1]:8931", OWN),
    ("localhost", ("127.0.0.1", 80)),  # no port: 80, as a browser leaves it out
    # A wildcard bind: the address the client reached, as the socket gives it.
    ("192.168.1.5:8931", ("192.168.1.5", 8931)),
    ("192.168.1.5:8931", ("::ffff:192.168.1.5", 8931)),
    ("[fe80::1]:8931", ("fe80::1", 8931)),
    ("gateway.internal", OWN),
    ("gateway.internal:1", OWN),
    ("proxy.test:8080", OWN),
    ("[fd00::7]:9000", OWN),
]

FAIL = [
    None,
    "",
    "evil.example",
    "evil.example:8931",
    "127.0.0.1",  # port 80, not ours
    "127.0.0.1:8932",
    "localhost.evil.example:8931",
    "127.0.0.1.evil.example:8931",
    "localhost.:8931",
    "127.1:8931",
    "0177.0.0.1:8931",
    "2130706433:8931",
    "0.0.0.0:8931",
    "[::ffff:127.0.0.1]:8931",
    "user@localhost:8931",
    "localhost:8931/path",
    "localhost:99999",
    " localhost:8931",
    "localhost:8931 ",
    "localhost%2eevil.example:8931",
    "192.168.1.5:8931",  # not the address it arrived on
    "proxy.test:8081",
    "proxy.test",  # host:port entries take that port only (80 is not 8080)
    "sub.gateway.internal",
    "[fd00::7]:9001",
]


@pytest.mark.parametrize(("host", "own"), PASS)
def test_host_passes(host: str, own: tuple[str, int]) -> None:
    assert host_allowed(host, own=own, allowed=ALLOWED)


@pytest.mark.parametrize("host", FAIL)
def test_host_fails(host: str | None) -> None:
    assert not host_allowed(host, own=OWN, allowed=ALLOWED)


def test_nothing_configured_still_allows_loopback_only() -> None:
    assert host_allowed("localhost:8931", own=OWN, allowed=[])
    assert not host_allowed("gateway.internal", own=OWN, allowed=[])
