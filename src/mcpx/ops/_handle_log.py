"""The call log's operations: ``log`` (recorded calls, filtered) and ``stats`` (per server
and tool: calls, errors, exact latency percentiles; instance starts and crashes).

Percentiles are nearest-rank over every row in the window, computed here: exact, and
cheap next to reading the rows.
"""

from __future__ import annotations

import calendar
import math
import re
import time
from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import anyio

from ._call_log import CallLog
from ._errors import OpError

if TYPE_CHECKING:
    from ._context import OpContext

__all__ = ["log", "parse_since", "stats"]

_AGO: Final = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(s|m|h|d|w)$")
_DATE: Final = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DEFAULT_LIMIT: Final = 100
_FRESH_WAIT: Final = 1.0  # how long a read waits for calls finished before it to be written


def parse_since(text: str, now: float | None = None) -> float:
    """``since`` as a unix time: an age (``90s``, ``30m``, ``1h``, ``2d``, ``1w``) or an
    ISO 8601 time (without a zone: local time).

    Raises:
        OpError: 400, when it is neither.
    """
    now = time.time() if now is None else now
    match = _AGO.match(text.strip())
    if match:
        return now - float(match.group(1)) * _UNIT[match.group(2)]
    try:
        return datetime.fromisoformat(_within_month(text.strip())).timestamp()
    except ValueError:
        raise OpError(
            400,
            "invalid_input",
            f"since {text!r} is neither an age (30m, 1h, 2d) nor an ISO time (2026-01-31T12:00)",
            {"field": "since"},
        ) from None


def _within_month(text: str) -> str:
    """``text`` with a day past its month's end (2026-02-31) moved back to that end: a
    window "since the 31st" of a shorter month means since its last day."""
    match = _DATE.match(text)
    if match is None:
        return text
    year, month, day = (int(g) for g in match.groups())
    last = calendar.monthrange(year, month)[1] if 1 <= month <= 12 and year >= 1 else day
    return text if day <= last else f"{year:04d}-{month:02d}-{last:02d}{text[10:]}"


def _call_log(ctx: OpContext) -> CallLog:
    recorder = ctx.recorder
    if not isinstance(recorder, CallLog):
        raise OpError(503, "no_call_log", "this daemon keeps no call log")
    return recorder


async def _fresh(calls: CallLog) -> None:
    with anyio.move_on_after(_FRESH_WAIT):
        await calls.wait_written()


async def log(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    calls = _call_log(ctx)
    await _fresh(calls)
    where, params = ["1"], []
    for column in ("server", "tool"):
        if args.get(column):
            where.append(f"{column} = ?")
            params.append(args[column])
    if args.get("errors"):
        where.append("outcome != 'ok'")
    if args.get("since"):
        where.append("ts >= ?")
        params.append(parse_since(str(args["since"])))
    limit = int(args.get("limit") or _DEFAULT_LIMIT)
    after = args.get("after")
    if after is not None:
        # A cursor (mcpx log --follow): what came after it, oldest first.
        where.append("id > ?")
        params.append(int(after))
        tail = "ORDER BY id ASC LIMIT ?"
    else:
        tail = "ORDER BY id DESC LIMIT ?"
    rows = await calls.select(" AND ".join(where), [*params, limit], tail)
    last = max((r["id"] for r in rows), default=after)
    return {"calls": rows, "last": last, "dropped": calls.dropped}


def _percentile(ordered: list[float], p: float) -> float:
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


async def stats(ctx: OpContext, args: dict[str, Any]) -> dict[str, Any]:
    calls = _call_log(ctx)
    await _fresh(calls)
    since = parse_since(str(args["since"])) if args.get("since") else 0.0
    rows = await calls.select("ts >= ?", [since], "")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["server"], row["tool"] or row["method"])].append(row)
    tools = []
    for (server, tool), mine in sorted(groups.items()):
        ordered = sorted(r["ms"] for r in mine)
        tools.append(
            {
                "server": server,
                "tool": tool,
                "calls": len(mine),
                "errors": sum(1 for r in mine if r["outcome"] != "ok"),
                "p50": _percentile(ordered, 50),
                "p95": _percentile(ordered, 95),
                "p99": _percentile(ordered, 99),
            }
        )
    servers: dict[str, dict[str, int]] = {}
    for at, server, kind in list(ctx.pool.lifecycle):
        if at >= since:
            counts = servers.setdefault(server, {"starts": 0, "crashes": 0})
            counts["starts" if kind == "start" else "crashes"] += 1
    return {"since": since or None, "tools": tools, "servers": servers}
