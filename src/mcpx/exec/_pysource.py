"""Untrusted strings made into inert Python source: identifiers, literals, docstrings.

Tool names, descriptions, property names and enum values come from upstream servers,
which are not trusted: whatever they hold, the generated code must mean only what the
generator meant. So:

- An identifier is ASCII letters, digits and ``_`` only (no Unicode: NFKC folds some
  distinct names into one), never a keyword or a reserved name, never starting with a
  digit (``fancy-name`` -> ``fancy_name``, ``1x`` -> ``_1x``, ``from`` -> ``from_``),
  never starting with two underscores (``__all__`` -> ``_all__``).
- Names that clash after that are told apart predictably: in the sorted order of the
  original strings, the first keeps the name and the next get ``_2``, ``_3``...
- A value is written with ``repr`` (a complete literal whatever it holds); a docstring
  is written with every backslash and double quote escaped, so nothing can close it,
  and characters that are not printable as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Collection, Iterable
from typing import Final

__all__ = ["docstring", "identifier", "unique_identifiers"]

_NOT_IDENTIFIER: Final = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str, reserved: Collection[str] = ()) -> str:
    """``name`` as a valid ASCII Python identifier that is not a keyword or ``reserved``."""
    out = _NOT_IDENTIFIER.sub("_", name) or "_"
    if out.startswith("__"):
        # One leading underscore at most: no dunder (``__all__``) to clobber, and no
        # name a class would mangle (``aio.__x`` is looked up as ``aio._aio__x``).
        out = "_" + out.lstrip("_")
    if out[0].isdigit():
        out = f"_{out}"
    if keyword.iskeyword(out) or out in reserved:
        out = f"{out}_"
    return out


def unique_identifiers(
    names: Iterable[str], reserved: Collection[str] = (), *, lower: bool = False
) -> dict[str, str]:
    """Each distinct original name -> its identifier, none equal to another or to a
    ``reserved`` one (``lower``: lowercased first, as module names are, for file systems
    that ignore case). Taken in sorted order of the originals, so the same names always
    get the same identifiers whatever order they came in."""
    taken = set(reserved)
    out: dict[str, str] = {}
    for name in sorted(set(names)):
        base = identifier(name.lower() if lower else name, reserved)
        chosen, n = base, 1
        while chosen in taken:
            n += 1
            chosen = f"{base}_{n}"
        taken.add(chosen)
        out[name] = chosen
    return out


def _escaped(char: str) -> str:
    if char == "\n":
        return char
    if char in ('"', "\\"):
        return f"\\{char}"
    if char.isprintable():
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def docstring(text: str, indent: str) -> str:
    """``text`` as a triple-quoted docstring at ``indent`` (its first line unindented):
    no quote in it can close it, no backslash starts an escape it did not mean."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    lines = ["".join(map(_escaped, line)).rstrip() for line in text.strip().split("\n")]
    body = "\n".join(f"{indent}{line}" if line and i else line for i, line in enumerate(lines))
    closing = f"\n{indent}" if "\n" in body else ""
    return f'"""{body}{closing}"""'
