"""How the CLI shows the daemon's answers: a table per view for people, JSON for scripts.

Invariants: ``--json`` (or stdout off a terminal, for the plain JSON views) prints the raw
response; rich is imported only when a table is shown, so the CLI starts fast. An error
reply ends the command with the status its HTTP status maps to (``_EXIT``).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, NoReturn

import click

from ._http import Reply

__all__ = ["fail_reply", "show_response"]

# 413: an argument too large; 424: an upstream needs an OAuth sign-in (login_needed).
_EXIT = {400: 2, 404: 4, 413: 2, 424: 9, 502: 5, 503: 5, 504: 5, 507: 7}


def fail_reply(response: Reply) -> NoReturn:
    """The daemon's error on stderr; the exit status follows the HTTP status (_EXIT)."""
    try:
        error = response.json()["error"]
        message = error["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    click.echo(f"mcpx: {message}", err=True)
    raise SystemExit(_EXIT.get(response.status_code, 1))


def _table(columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console  # only when a table is shown: keeps start-up fast
    from rich.table import Table

    table = Table(*columns, box=None, header_style="bold")
    for row in rows:
        table.add_row(*row)
    Console(soft_wrap=False).print(table)


def show_response(view: str, doc: Any, as_json: bool) -> None:
    """A response for people (the view's table) or as JSON (``--json``, or off a terminal)."""
    if as_json or (not sys.stdout.isatty() and view == "json"):
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    renderer = _VIEWS.get(view)
    if renderer is None:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        renderer(doc)


def _servers(doc: Any) -> None:
    rows = []
    for s in doc["servers"]:
        inst = s["instances"][0] if s["instances"] else {}
        where = s["url"] or " ".join(s["command"] or [])
        rows.append(
            [
                s["name"],
                s["transport"],
                inst.get("state") or (s.get("restarts") or {}).get("state", "idle"),
                str(inst.get("era") or (s["catalogue"] or {}).get("era") or "-"),
                str(inst.get("revision") or (s["catalogue"] or {}).get("revision") or "-"),
                str(inst.get("pid") or "-"),
                where if len(where) <= 48 else "…" + where[-47:],
            ]
        )
    _table(["SERVER", "TRANSPORT", "STATE", "ERA", "REVISION", "PID", "COMMAND / URL"], rows)
    for s in doc["servers"]:
        # What a server's mcpx.tools / mcpx.excludeTools hide, and why.
        filters = s.get("filters")
        if not filters:
            continue
        hidden = filters.get("hidden")
        shown = "not listed yet" if hidden is None else f"hide {len(hidden)}"
        if hidden:
            shown += f" ({', '.join(hidden)})"
        click.echo(f"{s['name']}: filters {shown}")
        for note in filters.get("notes") or []:
            click.echo(f"  {note}")
    for s in doc["servers"]:
        auth = s.get("auth")
        if auth:
            click.echo(f"{s['name']}: oauth {_auth_state(auth)}")


def _auth_state(auth: dict[str, Any]) -> str:
    """An oauth server's sign-in, as ``mcpx servers`` says it."""
    if auth.get("state") != "login needed":
        return "logged in"
    said = f"login needed ({auth.get('why')}): run {auth.get('command')}"
    return said + (f" or see mcpx elicit show {auth['question']}" if auth.get("question") else "")


def _tools(doc: Any) -> None:
    rows = [
        [t["server"], t["name"], (t.get("description") or "").split("\n")[0][:80]]
        for t in doc["tools"]
    ]
    _table(["SERVER", "TOOL", "DESCRIPTION"], rows)
    for server, error in (doc.get("errors") or {}).items():
        click.echo(f"mcpx: {server}: {error}", err=True)


def _prompts(doc: Any) -> None:
    rows = [[p["server"], p["name"], (p.get("description") or "")[:80]] for p in doc["prompts"]]
    _table(["SERVER", "PROMPT", "DESCRIPTION"], rows)


def _resources(doc: Any) -> None:
    rows = [
        [r["server"], r["uri"], r.get("name", ""), r.get("mimeType", "")] for r in doc["resources"]
    ]
    _table(["SERVER", "URI", "NAME", "MIME TYPE"], rows)


def _read(doc: Any) -> None:
    for content in doc.get("contents") or []:
        click.echo(content.get("text", f"<{len(content.get('blob', ''))} base64 bytes>"))


def _call(doc: Any) -> None:
    for block in doc.get("content") or []:
        if block.get("type") == "text":
            click.echo(block["text"])
        else:
            click.echo(json.dumps(block, ensure_ascii=False))
    if doc.get("isError"):
        raise SystemExit(1)


def _tasks(doc: Any) -> None:
    now = time.time()
    rows = [
        [
            t["id"],
            t["status"],
            t["server"] or "-",
            t["what"],
            _age(now - t["created"]),
            (t.get("statusMessage") or "")[:60],
        ]
        for t in doc["tasks"]
    ]
    _table(["ID", "STATUS", "SERVER", "WHAT", "AGE", "MESSAGE"], rows)


def _instance(doc: Any) -> None:
    """What ``mcpx server start|stop|restart`` did: each instance stopped, then the one
    started (its id, state, pid or URL, era and revision)."""
    name = doc["server"]
    for inst in doc.get("stopped") or []:
        where = f"pid {inst['pid']}" if inst.get("pid") else inst.get("url") or "-"
        click.echo(f"{name}: stopped instance {inst['id']} ({inst['scope']}, {where})")
    started = doc.get("instance")
    if started is None:
        if not doc.get("stopped"):
            click.echo(f"{name}: no instance was running")
        return
    where = f"pid {started['pid']}" if started.get("pid") else started.get("url") or "-"
    era = " ".join(str(started[k]) for k in ("era", "revision") if started.get(k))
    click.echo(
        f"{name}: instance {started['id']} {started['state']} ({started['scope']}, {where}, {era})"
    )


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(int(seconds), 0)}s"


_VIEWS = {
    "servers": _servers,
    "tools": _tools,
    "prompts": _prompts,
    "resources": _resources,
    "read": _read,
    "call": _call,
    "tasks": _tasks,
    "instance": _instance,
}
