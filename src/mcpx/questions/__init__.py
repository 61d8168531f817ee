"""Questions an upstream asks mid-call (elicitation, sampling, roots), answered by the
host that can, natively in its era, with a durable broker behind it.

- ``_state``: the signed, request-bound ``requestState`` of 2026-07-28 hosts.
- ``_broker``: the durable store of questions nobody present can answer.
- ``_calls_in_flight``: the calls running for hosts, credited with what their upstream says
  (progress, log lines) and with the questions it asks.
- ``_router``: the one handler: the calling host first, the broker after.
- ``_throttle``: how many questions one upstream may have open, and how fast it asks.
"""

from ._broker import ELICIT_TTL, Broker, Question, QuestionClosed
from ._calls_in_flight import LEVELS, CallsInFlight, HostAsker, Notify, more_verbose
from ._router import QuestionRouter, attributed
from ._state import IssuedState, StateError, StateSigner, binding
from ._throttle import THROTTLED, Throttle

__all__ = [
    "ELICIT_TTL",
    "LEVELS",
    "THROTTLED",
    "Broker",
    "CallsInFlight",
    "HostAsker",
    "IssuedState",
    "Notify",
    "Question",
    "QuestionClosed",
    "QuestionRouter",
    "StateError",
    "StateSigner",
    "Throttle",
    "attributed",
    "binding",
    "more_verbose",
]
