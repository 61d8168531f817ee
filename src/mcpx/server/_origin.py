"""The ``Origin`` check every HTTP request passes before anything else (DNS rebinding).

Invariants:

- No ``Origin`` header passes: it is what non-browser clients send (S-SEC-1).
- A present ``Origin`` passes only when it parses, strictly, as ``scheme://host[:port]``
  and is loopback, the daemon's own address or a ``transport.allowedOrigins`` entry.
  Everything else fails, and the caller answers 403 (S-SEC-2).
- The check fails closed: anything the strict parse does not recognise (``null``,
  userinfo, paths, trailing dots, percent escapes, short or zero-padded IPv4) is refused
  rather than interpreted, since a browser never sends those forms for a real page.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

__all__ = ["origin_allowed"]

# scheme "://" host [":" port], nothing else. Host: a bracketed IPv6 literal or a
# dotted name whose labels neither start nor end with "-" and with no trailing dot.
_ORIGIN: Final = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://"
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}


def origin_allowed(origin: str | None, *, own: list[str], allowed: list[str]) -> bool:
    """Whether a request with this ``Origin`` header may proceed."""
    if origin is None:
        return True
    parsed = _parse(origin)
    if parsed is None:
        return False
    scheme, host, _ = parsed
    if scheme in _DEFAULT_PORTS and _loopback(host):
        return True
    trusted = {p for p in map(_parse, (e.rstrip("/") for e in [*own, *allowed])) if p}
    return parsed in trusted


def _parse(origin: str) -> tuple[str, str, str] | None:
    # Scheme and host are case-insensitive; a browser sends them lowercase anyway.
    m = _ORIGIN.fullmatch(origin.lower())
    if m is None:
        return None
    scheme, host, port = m["scheme"], m["host"], m["port"]
    if port is not None and int(port) > 65535:
        return None
    return scheme, host, port or _DEFAULT_PORTS.get(scheme, "")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    if host.startswith("["):
        return _ip_loopback(host[1:-1], ipaddress.IPv6Address)
    return _ip_loopback(host, ipaddress.IPv4Address)


def _ip_loopback(text: str, kind: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    # ipaddress refuses "127.1" and zero-padded octets, which some resolvers would read
    # differently; refusing them fails closed.
    try:
        return kind(text).is_loopback
    except ValueError:
        return False
