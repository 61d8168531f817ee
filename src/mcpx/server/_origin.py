"""The ``Origin`` and ``Host`` checks every HTTP request passes before anything else
(cross-site requests and DNS rebinding). One strict parser of ``host[:port]`` serves both.

Invariants:

- No ``Origin`` header passes: it is what non-browser clients send (S-SEC-1).
- A present ``Origin`` passes only when it parses, strictly, as ``scheme://host[:port]``
  and is loopback, the daemon's own address or a ``transport.allowedOrigins`` entry.
  Everything else fails, and the caller answers 403 (S-SEC-2).
- A ``Host`` passes only when it parses, strictly, as ``host[:port]``, names the port the
  request arrived on (no port: 80), and names loopback (``localhost``, 127/8, ``[::1]``) or
  the address the request arrived on; or when it matches a ``transport.allowedHosts``
  entry (``host``: any port, ``host:port``: that port). A missing ``Host`` fails: a
  rebinding page's requests always carry the attacker's name there.
- Both checks fail closed: anything the strict parse does not recognise (``null``,
  userinfo, paths, trailing dots, percent escapes, short or zero-padded IPv4) is refused
  rather than interpreted, since a browser never sends those forms for a real page.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

__all__ = ["host_allowed", "origin_allowed"]

# host [":" port], nothing else. Host: a bracketed IPv6 literal or a dotted name whose
# labels neither start nor end with "-" and with no trailing dot.
_AUTHORITY: Final = (
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_HOST: Final = re.compile(_AUTHORITY)
_ORIGIN: Final = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://" + _AUTHORITY)
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


def host_allowed(host: str | None, *, own: tuple[str, int], allowed: list[str]) -> bool:
    """Whether a request with this ``Host`` header names the daemon.

    ``own`` is the (address, port) the request arrived on: the bound address, or for a
    wildcard bind the interface the client reached.
    """
    if host is None:
        return False
    parsed = _authority(host)
    if parsed is None:
        return False
    name, port = parsed
    if (port or "80") == str(own[1]) and (_loopback(name) or _same_address(name, own[0])):
        return True
    for entry in allowed:
        wanted = _authority(entry.strip())
        if wanted is not None and wanted[0] == name and wanted[1] in (None, port or "80"):
            return True
    return False


def _authority(text: str) -> tuple[str, str | None] | None:
    m = _HOST.fullmatch(text.lower())
    if m is None or (m["port"] is not None and int(m["port"]) > 65535):
        return None
    return m["host"], m["port"]


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


def _same_address(host: str, address: str) -> bool:
    """Whether a parsed Host name is the IP literal ``address`` (as a socket gives it)."""
    try:
        mine = ipaddress.ip_address(address.partition("%")[0])
        theirs = ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    except ValueError:
        return False
    # A dual-stack socket gives an IPv4 client's address as ::ffff:a.b.c.d.
    if isinstance(mine, ipaddress.IPv6Address) and mine.ipv4_mapped is not None:
        mine = mine.ipv4_mapped
    return mine == theirs
