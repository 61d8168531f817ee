"""``mcpx auth``: signing in to OAuth-protected upstream servers, through the daemon.

The daemon holds the flow (discovery, client identity, PKCE, the pending login); this is
its face: ``login`` listens on a loopback port (127.0.0.1, random, path ``/callback``),
asks the daemon for the authorization URL for that redirect, opens it with Python's
``webbrowser`` (``BROWSER`` is honoured), waits for the redirect with the right
``state`` (bounded by ``--timeout``) and hands the redirected URL to the daemon.
``--no-browser`` prints the URL and reads the redirected URL pasted on stdin.
``status`` and ``logout`` ask the daemon. No token ever reaches this process.
"""

from __future__ import annotations

import html
import json
import sys
import threading
import time
import webbrowser
from collections.abc import Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import click

from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._http import Reply
from ._views import fail_reply

__all__ = ["auth_group"]

_PAGE = "<!doctype html><meta charset=utf-8><title>mcpx</title><p>{}</p>"


@click.group("auth")
def auth_group() -> None:
    """Sign in to OAuth-protected upstream servers (tokens are kept by the daemon)."""


def _asked(client: DaemonClient, method: str, path: str, **kw: Any) -> Reply:
    response = client.call(method, path, **kw)
    if response.status_code >= 400:
        fail_reply(response)
    return response


def _state(url: str) -> str:
    return (parse_qs(urlsplit(url).query).get("state") or [""])[0]


class _Listener:
    """A one-shot loopback listener for the authorization redirect."""

    def __init__(self) -> None:
        self.expected = ""
        self.redirected: str | None = None
        self.done = threading.Event()
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = f"http://127.0.0.1:{listener.port}{self.path}"
                ok = urlsplit(self.path).path == "/callback" and bool(listener.expected)
                ok = ok and _state(url) == listener.expected and not listener.done.is_set()
                text = (
                    "mcpx got the sign-in; you can close this tab."
                    if ok
                    else "This is not the sign-in mcpx is waiting for."
                )
                body = _PAGE.format(html.escape(text)).encode()
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if ok:
                    listener.redirected = url
                    listener.done.set()

            def log_message(self, format: str, *args: Any) -> None:
                return None  # the query holds the code: never printed

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    def __enter__(self) -> _Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@auth_group.command("login")
@click.argument("server")
@click.option("--no-browser", is_flag=True, help="Print the URL; paste the redirected URL back.")
@click.option(
    "--timeout",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the browser to come back.",
)
@settings_options
def login(server: str, no_browser: bool, timeout: float, **params: object) -> None:
    """Sign in to SERVER in a browser; its tokens are kept by the daemon."""
    client = DaemonClient(load_settings(params))
    with _Listener() as listener:
        begun = _asked(
            client,
            "POST",
            f"/v1/auth/{quote(server, safe='')}/login",
            json_body={"redirectUri": listener.redirect_uri},
        ).json()
        url = str(begun["authorizationUrl"])
        listener.expected = _state(url)
        if no_browser:
            redirected = _pasted(url)
        else:
            opened = False
            try:
                opened = webbrowser.open(url)
            except webbrowser.Error:
                opened = False
            if not opened:
                click.echo("Open this URL in a browser to sign in:", err=True)
                click.echo(url)
            else:
                click.echo(f"Opened the sign-in page for {server} in your browser.", err=True)
            if not listener.done.wait(timeout):
                click.echo(
                    f"mcpx: the browser did not come back within {timeout:g}s; run "
                    f"`mcpx auth login {server}` again, or add --no-browser and paste "
                    "the URL you were sent to",
                    err=True,
                )
                raise SystemExit(1)
            assert listener.redirected is not None
            redirected = listener.redirected
    done = _asked(client, "POST", "/v1/auth/callback", json_body={"url": redirected}).json()
    click.echo(f"logged in to {done['server']}")


def _pasted(url: str) -> str:
    click.echo("Open this URL in a browser to sign in:", err=True)
    click.echo(url)
    click.echo("Then paste the URL the browser was sent to (it may fail to load):", err=True)
    line = sys.stdin.readline().strip()
    if not line:
        click.echo("mcpx: no URL was pasted; nothing was signed in", err=True)
        raise SystemExit(2)
    return line


def _when(epoch: object) -> str:
    if not isinstance(epoch, int | float):
        return "-"
    left = epoch - time.time()
    shown = datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")
    return f"{shown} (expired)" if left <= 0 else shown


def _rows(servers: list[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            str(s["server"]),
            "yes" if s["loggedIn"] else f"no: {s.get('why') or 'not logged in'}",
            str(s.get("issuer") or "-"),
            _when(s.get("expiresAt")),
            " ".join(s.get("scopes") or []) or "-",
        ]
        for s in servers
    ]


@auth_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")
@settings_options
def status(as_json: bool, **params: object) -> None:
    """Per OAuth server: logged in, issuer, expiry, scopes (never a token)."""
    doc = _asked(DaemonClient(load_settings(params)), "GET", "/v1/auth").json()
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    servers = doc.get("servers") or []
    if not servers:
        click.echo("no OAuth servers (none has an oauth auth block or asked for a login)")
        return
    rows = [["SERVER", "LOGGED IN", "ISSUER", "EXPIRES", "SCOPES"], *_rows(servers)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


@auth_group.command("logout")
@click.argument("server")
@settings_options
def logout(server: str, **params: object) -> None:
    """Log out of SERVER: its tokens revoked where it offers revocation, then dropped."""
    path = f"/v1/auth/{quote(server, safe='')}"
    doc = _asked(DaemonClient(load_settings(params)), "DELETE", path).json()
    said = "logged out of" if doc.get("loggedOut") else "was not logged in to"
    click.echo(f"{said} {doc['server']}")
