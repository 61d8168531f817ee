"""The gateway's resource URIs: ``mcpx://<server>/<percent-encoded original uri>``.

Invariants:

- A listed resource's URI reads back exactly: the original is encoded with
  ``quote(uri, safe="")``, so it holds no ``/``, ``?`` or ``#`` of its own and
  ``unquote`` gives it back byte for byte (a ``%`` in it becomes ``%25``). An absolute
  path is the exception: listed without its leading ``/`` and with its own slashes,
  it is recovered against the server's resource list.
- A template's ``{...}`` expressions stay as they are, unescaped, so the rewritten
  ``uriTemplate`` is still a template a client can expand; only its literal parts
  are encoded.
- An expanded template cannot be read back by ``unquote`` alone: RFC 6570 expansion
  percent-encodes reserved characters in a value (``a/b`` becomes ``a%2Fb``), and a
  blind ``unquote`` would decode those too. So a URI that matches one of the server's
  rewritten templates is mapped by that template, taking each expanded value as it
  was sent; only the literal parts are decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import quote, unquote

__all__ = ["gateway_template", "gateway_uri", "original_uri", "split_gateway"]

SCHEME: Final = "mcpx://"
# One RFC 6570 expression; templates have no nested braces.
_EXPRESSION: Final = re.compile(r"\{[^{}]*\}")


def gateway_uri(server: str, uri: str) -> str:
    """The mcpx URI for ``server``'s resource ``uri``.

    An absolute path (``/abs/doc``) is listed as a path under the server
    (``mcpx://demo/abs/doc``): its leading slash dropped, its own slashes kept.
    """
    if uri.startswith("/"):
        return f"{SCHEME}{quote(server, safe='')}/{quote(uri[1:], safe='/')}"
    return f"{SCHEME}{quote(server, safe='')}/{quote(uri, safe='')}"


def gateway_template(server: str, template: str) -> str:
    """``server``'s ``uriTemplate`` rewritten; its expressions are kept verbatim."""
    return f"{SCHEME}{quote(server, safe='')}/{_encode_literals(template)}"


def split_gateway(uri: str) -> tuple[str, str] | None:
    """``(server, rest)`` of an mcpx URI, ``rest`` still encoded; None for any other URI."""
    if not uri.startswith(SCHEME):
        return None
    server, slash, rest = uri[len(SCHEME) :].partition("/")
    if not server or not slash:
        return None
    return unquote(server), rest


def original_uri(rest: str, *, resources: Iterable[str], templates: Iterable[str]) -> str:
    """The upstream URI behind ``rest`` (the part after ``mcpx://<server>/``).

    ``resources`` and ``templates`` are the server's own (original) URIs and templates.
    A listed resource wins over a template it happens to match: its encoding is exact.
    """
    for uri in resources:
        if quote(uri, safe="") == rest or (
            uri.startswith("/") and quote(uri[1:], safe="/") == rest
        ):
            return uri
    for template in templates:
        found = _expand_back(template, rest)
        if found is not None:
            return found
    return unquote(rest)


def _encode_literals(template: str) -> str:
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(template):
        parts += [quote(template[last : match.start()], safe=""), match.group()]
        last = match.end()
    parts.append(quote(template[last:], safe=""))
    return "".join(parts)


def _expand_back(template: str, rest: str) -> str | None:
    """The original URI if ``rest`` is an expansion of ``template``'s rewritten form.

    Each expression's expansion is taken as sent: it is already encoded the way the
    upstream's own template would have encoded it.
    """
    literals = _EXPRESSION.split(template)
    expressions = _EXPRESSION.findall(template)
    if not expressions:
        return None
    pattern = "(.*?)".join(re.escape(quote(lit, safe="")) for lit in literals)
    match = re.fullmatch(pattern, rest, flags=re.DOTALL)
    if match is None:
        return None
    out = [literals[0]]
    for value, literal in zip(match.groups(), literals[1:], strict=True):
        out += [value, literal]
    return "".join(out)
