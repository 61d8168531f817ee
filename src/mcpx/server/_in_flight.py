"""A host session's requests in flight, by id, so that its ``notifications/cancelled``
can stop one: the handler is cancelled (which cancels the upstream call in turn) and no
answer is sent."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import anyio

from mcpx import wire

__all__ = ["InFlight"]

log = logging.getLogger("mcpx.server")


class InFlight:
    def __init__(self) -> None:
        self._scopes: dict[wire.RequestId, anyio.CancelScope] = {}

    def register(self, request_id: wire.RequestId) -> anyio.CancelScope:
        """A scope for ``request_id``, registered before its handler runs, so a cancel
        that arrives first still finds it."""
        scope = anyio.CancelScope()
        self._scopes[request_id] = scope
        return scope

    @contextmanager
    def serving(
        self, request_id: wire.RequestId | None, scope: anyio.CancelScope | None = None
    ) -> Iterator[anyio.CancelScope]:
        """Run the handler inside; ``scope.cancelled_caught`` afterwards: withdrawn."""
        if scope is None:
            scope = anyio.CancelScope() if request_id is None else self.register(request_id)
        try:
            with scope:
                yield scope
        finally:
            # An id may be reused once answered: only this request's entry goes.
            if request_id is not None and self._scopes.get(request_id) is scope:
                del self._scopes[request_id]

    def cancel(self, params: object) -> None:
        """``notifications/cancelled``: unknown or finished ids, and malformed params,
        are ignored (S-CANC-2); the reason given is logged (S-CANC-4)."""
        if not isinstance(params, Mapping):
            return
        request_id = params.get("requestId")
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return
        scope = self._scopes.get(request_id)
        if scope is not None:
            log.info("request %r cancelled by the host: %s", request_id, params.get("reason"))
            scope.cancel()
