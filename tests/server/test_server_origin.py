"""The Origin check: loopback, own address and allowed origins pass; tricks fail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.server import origin_allowed

OWN = ["http://192.168.1.5:8931"]
ALLOWED = ["https://app.example.com", "http://tool.example:3000/"]

# S-SEC-1: no Origin is a non-browser client.
PASS = [
    None,
    "http://localhost",
    "http://localhost:3000",
    "https://localhost:8443",
    "http://127.0.0.1",
    "http://127.0.0.1:8931",
    "http://127.255.0.9:1",
    "http://[::1]:8080",
    "http://[0:0:0:0:0:0:0:1]",
    "HTTP://LOCALHOST:3000",
    "http://192.168.1.5:8931",
    "https://app.example.com",
    "https://app.example.com:443",
    "https://APP.example.com",
    "http://tool.example:3000",
]

# S-SEC-1, S-SEC-2: anything else is refused (the caller answers 403).
FAIL = [
    "",
    "null",
    "http://evil.com",
    "http://localhost.evil.com",
    "http://localhost.evil.com:3000",
    "http://127.0.0.1.evil.com",
    "http://127.0.0.1@evil.com",
    "http://localhost@evil.com",
    "http://evil.com@localhost",
    "http://user:pw@localhost",
    "http://localhost.",
    "http://127.0.0.1.",
    "http://localhost/",
    "http://localhost/path",
    "http://localhost:3000?x",
    "http://localhost:99999",
    "http://127.1",
    "http://0177.0.0.1",
    "http://2130706433",
    "http://0.0.0.0",
    "http://[::ffff:127.0.0.1]",
    "http://[::2]",
    "file://localhost",
    "chrome-extension://localhost",
    "ws://localhost",
    " http://localhost",
    "http://localhost ",
    "http://localhost http://evil.com",
    "http://localhost%2eevil.com",
    "http://192.168.1.5:8932",
    "http://192.168.1.5",
    "https://192.168.1.5:8931",
    "http://app.example.com",
    "https://app.example.com.evil.com",
    "https://sub.app.example.com",
    "http://tool.example:3001",
]


@pytest.mark.obligation("S-SEC-1")
@pytest.mark.parametrize("origin", PASS)
def test_origin_passes(origin: str | None) -> None:
    assert origin_allowed(origin, own=OWN, allowed=ALLOWED)


@pytest.mark.obligation("S-SEC-1", "S-SEC-2")
@pytest.mark.parametrize("origin", FAIL)
def test_origin_fails(origin: str) -> None:
    assert not origin_allowed(origin, own=OWN, allowed=ALLOWED)


def test_nothing_configured_still_allows_loopback_only() -> None:
    assert origin_allowed("http://localhost:1", own=[], allowed=[])
    assert not origin_allowed("https://app.example.com", own=[], allowed=[])


# S-SEC-1: a host with "localhost" or "127.0.0.1" in front of a suffix never passes.
@pytest.mark.obligation("S-SEC-1")
@given(st.from_regex(r"[a-z0-9]{1,10}(\.[a-z0-9]{1,10}){0,2}", fullmatch=True))
def test_suffix_after_loopback_name_fails(suffix: str) -> None:
    for host in ("localhost", "127.0.0.1"):
        assert not origin_allowed(f"http://{host}.{suffix}", own=[], allowed=[])
        assert not origin_allowed(f"http://{host}@{suffix}", own=[], allowed=[])
