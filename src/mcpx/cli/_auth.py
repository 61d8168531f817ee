"""``mcpx auth``: signing in to OAuth-protected upstream servers, through the daemon; and,
with ``--daemon``, to the daemon itself at an http(s) endpoint that runs ``daemon.auth=oauth``.

For an upstream the daemon holds the flow (discovery, client identity, PKCE, the pending
login); this is its face. For the daemon itself this CLI is the OAuth client
(``_daemon_login``) and keeps the sign-in (``_daemon_logins``). Either way ``login`` listens
on a loopback port (127.0.0.1, random, path ``/callback``), opens the authorization URL
with Python's ``webbrowser`` (``BROWSER`` is honoured), waits for the redirect with the
right ``state`` (bounded by ``--timeout``) and finishes with the redirected URL.
``--no-browser`` prints the URL and reads the redirected URL pasted on stdin.

``--daemon`` alone means the configured ``daemon.endpoint``; ``--daemon URL`` names one (on
these commands the setting's own flag is ``--daemon-endpoint``). An upstream's tokens never
reach this process; the daemon's sign-in is never printed.
"""

from __future__ import annotations

import html
import json
import os
import sys
import threading
import time
import webbrowser
from collections.abc import Callable, Mapping
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

import click

from mcpx.config import state_dir

from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._daemon_logins import DaemonLogins, login_key
from ._endpoint import TOKEN_ENV, Endpoint, Unreachable, parse_endpoint
from ._http import Reply
from ._views import fail_reply

__all__ = ["auth_group"]

_PAGE = "<!doctype html><meta charset=utf-8><title>mcpx</title><p>{}</p>"
F = TypeVar("F", bound=Callable[..., Any])
_DAEMON_FLAG = "--daemon"
# The daemon.endpoint setting's parameter, found when the commands are decorated.
_endpoint_param: list[str] = []


def _with_daemon(f: F) -> F:
    """The settings' flags, and ``--daemon [URL]``: the daemon's own sign-in. The setting
    daemon.endpoint keeps ``--daemon-endpoint`` here (its ``--daemon`` alias would take
    the next word as its value)."""
    f = settings_options(f)
    params: list[click.Parameter] = f.__click_params__  # type: ignore[attr-defined]
    for i, param in enumerate(params):
        if _DAEMON_FLAG in param.opts and param.name is not None:
            opts = [o for o in param.opts if o != _DAEMON_FLAG]
            params[i] = click.Option([*opts, param.name], default=None, hidden=True)
            _endpoint_param[:] = [param.name]
    return click.option(
        _DAEMON_FLAG,
        "daemon",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[URL]",
        help="The daemon's own sign-in, at daemon.endpoint or URL (http(s) only).",
    )(f)


def _key(endpoint: Endpoint) -> str:
    return login_key(endpoint.scheme, endpoint.host, endpoint.port)


def _daemon_endpoint(daemon: str, params: dict[str, Any]) -> tuple[Endpoint, DaemonLogins]:
    """The http(s) endpoint ``--daemon`` means, and where its sign-in is kept.

    Raises:
        click.UsageError: none is configured, or it is not http(s) (exit 2).
    """
    if daemon:
        params[_endpoint_param[0]] = daemon
    settings = load_settings(params).settings
    endpoint = parse_endpoint(str(settings["daemon.endpoint"]))
    if endpoint is None:
        raise click.UsageError(
            "--daemon is the sign-in to a daemon at an http(s) endpoint, and none is set: set "
            "daemon.endpoint (MCPX_DAEMON_ENDPOINT, or the config file's settings) to "
            "https://host:port, or give it: --daemon https://host:port"
        )
    if endpoint.scheme not in ("http", "https"):
        raise click.UsageError(
            f"--daemon: daemon.endpoint is {endpoint.text}; only an http(s):// daemon takes "
            f"an OAuth sign-in ({endpoint.scheme}:// reaches its daemon without one)"
        )
    return endpoint, DaemonLogins(state_dir(settings))


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
@click.argument("server", required=False)
@click.option("--no-browser", is_flag=True, help="Print the URL; paste the redirected URL back.")
@click.option(
    "--timeout",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the browser to come back.",
)
@_with_daemon
def login(
    server: str | None, no_browser: bool, timeout: float, daemon: str | None, **params: Any
) -> None:
    """Sign in to SERVER in a browser (its tokens are kept by the daemon); or, with
    --daemon, to the daemon at an http(s) endpoint (its tokens kept by this CLI)."""
    if daemon is not None:
        if server is not None:
            raise click.UsageError(f"give SERVER or --daemon, not both ({server!r} and --daemon)")
        _daemon_login(daemon, no_browser, timeout, params)
        return
    if server is None:
        raise click.UsageError("Missing argument 'SERVER' (or --daemon: the daemon's own sign-in)")
    client = DaemonClient(load_settings(params))
    with _Listener() as listener:
        begun = _asked(
            client,
            "POST",
            f"/v1/auth/{quote(server, safe='')}/login",
            json_body={"redirectUri": listener.redirect_uri},
        ).json()
        url = str(begun["authorizationUrl"])
        redirected = _redirected(listener, url, no_browser, timeout, server, server)
    done = _asked(client, "POST", "/v1/auth/callback", json_body={"url": redirected}).json()
    click.echo(f"logged in to {done['server']}")


def _redirected(
    listener: _Listener, url: str, no_browser: bool, timeout: float, what: str, again: str
) -> str:
    """The URL the browser was sent back to, from ``listener`` or pasted. ``what`` names
    what is signed in to; ``mcpx auth login {again}`` starts it over."""
    listener.expected = _state(url)
    if no_browser:
        return _pasted(url)
    opened = False
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        click.echo("Open this URL in a browser to sign in:", err=True)
        click.echo(url)
    else:
        click.echo(f"Opened the sign-in page for {what} in your browser.", err=True)
    if not listener.done.wait(timeout):
        click.echo(
            f"mcpx: the browser did not come back within {timeout:g}s; run "
            f"`mcpx auth login {again}` again, or add --no-browser and paste "
            "the URL you were sent to",
            err=True,
        )
        raise SystemExit(1)
    assert listener.redirected is not None
    return listener.redirected


def _daemon_login(daemon: str, no_browser: bool, timeout: float, params: dict[str, Any]) -> None:
    endpoint, logins = _daemon_endpoint(daemon, params)
    from mcpx.oauth import OAuthError, Unavailable  # the OAuth machinery: only to sign in

    from ._daemon_login import NotOAuth, begin, finish

    where = f"the daemon at {endpoint.text}"
    try:
        with _Listener() as listener:
            begun = begin(endpoint.text, listener.redirect_uri)
            again = f"--daemon {endpoint.text}"
            redirected = _redirected(listener, begun.url, no_browser, timeout, where, again)
        kept = finish(begun, redirected, logins, _key(endpoint))
    except NotOAuth as exc:
        raise click.ClickException(str(exc)) from None
    except Unavailable as exc:
        raise Unreachable(f"cannot sign in to {where}: {exc}") from None
    except OAuthError as exc:
        raise click.ClickException(f"the sign-in to {where} failed: {exc}") from None
    who = f" as {kept.subject}" if kept.subject else ""
    click.echo(f"signed in to {where}{who} (scopes: {kept.scope or '-'})")
    if os.environ.get(TOKEN_ENV):
        click.echo(f"mcpx: ${TOKEN_ENV} is set: commands send it, not this sign-in", err=True)


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
@_with_daemon
def status(as_json: bool, daemon: str | None, **params: Any) -> None:
    """Per OAuth server: logged in, issuer, expiry, scopes (never a token); with --daemon,
    the sign-in to the daemon at an http(s) endpoint."""
    if daemon is not None:
        _daemon_status(daemon, as_json, params)
        return
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


def _daemon_status(daemon: str, as_json: bool, params: dict[str, Any]) -> None:
    endpoint, logins = _daemon_endpoint(daemon, params)
    kept = logins.get(_key(endpoint))
    from_env = bool(os.environ.get(TOKEN_ENV))
    doc = {
        "endpoint": endpoint.text,
        "signedIn": kept is not None,
        "subject": kept.subject if kept else None,
        "issuer": kept.issuer if kept else None,
        "resource": kept.resource if kept else None,
        "scopes": kept.scope.split() if kept and kept.scope else [],
        "expiresAt": kept.expires_at if kept else None,
        "tokenFromEnvironment": from_env,  # it wins over the sign-in
    }
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    if kept is None:
        click.echo(f"the daemon at {endpoint.text}: not signed in (`mcpx auth login --daemon`)")
    else:
        click.echo(f"the daemon at {endpoint.text}: signed in as {kept.subject or '(unnamed)'}")
        click.echo(f"  issuer   {kept.issuer}")
        click.echo(f"  scopes   {kept.scope or '-'}")
        click.echo(f"  expires  {_when(kept.expires_at)} (renewed when needed)")
    if from_env:
        click.echo(f"${TOKEN_ENV} is set: commands send it instead of any sign-in")


@auth_group.command("logout")
@click.argument("server", required=False)
@_with_daemon
def logout(server: str | None, daemon: str | None, **params: Any) -> None:
    """Log out of SERVER: its tokens revoked where it offers revocation, then dropped; with
    --daemon, out of the daemon at an http(s) endpoint, alike."""
    if daemon is not None:
        if server is not None:
            raise click.UsageError(f"give SERVER or --daemon, not both ({server!r} and --daemon)")
        _daemon_logout(daemon, params)
        return
    if server is None:
        raise click.UsageError("Missing argument 'SERVER' (or --daemon: the daemon's own sign-in)")
    path = f"/v1/auth/{quote(server, safe='')}"
    doc = _asked(DaemonClient(load_settings(params)), "DELETE", path).json()
    said = "logged out of" if doc.get("loggedOut") else "was not logged in to"
    click.echo(f"{said} {doc['server']}")


def _daemon_logout(daemon: str, params: dict[str, Any]) -> None:
    endpoint, logins = _daemon_endpoint(daemon, params)
    from ._daemon_login import sign_out  # the OAuth machinery: only to revoke

    kept, revoked = sign_out(logins, _key(endpoint))
    if kept is None:
        click.echo(f"was not signed in to the daemon at {endpoint.text}")
        return
    how = "revoked at" if revoked else "forgotten here; not revoked by"
    click.echo(f"signed out of the daemon at {endpoint.text} (its tokens {how} {kept.issuer})")
