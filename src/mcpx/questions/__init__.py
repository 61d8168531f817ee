"""Questions an upstream asks mid-call (elicitation, sampling, roots), answered by the
host that can, natively in its era, with a durable broker behind it.

- ``_state``: the signed, request-bound ``requestState`` of 2026-07-28 hosts.
"""

from ._state import IssuedState, StateError, StateSigner, binding

__all__ = ["IssuedState", "StateError", "StateSigner", "binding"]
