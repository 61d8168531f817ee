"""A small HTTP client to the daemon, on the standard library.

The CLI's every command talks to the daemon; ``http.client`` over ``AF_UNIX``
costs nothing to import, where a full HTTP client library costs each start
tens of milliseconds. The connection is made by a ``Connect`` function: the daemon's
unix socket (``unix_connect``), or what a ``daemon.endpoint`` names (``_endpoint``).
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

__all__ = ["Connect", "DaemonHttp", "Reply", "UnixConnection", "UnixHttp"]

# A new connection to the daemon, with this timeout (None: none); nothing sent yet.
Connect = Callable[[float | None], http.client.HTTPConnection]


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("mcpx", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


@dataclass(frozen=True)
class Reply:
    status_code: int
    text: str
    challenge: str = ""  # WWW-Authenticate, if any (a refusal a sign-in may answer)

    def json(self) -> Any:
        return json.loads(self.text)


class DaemonHttp:
    def __init__(
        self, connect: Connect, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> None:
        self.connect = connect
        self.timeout = timeout
        # Sent with every request (Mcpx-Profile).
        self.headers = headers or {}

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        timeout: float | None = None,
    ) -> Reply:
        """One exchange.

        Raises:
            OSError: the socket could not be reached.
        """
        if params:
            path = f"{path}?{urlencode(params)}"
        body = None if json_body is None else json.dumps(json_body).encode()
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn = self.connect(timeout if timeout is not None else self.timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
            return Reply(response.status, text, response.getheader("WWW-Authenticate") or "")
        finally:
            conn.close()

    @contextmanager
    def stream(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Iterator[http.client.HTTPResponse]:
        """A response read as it comes (no timeout: a stream waits as long as it must).

        Raises:
            OSError: the socket could not be reached.
        """
        if params:
            path = f"{path}?{urlencode(params)}"
        body = None if json_body is None else json.dumps(json_body).encode()
        sent = {**self.headers, **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/json"
        conn = self.connect(None)
        try:
            conn.request(method, path, body=body, headers=sent)
            yield conn.getresponse()
        finally:
            conn.close()


class UnixHttp(DaemonHttp):
    """The daemon on its unix socket at ``path``."""

    def __init__(
        self, path: str, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(lambda limit: UnixConnection(path, limit), timeout, headers)
        self.path = path
