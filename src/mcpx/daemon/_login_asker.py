"""The authorizer the daemon gives ``open_session``: a login an upstream needs mid-call.

The call's host is asked with a URL-mode ``elicitation/create`` (through the question
router, so it is attributed to the call as any question is) when it declared URL-mode
elicitation; the authorization URL's redirect comes back to the daemon's own
``/oauth/callback`` and the flow goes on within the call's budget. Every other caller
(``/v1``, the CLI, a host without URL elicitation) is told at once: ``LoginNeeded``,
naming ``mcpx auth login SERVER`` and the broker's question that holds the login: a
URL-mode elicitation whose authorization URL comes back to ``/oauth/callback`` too,
where the daemon finishes the login itself and the question is closed (``logged_in``).
One such question per (server, user) at a time.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any, Final

import anyio

from mcpx.client import QuestionOrigin
from mcpx.config import ServerConfig, StateDiskFull
from mcpx.oauth import LOGIN_TTL, LoginNeeded, Logins, OAuthError, SqliteStore
from mcpx.pool import OAuthWiring
from mcpx.questions import QuestionRouter

__all__ = ["LoginAsker", "oauth_wiring"]

log = logging.getLogger("mcpx.daemon")

_ELICIT: Final = "elicitation/create"
_REVISION: Final = "2025-11-25"  # the first with URL-mode elicitation
_PENDING: Final = "pending"


class LoginAsker:
    """The ``Authorizer`` of one instance (``server``, the pool's scope key ``user``)."""

    def __init__(
        self,
        server: ServerConfig,
        user: str,
        router: QuestionRouter,
        wiring: OAuthWiring,
        redirect_uri: str,
    ) -> None:
        self.config = server
        self.server = server.name
        self.user = user
        self.redirect_uri = redirect_uri
        self._router = router
        self._wiring = wiring

    @property
    def _logins(self) -> Logins:
        return self._wiring.logins

    async def authorize(self, authorization_url: str, redirect_uri: str) -> str:
        params = _asking(self.server, authorization_url)
        if redirect_uri != self.redirect_uri or not self._router.caller_can(
            self.server, self.user, _ELICIT, params
        ):
            raise await self._held("nobody has logged in (or the login was revoked)")
        state = self._logins.expect(authorization_url, self.server, self.user)
        log.info("%s: asking the calling host to sign in (URL elicitation)", self.server)
        origin = QuestionOrigin(self.server, _REVISION, scope=self.user)
        answer = await self._router.answer(_ELICIT, params, origin)
        if answer.get("action") != "accept":
            self._logins.forget(state)
            raise self._needed(f"the sign-in was {answer.get('action') or 'not accepted'}")
        # The call's own budget bounds this too (its cancel scope is around the flow).
        with anyio.move_on_after(LOGIN_TTL):
            redirected = await self._logins.wait(state)
            # The host signed in: a login the broker held for this server is done too.
            held = self._wiring.questions.pop((self.server, self.user), None)
            if held is not None:
                self._router.done_with(held)
            return redirected
        self._logins.forget(state)
        raise self._needed("the sign-in did not come back in time")

    async def _held(self, why: str) -> LoginNeeded:
        """Nobody present can sign in: the broker holds the login (one question per
        server and user while it is open)."""
        key = (self.server, self.user)
        qid = self._wiring.questions.get(key)
        open_ = self._router.held(qid) if qid else None
        if open_ is None or open_.state != _PENDING:
            try:
                # A login of the daemon's own (its PKCE verifier kept by Logins): whoever
                # follows the URL later, the daemon finishes it at its callback.
                pending = await self._logins.begin(self.config, self.user, self.redirect_uri)
                open_ = self._router.hold(
                    self.server,
                    _asking(self.server, pending.authorization_url),
                    identity=self.user or None,
                    ttl=LOGIN_TTL,
                )
            except (OAuthError, StateDiskFull) as exc:
                log.info("%s: the broker cannot hold a sign-in (%s)", self.server, exc)
                return self._needed(why)
            self._wiring.questions[key] = open_.id
        return self._needed(why, open_.id)

    def _needed(self, why: str, question: str | None = None) -> LoginNeeded:
        self._wiring.needs[(self.server, self.user)] = why
        return LoginNeeded(self.server, why, question)


def _asking(server: str, url: str) -> dict[str, Any]:
    return {
        "mode": "url",
        "message": f"sign in to {server} to go on with this call",
        "url": url,
        "elicitationId": str(uuid.uuid4()),
    }


def oauth_wiring(path: Path, router: QuestionRouter, callback: str) -> OAuthWiring:
    """OAuth upstreams' tokens in ``path`` (``<state>/oauth.db``), and the daemon's
    authorizers, whose logins come back to ``callback`` (the TCP port's /oauth/callback)."""
    store = SqliteStore(path)
    wiring = OAuthWiring(store, Logins(store))

    def make(server: ServerConfig, user: str) -> LoginAsker:
        return LoginAsker(server, user, router, wiring, callback)

    wiring.authorizer = make
    return wiring
