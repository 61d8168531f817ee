"""A host session's requests in flight, by id, so that its ``notifications/cancelled``
can stop one: the handler is cancelled (which cancels the upstream call in turn) and no
answer is sent."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import TracebackType

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

    def forget(self, request_id: wire.RequestId, scope: anyio.CancelScope) -> None:
        """``request_id``, registered as ``scope``, is answered (without ``serving``)."""
        if self._scopes.get(request_id) is scope:
            del self._scopes[request_id]

    def serving(
        self, request_id: wire.RequestId | None, scope: anyio.CancelScope | None = None
    ) -> _Serving:
        """Run the handler inside (a context manager giving the scope);
        ``scope.cancel_called`` afterwards: withdrawn (whether or not the handler
        was still running to notice)."""
        if scope is None:
            scope = anyio.CancelScope() if request_id is None else self.register(request_id)
        return _Serving(self._scopes, request_id, scope)

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


class _Serving:
    """A request's scope entered (a class, not a generator: every request enters one).
    On the way out an id may be reused once answered: only this request's entry goes."""

    __slots__ = ("_id", "_scope", "_scopes")

    def __init__(
        self,
        scopes: dict[wire.RequestId, anyio.CancelScope],
        request_id: wire.RequestId | None,
        scope: anyio.CancelScope,
    ) -> None:
        self._scopes, self._id, self._scope = scopes, request_id, scope

    def __enter__(self) -> anyio.CancelScope:
        return self._scope.__enter__()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        try:
            return self._scope.__exit__(kind, exc, tb)
        finally:
            if self._id is not None and self._scopes.get(self._id) is self._scope:
                del self._scopes[self._id]
