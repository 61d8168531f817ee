"""Every timeout mcpx applies, and which one wins: the one place for their precedence.

    setting               bounds                                   a caller may
    --------------------  ---------------------------------------  ---------------------
    pool.startTimeout     starting an instance: spawn + era probe  -
    upstream.probeTimeout waiting for server/discover before       -
                          initialize is sent beside it (stdio)
    pool.callTimeout      one upstream call (each input_required   lower it for one call
                          round is one call)                       (clamped, never raised)
    proto.askTimeout      how long one client request may be held  -
                          waiting for a question's answer
    exec.timeout          a whole script run (its calls are each   -
                          also bounded by pool.callTimeout)

Whichever bound is tighter for a given call is the one that fires. A per-call
request is clamped to the configured ``pool.callTimeout``: a call may lower the
bound but never raise it.
"""

from __future__ import annotations

from mcpx.config import Settings

__all__ = ["call_budget", "start_budget"]


def call_budget(settings: Settings, requested: float | None = None) -> float:
    """The budget of one upstream call: the configured value, or a lower request."""
    configured = float(settings["pool.callTimeout"])
    if requested is None or requested <= 0:
        return configured
    return min(float(requested), configured)


def start_budget(settings: Settings) -> float:
    return float(settings["pool.startTimeout"])
