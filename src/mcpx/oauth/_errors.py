"""What can go wrong in an OAuth flow. No message holds a token, secret, code or verifier."""

from __future__ import annotations

__all__ = ["LoginNeeded", "OAuthError"]


class OAuthError(Exception):
    """An OAuth flow failed: discovery, a check the spec requires, or a token request."""


class LoginNeeded(OAuthError):
    """No usable token, and none can be had without a person signing in."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"{server}: {reason}; run `mcpx auth login {server}` to sign in")
