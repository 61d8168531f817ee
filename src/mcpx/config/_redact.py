"""What of a server's configured credentials may be shown: nothing. The one place that hides them.

Everything mcpx shows or keeps (the /v1 answers, MCP tool results, events, the daemon's
log, the catalogue and the task store on disk, the CLI's output) reaches a client, an AI
agent or a file someone may share. So every URL and every error text that may hold a
credential is shown as this module returns it, never as it was configured or received.

Decisions:

- ``redact_url`` hides the whole userinfo (``***@``: a user name is half a credential)
  and the value of every query parameter, keeping the names: a gateway cannot know which
  parameter an upstream reads a secret from (``key``, ``sig``, ``code``, ``token`` or a
  name its vendor made up), and a wrong guess would show the secret to every client. A
  part without ``=`` is all value and is hidden; an empty value stays empty (it hides
  nothing). The fragment is hidden too (never sent, but tokens get pasted there).
  Scheme, host, port and path stay: they say which server it is.
- A URL that does not parse (its port included) is shown as ``UNPARSABLE``, never as
  written.
- ``redact_headers`` hides every header value, keeping the names: ``headers`` in a
  server entry carry tokens as often as anything else.
- ``Redactor`` is one connection's view: its URL as shown, and ``text`` for anything
  quoted from elsewhere (an httpx exception, an upstream's error page), which may repeat
  a credential. It hides every URL in the text (as ``redact_url`` does) and every
  spelling of the connection's secrets: as configured, percent-decoded and -encoded,
  escaped as ``repr`` and JSON write them, base64 of ``user:password`` for userinfo
  (sent as basic auth), and the credential after an auth scheme (``Bearer <token>``).
  A secret shorter than ``MIN_SECRET`` characters is not searched for: replacing every
  ``a`` of a text would garble it and hide nothing worth hiding.

Invariants: pure functions of their arguments; the output never holds a query value,
userinfo or fragment of the input URL; ``Redactor.text`` never grows a secret back.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

__all__ = ["MIN_SECRET", "REDACTED", "UNPARSABLE", "Redactor", "redact_headers", "redact_url"]

REDACTED: Final = "***"
UNPARSABLE: Final = "<a URL that does not parse, not shown>"
MIN_SECRET: Final = 4

# A URL inside free text: up to whitespace, a quote or an angle bracket.
_URL_IN_TEXT: Final = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>`]+", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its userinfo, query values and fragment replaced by ``***``."""
    try:
        parts = urlsplit(url)
        # A port that is not a number is most often a password with a raw "/", "?" or
        # "#" in it, which ended the authority early: "http://user:pa/ss@host/".
        _ = parts.port  # read for the ValueError it raises
    except ValueError:  # e.g. an unbalanced "[" in the host, or that port
        return UNPARSABLE
    _, at, host = parts.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else host
    query = "&".join(_redacted_pair(pair) for pair in parts.query.split("&"))
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redacted_pair(pair: str) -> str:
    name, equals, value = pair.partition("=")
    if not equals:
        return REDACTED if name else ""  # a bare part is a value, maybe a key
    return f"{name}={REDACTED if value else ''}"


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with every value replaced by ``***``."""
    return {name: REDACTED for name in headers}


class Redactor:
    """Hides one connection's credentials: its URL as shown, and any text quoted by it."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = redact_url(url)
        secrets = [*_url_secrets(url), *_header_secrets(headers or {})]
        forms = {form for secret in secrets for form in _spellings(secret)}
        kept = sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True)
        # Longest first: a secret that holds another is hidden whole.
        self._secrets = re.compile("|".join(map(re.escape, kept)), re.I) if kept else None

    def text(self, text: str) -> str:
        """``text`` with every URL redacted and every spelling of a secret hidden."""
        text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text)
        return self._secrets.sub(REDACTED, text) if self._secrets else text


def _url_secrets(url: str) -> Iterator[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        yield url  # shown nowhere (UNPARSABLE), hidden in text as a whole
        return
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at:
        user, _, password = userinfo.partition(":")
        yield from (user, password)
        # httpx sends userinfo as basic auth: the header an upstream may echo.
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        yield base64.b64encode(basic).decode()
    for pair in parts.query.split("&"):
        name, equals, value = pair.partition("=")
        yield value if equals else name
    yield parts.fragment


def _header_secrets(headers: Mapping[str, str]) -> Iterator[str]:
    for value in headers.values():
        yield value
        # "Bearer <token>", "Basic <base64>": the credential alone, as it may be quoted.
        yield from value.split()[1:]


def _spellings(secret: str) -> Iterable[str]:
    plain = {secret, unquote(secret), unquote_plus(secret)}
    out = set(plain)
    for value in plain:
        out |= {quote(value, safe=""), quote_plus(value)}
        out.add(value.encode("unicode_escape").decode("ascii"))  # as repr writes it
        out.add(json.dumps(value)[1:-1])
    return out
