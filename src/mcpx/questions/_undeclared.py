"""What mcpx refuses to be asked: a question needing more than mcpx declared upstream.

Invariants:

- A question is judged against what mcpx declared to the upstream in the revision it
  speaks (``QuestionRouter.capabilities``), before any host or the broker sees it: one
  refused is answered at once with an error, never held or put to anyone (C-SREQ-4).
- A kind mcpx did not declare at all is -32601 (roots' own rule, C-ROOTS-6, for all):
  elicitation before 2025-06-18.
- A declared kind asking for more than was declared is -32602 (invalid params): an
  elicitation mode other than form (or none) and url, or url where mcpx declared no
  ``elicitation.url`` (C-ELIC-4); sampling with ``tools`` or ``toolChoice`` where it
  declared no ``sampling.tools`` (C-SAMP-3, a MUST in the schema's own words).
- ``includeContext`` is never refused: every revision lets the client ignore it, and
  only servers are told not to send "thisServer"/"allServers" undeclared (a SHOULD
  NOT, from 2025-11-25; before that the values are ordinary). Whoever answers may
  ignore it; a host is asked only if it declared ``sampling.context``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcpx.wire import InvalidParams, MethodNotFound

__all__ = ["check_askable"]

_KIND: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
_MODES: Final = ("form", "url")


def check_askable(method: str, params: Mapping[str, Any], declared: Mapping[str, Any]) -> None:
    """Whether mcpx, having ``declared`` these client capabilities, takes the question.

    Raises:
        MethodNotFound: its kind was not declared (or is not one mcpx answers).
        InvalidParams: it asks for a mode or feature that was not declared.
    """
    kind = _KIND.get(method)
    if kind is None or kind not in declared:
        raise MethodNotFound(f"mcpx declared no {kind or method} capability to this server")
    sub = declared[kind] if isinstance(declared[kind], Mapping) else {}
    if method == "elicitation/create":
        _check_mode(params.get("mode", "form"), sub)
    elif method == "sampling/createMessage" and "tools" not in sub:
        given = [k for k in ("tools", "toolChoice") if k in params]
        if given:
            raise InvalidParams(
                f"sampling with {' and '.join(given)} needs the sampling.tools capability, "
                "which mcpx did not declare",
                {"unsupported": given},
            )


def _check_mode(mode: object, declared: Mapping[str, Any]) -> None:
    if mode not in _MODES:
        raise InvalidParams(
            f"elicitation mode {mode!r} is not one mcpx knows (form, url)", {"mode": mode}
        )
    # Without sub-capabilities (2025-06-18, or an empty object) only form was declared.
    if mode == "url" and "url" not in declared:
        raise InvalidParams(
            "url elicitation needs the elicitation.url capability, which mcpx did not "
            "declare to this server in its revision",
            {"mode": mode},
        )
