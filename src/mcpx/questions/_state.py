"""``requestState`` for 2026-07-28 hosts: signed, bound to the request, expiring.

Invariants:

- A state is ``base64url(payload).base64url(HMAC-SHA256(key, payload))``; the key is made
  per daemon process (``secrets``) and never written anywhere, so a restart voids every
  state in flight (their calls ended with the process anyway).
- The payload carries the call id, a binding (the method and a SHA-256 of the params
  without ``_meta``, ``inputResponses`` and ``requestState``), an expiry
  (``proto.stateTTL``) and how many rounds the call has asked (``proto.askRounds``):
  each retry is a new request, so the count must ride in the state to hold across them.
- A state that fails is refused with what failed: not one of mcpx's (malformed),
  tampered with (the signature), expired, or issued for another request (the binding).
  A confused client and a replay read differently in the log.
- Comparisons of signatures are constant-time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcpx.wire import InvalidParams

__all__ = ["IssuedState", "StateError", "StateSigner", "binding"]

_UNBOUND: Final = frozenset({"_meta", "inputResponses", "requestState"})


class StateError(InvalidParams):
    """A requestState mcpx will not resume with; ``reason`` says which check failed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"requestState refused: {message}", {"reason": reason})
        self.reason = reason


def binding(method: str, params: Mapping[str, Any]) -> str:
    """The method and a SHA-256 of the params that define the request (canonical JSON)."""
    bound = {k: v for k, v in params.items() if k not in _UNBOUND}
    canonical = json.dumps(bound, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{method}:{hashlib.sha256(canonical.encode()).hexdigest()}"


@dataclass(frozen=True)
class IssuedState:
    """What a verified state says."""

    call: str
    rounds: int
    expires: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSigner:
    """Issues and verifies the states of one daemon process."""

    def __init__(
        self, ttl: float, *, key: bytes | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._ttl = ttl
        self._clock = clock

    def issue(self, call: str, method: str, params: Mapping[str, Any], rounds: int) -> str:
        """A state for ``call`` (asked ``rounds`` times so far) on this request."""
        payload = {
            "c": call,
            "b": binding(method, params),
            "e": round(self._clock() + self._ttl, 3),
            "r": rounds,
        }
        raw = json.dumps(payload, separators=(",", ":")).encode()
        return f"{_b64(raw)}.{_b64(self._sign(raw))}"

    def verify(self, state: object, method: str, params: Mapping[str, Any]) -> IssuedState:
        """What ``state`` says, if mcpx issued it for this very request and it is live.

        Raises:
            StateError: malformed, tampered, expired, or issued for another request.
        """
        if not isinstance(state, str) or state.count(".") != 1:
            raise StateError("malformed", "not a requestState mcpx issued")
        body, signature = state.split(".")
        try:
            raw, mac = _unb64(body), _unb64(signature)
        except (ValueError, TypeError):
            raise StateError("malformed", "not a requestState mcpx issued") from None
        if not hmac.compare_digest(mac, self._sign(raw)):
            raise StateError(
                "tampered", "its signature does not match (altered, or from another daemon)"
            )
        try:
            payload = json.loads(raw)
            call, bound = str(payload["c"]), str(payload["b"])
            expires, rounds = float(payload["e"]), int(payload["r"])
        except (ValueError, KeyError, TypeError):
            raise StateError("malformed", "its payload is unreadable") from None
        if self._clock() > expires:
            raise StateError("expired", "it expired; send the request again without it")
        if not hmac.compare_digest(bound, binding(method, params)):
            raise StateError(
                "other-request", "it was issued for another request (method or params differ)"
            )
        return IssuedState(call, rounds, expires)

    def _sign(self, raw: bytes) -> bytes:
        return hmac.new(self._key, raw, hashlib.sha256).digest()
