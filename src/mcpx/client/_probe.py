"""Which era an upstream speaks: probe modern first, as 2026-07-28 prescribes.

``upstream.protocol`` (or a server's own ``protocol`` key) sets the order:

    prefer-discover   (default) cached era first, else server/discover, else initialize
    prefer-initialize cached era first, else initialize, else server/discover
    force-discover    modern only; the cache is neither read nor written
    force-initialize  legacy only; likewise

stdio: ``server/discover`` with the full ``_meta``. A DiscoverResult or a
recognised modern error (-32020/-32021/-32022) means modern; any other error,
or a success that is not a DiscoverResult, means legacy. No answer within
``upstream.probeTimeout``: ``initialize`` goes out alongside the pending
discover and whichever settles first decides (a slow modern server, one npx
is still fetching, must not be classed legacy). The process exiting during
the probe means legacy: ``ExitedDuringProbe`` tells the opener to start it
again and connect legacy-only.

HTTP: a modern POST; a 4xx with a recognised modern error is modern, any other
4xx falls back to ``initialize``, and a 4xx to that to HTTP+SSE
(``NeedsLegacySse``). Connection failures and 5xx are errors: nothing is
cached from them.

The probe decides what to send and when; ``Handshake`` (``_handshake``) spells each
request and adopts its answer, driven here only through its public methods.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

import anyio

from mcpx import spec, wire
from mcpx.transport import HttpStatusError

from ._era_cache import Remembered
from ._errors import HandshakeFailed, UpstreamBroken, UpstreamError
from ._handshake import MODERN_ERRORS, Handshake, Negotiated

__all__ = ["ExitedDuringProbe", "NeedsLegacySse", "Preference", "negotiate"]

log = logging.getLogger("mcpx.client")

OnEvent = Callable[[str, dict[str, Any]], None]


class Preference(StrEnum):
    PREFER_DISCOVER = "prefer-discover"
    PREFER_INITIALIZE = "prefer-initialize"
    FORCE_DISCOVER = "force-discover"
    FORCE_INITIALIZE = "force-initialize"

    @property
    def forced(self) -> bool:
        return self in (Preference.FORCE_DISCOVER, Preference.FORCE_INITIALIZE)


class ExitedDuringProbe(UpstreamError):
    """The stdio server exited while being probed: restart it, legacy only."""


class NeedsLegacySse(UpstreamError):
    """Streamable HTTP refused both eras with a 4xx: try HTTP+SSE."""


def _is_modern_error(exc: BaseException) -> bool:
    return isinstance(exc, wire.McpError) and exc.code in MODERN_ERRORS


def _http_status(exc: BaseException) -> int | None:
    cause = exc.__cause__
    return cause.status if isinstance(cause, HttpStatusError) else None


async def negotiate(
    handshake: Handshake,
    *,
    preference: Preference,
    cached: Remembered | None,
    probe_timeout: float,
    start_timeout: float,
    on_event: OnEvent,
) -> Negotiated:
    """Settle the era and revision of the upstream ``handshake`` speaks to.

    Raises:
        ExitedDuringProbe, NeedsLegacySse: the opener must reconnect differently.
        HandshakeFailed, UpstreamError, McpError: the upstream cannot be used.
    """
    if preference is Preference.FORCE_INITIALIZE:
        return await handshake.initialize(timeout=start_timeout, source="forced")
    if preference is Preference.FORCE_DISCOVER:
        return await _modern_after_error(handshake, start_timeout, "forced")
    if cached is not None:
        found = await _try_cached(handshake, cached, start_timeout)
        if found is not None:
            return found
        on_event(
            "server.era.stale",
            {"server": handshake.name, "cached": cached.era, "revision": cached.revision},
        )
    if preference is Preference.PREFER_INITIALIZE:
        try:
            return await handshake.initialize(timeout=start_timeout)
        except wire.McpError:
            return await _modern_after_error(handshake, start_timeout, "probe")
    if handshake.http:
        return await _probe_http(handshake, start_timeout)
    return await _probe_stdio(handshake, probe_timeout, start_timeout)


async def _try_cached(
    handshake: Handshake, cached: Remembered, timeout: float
) -> Negotiated | None:
    """The cached era, or None when the server no longer speaks it (stale)."""
    try:
        if cached.era == "legacy":
            return await handshake.initialize(timeout=timeout, source="cache")
        return await handshake.discover(timeout=timeout, source="cache")
    except (wire.McpError, HandshakeFailed) as exc:
        log.info("%s: cached %s era is stale (%s)", handshake.name, cached.era, exc)
        return None


async def _modern_after_error(handshake: Handshake, timeout: float, source: str) -> Negotiated:
    """Discovery for a server known to be modern; a -32020/-32021 on discover
    still leaves it modern, at our newest revision, with unknown capabilities."""
    try:
        return await handshake.discover(timeout=timeout, source=source)
    except wire.McpError as exc:
        if exc.code not in MODERN_ERRORS:
            raise
        log.warning("%s: modern, but server/discover failed: %s", handshake.name, exc.message)
        return handshake.settle_discover({"supportedVersions": [spec.NEWEST]}, source)


async def _probe_http(handshake: Handshake, timeout: float) -> Negotiated:
    params, headers = handshake.discover_request()
    try:
        result = await handshake.conn.request(
            "server/discover", params, headers=headers, timeout=timeout
        )
    except wire.McpError as exc:
        if _is_modern_error(exc):
            return await _modern_after_error(handshake, timeout, "probe")
        return await _legacy_http(handshake, timeout)
    except UpstreamError as exc:
        status = _http_status(exc)
        if status is None or status >= 500:
            raise
        return await _legacy_http(handshake, timeout)
    if isinstance(result.get("supportedVersions"), list):
        return handshake.settle_discover(result, "probe")
    return await _legacy_http(handshake, timeout)


async def _legacy_http(handshake: Handshake, timeout: float) -> Negotiated:
    try:
        return await handshake.initialize(timeout=timeout)
    except wire.McpError as exc:
        raise NeedsLegacySse(f"{handshake.name} refused initialize: {exc.message}") from exc
    except UpstreamError as exc:
        status = _http_status(exc)
        if status is None or status >= 500:
            raise
        raise NeedsLegacySse(f"{handshake.name} answered initialize with HTTP {status}") from exc


Attempt = Callable[[], Awaitable[dict[str, Any]]]


class _Race:
    """server/discover and, once the probe timeout passes, initialize beside it."""

    def __init__(self, handshake: Handshake, tg: anyio.abc.TaskGroup, timeout: float) -> None:
        self.handshake = handshake
        self.tg = tg
        self.timeout = timeout
        self.send, self.receive = anyio.create_memory_object_stream[tuple[str, Any]](4)
        self.pending: set[str] = set()
        self.failed: dict[str, BaseException] = {}

    def start(self, kind: str) -> None:
        if kind in self.pending or kind in self.failed:
            return
        self.pending.add(kind)
        conn = self.handshake.conn
        if kind == "discover":
            params, _ = self.handshake.discover_request()
            call: Attempt = lambda: conn.request("server/discover", params, timeout=self.timeout)  # noqa: E731
        else:
            params = self.handshake.initialize_params()
            call = lambda: conn.request(  # noqa: E731
                "initialize", params, timeout=self.timeout, cancellable=False
            )
        self.tg.start_soon(self._attempt, kind, call)

    async def _attempt(self, kind: str, call: Attempt) -> None:
        try:
            outcome: Any = await call()
        except (wire.McpError, UpstreamError) as exc:
            outcome = exc
        await self.send.send((kind, outcome))

    async def judge(self, kind: str, result: Any) -> Negotiated | None:
        """The decision one outcome makes, or None to wait for the other."""
        self.pending.discard(kind)
        if isinstance(result, UpstreamBroken):
            raise ExitedDuringProbe(str(result)) from result
        if kind == "discover":
            if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
                return self.handshake.settle_discover(result, "probe")
            if _is_modern_error(result):
                return await _modern_after_error(self.handshake, self.timeout, "probe")
            if isinstance(result, UpstreamError):
                raise result
            # Any other error, or a success that is not a DiscoverResult: legacy.
            self.failed["discover"] = (
                result
                if isinstance(result, BaseException)
                else HandshakeFailed(
                    f"{self.handshake.name} answered server/discover with something else"
                )
            )
            if "initialize" in self.failed:
                raise self.failed["initialize"]
            self.start("initialize")
            return None
        if isinstance(result, dict):
            return await self.handshake.settle_initialize(result, "probe")
        self.failed["initialize"] = result
        if "discover" in self.pending:
            return None  # discover may still settle the era
        raise result


async def _close_later(race: _Race) -> None:
    # The race's streams close with its task group, whichever way it ends.
    try:
        await anyio.sleep_forever()
    finally:
        race.send.close()
        race.receive.close()


async def _probe_stdio(handshake: Handshake, probe_timeout: float, timeout: float) -> Negotiated:
    decided: Negotiated | BaseException | None = None
    async with anyio.create_task_group() as tg:
        race = _Race(handshake, tg, timeout)
        tg.start_soon(_close_later, race)
        race.start("discover")
        outcome: tuple[str, Any] | None = None
        with anyio.move_on_after(probe_timeout):
            outcome = await race.receive.receive()
        if outcome is None:
            log.info("%s: no answer to server/discover yet; sending initialize too", handshake.name)
            race.start("initialize")
        while decided is None:
            kind, result = outcome if outcome is not None else await race.receive.receive()
            outcome = None
            try:
                decided = await race.judge(kind, result)
            except (wire.McpError, UpstreamError) as exc:
                decided = exc  # raised outside the task group, not inside a group
        tg.cancel_scope.cancel()
    if isinstance(decided, Negotiated):
        return decided
    raise decided if decided is not None else HandshakeFailed(f"{handshake.name}: probe undecided")
