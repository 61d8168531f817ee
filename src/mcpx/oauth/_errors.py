"""What can go wrong in an OAuth flow. No message holds a token, secret, code or verifier."""

from __future__ import annotations

__all__ = ["LoginNeeded", "NotPending", "OAuthError", "Unavailable"]


class OAuthError(Exception):
    """An OAuth flow failed: discovery, a check the spec requires, or a token request."""


class Unavailable(OAuthError):
    """An endpoint failed rather than refused (HTTP 5xx or 429, or no answer): trying
    again later may work."""


class NotPending(OAuthError):
    """A redirect came back for no login in progress (an unknown, used or expired state)."""


class LoginNeeded(OAuthError):
    """No usable token, and none can be had without a person signing in."""

    def __init__(self, server: str, reason: str, question: str | None = None) -> None:
        self.server = server
        self.reason = reason
        # The broker's question that holds the login (its URL), when one does.
        self.question = question
        also = f", or open the link `mcpx elicit show {question}` gives" if question else ""
        super().__init__(f"{server}: {reason}; run `mcpx auth login {server}` to sign in{also}")
