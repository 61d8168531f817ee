"""Questions an upstream asks mid-call (elicitation, sampling, roots), answered by the
host that can, natively in its era, with a durable broker behind it.

- ``_state``: the signed, request-bound ``requestState`` of 2026-07-28 hosts.
- ``_broker``: the durable store of questions nobody present can answer.
- ``_native``: the one handler: the calling host first, the broker after.
- ``_throttle``: how many questions one upstream may have open, and how fast it asks.
"""

from ._broker import ELICIT_TTL, Broker, Question, QuestionClosed
from ._native import NativeFirst, attributed
from ._state import IssuedState, StateError, StateSigner, binding
from ._throttle import THROTTLED, Throttle

__all__ = [
    "ELICIT_TTL",
    "THROTTLED",
    "Broker",
    "IssuedState",
    "NativeFirst",
    "Question",
    "QuestionClosed",
    "StateError",
    "StateSigner",
    "Throttle",
    "attributed",
    "binding",
]
