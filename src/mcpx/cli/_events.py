"""``mcpx events``: the daemon's event stream, followed live.

Invariants:

- One line per event as it arrives (flushed): local time, kind, server and a short
  rendering of its data; ``--json`` prints each event's JSON as the daemon sent it.
- Ctrl-C ends it with status 0, as does the daemon ending the stream (said on
  stderr); a closed stdout (``| head``) ends it quietly; a daemon that cannot be
  reached or vanishes mid-stream is an error (status 1).
- Only the standard library and click: the CLI starts fast.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import click

from ._daemon import DaemonClient
from ._http import Reply

__all__ = ["data_lines", "follow", "render", "stream_ends"]

_WIDTH = 160


def follow(
    client: DaemonClient,
    path: str,
    params: dict[str, Any],
    *,
    as_json: bool,
    fail: Callable[[Reply], None],
) -> None:
    """Print the events of ``path`` until Ctrl-C or the daemon ends the stream."""
    with stream_ends():
        client.ensure()
        with client.http().stream("GET", path, params=params) as response:
            if response.status >= 400:
                fail(Reply(response.status, response.read().decode("utf-8", "replace")))
            for data in data_lines(response):
                click.echo(data if as_json else render(json.loads(data)))
        click.echo("mcpx: the daemon ended the event stream", err=True)


@contextmanager
def stream_ends(interrupted: Callable[[], None] = lambda: None) -> Iterator[None]:
    """How a command following the daemon's events ends: Ctrl-C (``interrupted`` is
    told first) and a closed stdout with status 0, a lost daemon with an error."""
    try:
        yield
    except (KeyboardInterrupt, click.Abort):
        interrupted()
        raise SystemExit(0) from None
    except BrokenPipeError:
        # Nothing more can be printed; stop Python complaining when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
    except (OSError, http.client.HTTPException) as exc:
        # Not a graceful end: the daemon could not be reached, or went away mid-stream.
        raise click.ClickException(f"lost the daemon's event stream: {exc!r}") from exc


def data_lines(stream: IO[bytes]) -> Iterator[str]:
    """Each event's data (mcpx sends one data line per event); comments skipped."""
    data: list[str] = []
    for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def render(event: dict[str, Any]) -> str:
    """One line for people: time, kind, server, what happened."""
    ts = float(event.get("ts") or 0)
    clock = time.strftime("%H:%M:%S", time.localtime(ts)) + f".{int(ts * 1000) % 1000:03d}"
    what = " ".join(_short(event).split())  # one line, whatever the data held
    line = f"{clock}  {event.get('kind', '?'):<16} {event.get('server') or '-':<12} {what}"
    return line if len(line) <= _WIDTH else line[: _WIDTH - 1] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _short(event: dict[str, Any]) -> str:
    kind, data = event.get("kind"), event.get("data") or {}
    if kind == "gap":
        return f"missed events {data.get('from')}..{data.get('to')} ({data.get('reason')})"
    if kind in ("server.log", "message"):
        level = f"[{data['level']}] " if data.get("level") else ""
        return level + _text(data.get("message", data.get("data", "")))
    if kind == "progress":
        total = f"/{data['total']}" if "total" in data else ""
        return f"{data.get('progress')}{total} {data.get('message', '')}".rstrip()
    if kind == "list.changed":
        return f"{data.get('kind')} list changed"
    if kind == "resource.updated":
        return str(event.get("uri") or data.get("uri"))
    if kind == "call.finished":
        outcome = f"error: {data['error']}" if "error" in data else "ok"
        if data.get("isError"):
            outcome = "isError"
        return f"{data.get('tool')} {data.get('ms')} ms {outcome}"
    return json.dumps(data, ensure_ascii=False)
