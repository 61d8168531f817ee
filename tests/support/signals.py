"""Child processes that a test stops with Ctrl-C (SIGINT).

A shell that starts a job in the background without job control has it ignore SIGINT,
and an ignored signal stays ignored across exec: Python then installs no
KeyboardInterrupt handler, and a test's Ctrl-C does nothing. Children started with
``preexec_fn=interruptible`` take SIGINT as a terminal would deliver it.
"""

from __future__ import annotations

import signal

__all__ = ["interruptible"]


def interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
