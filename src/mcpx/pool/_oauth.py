"""What the pool hands ``open_session`` for OAuth upstreams: the token store, the logins
in progress, and an authorizer per instance (the daemon's: it reaches the calling host)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mcpx.config import ServerConfig
from mcpx.oauth import Authorizer, Logins, TokenStore

__all__ = ["AuthorizerFor", "OAuthWiring"]

# The authorizer for one instance: its server and the pool's scope key (the user).
AuthorizerFor = Callable[[ServerConfig, str], Authorizer | None]


@dataclass
class OAuthWiring:
    store: TokenStore
    logins: Logins
    authorizer: AuthorizerFor = lambda server, user: None
    # (server, user) -> why a login is needed, as the last flow found (cleared by a login).
    needs: dict[tuple[str, str], str] = field(default_factory=dict)
    # (server, user) -> the broker's question holding a login nobody present could do
    # (its URL comes back to the daemon's /oauth/callback); closed once logged in.
    questions: dict[tuple[str, str], str] = field(default_factory=dict)
