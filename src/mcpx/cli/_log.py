"""``mcpx log`` and ``mcpx stats``: the call log, read through /v1/log and /v1/stats.

Their operations are in the table (``log``, ``stats``); the commands are written out
here for what a generated one cannot do: ``--follow`` polls /v1/log with its ``after``
cursor (once a second, until Ctrl-C), and the tables.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

import click

from mcpx.ops import by_name

from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._views import fail_reply

__all__ = ["log_command", "stats_command"]

_POLL: Final = 1.0


def _get(client: DaemonClient, op: str, params: dict[str, Any]) -> dict[str, Any]:
    response = client.call("GET", by_name(op).path, params={k: v for k, v in params.items() if v})
    if response.status_code >= 400:
        fail_reply(response)
    doc: dict[str, Any] = response.json()
    return doc


def _line(call: dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(call["ts"]))
    what = call["tool"] or call["method"]
    text = (
        f"{when} {call['door']:<11} {call['server']}/{what} {call['outcome']} "
        f"{call['ms']:.1f}ms (queue {call['queue_ms']:.1f})"
    )
    return f"{text}: {call['error']}" if call.get("error") else text


def _show(calls: list[dict[str, Any]], as_json: bool) -> None:
    for call in calls:
        click.echo(json.dumps(call, ensure_ascii=False) if as_json else _line(call))


def _table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console  # only when a table is shown: keeps start-up fast
    from rich.table import Table

    shown = Table(*columns, box=None, header_style="bold")
    for row in rows:
        shown.add_row(*row)
    Console(soft_wrap=False).print(shown)


@click.command("log", help=by_name("log").doc)
@click.option("--server", default=None, help="Only this server.")
@click.option("--tool", default=None, help="Only this tool (or prompt, or URI).")
@click.option("--errors", is_flag=True, help="Only calls that did not end ok.")
@click.option("--since", default=None, help="An age (30m, 1h, 2d) or an ISO time.")
@click.option("--limit", type=int, default=None, help="At most this many calls (default 100).")
@click.option("--follow", is_flag=True, help="Keep printing calls as they are recorded.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per call.")
@settings_options
def log_command(
    server: str | None,
    tool: str | None,
    errors: bool,
    since: str | None,
    limit: int | None,
    follow: bool,
    as_json: bool,
    **params: Any,
) -> None:
    client = DaemonClient(load_settings(params))
    query: dict[str, Any] = {"server": server, "tool": tool, "since": since, "limit": limit}
    if errors:
        query["errors"] = "true"
    doc = _get(client, "log", query)
    _show(list(reversed(doc["calls"])), as_json)  # oldest first, as a log reads
    after = doc["last"] or 0
    try:
        while follow:
            time.sleep(_POLL)
            doc = _get(client, "log", {**query, "since": None, "after": str(after)})
            _show(doc["calls"], as_json)
            after = doc["last"] or after
    except KeyboardInterrupt:  # Ctrl-C is how --follow ends
        return


@click.command("stats", help=by_name("stats").doc)
@click.option("--since", default=None, help="An age (30m, 1h, 2d) or an ISO time.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")
@settings_options
def stats_command(since: str | None, as_json: bool, **params: Any) -> None:
    doc = _get(DaemonClient(load_settings(params)), "stats", {"since": since})
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    rows = [
        [t["server"], t["tool"], str(t["calls"]), str(t["errors"])]
        + [f"{t[p]:.1f}" for p in ("p50", "p95", "p99")]
        for t in doc["tools"]
    ]
    _table(["SERVER", "TOOL", "CALLS", "ERRORS", "P50 MS", "P95 MS", "P99 MS"], rows)
    for server, counts in sorted(doc["servers"].items()):
        click.echo(f"{server}: {counts['starts']} starts, {counts['crashes']} crashes")
