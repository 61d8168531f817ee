"""uvicorn's HTTP/1.1 protocol with each request head bounded, and refusals closed in stages.

httptools keeps a header field until it ends, with no bound: one 128 MB header was taken
in whole (joined piece by piece, stalling the loop for seconds) and 200,000 headers were
accepted. Here the bytes of each request head (its request line and header fields, up to
the blank line) are counted before the parser is given them, and its fields as the parser
reports them. Over ``http.maxHeaderBytes`` or ``http.maxHeaders`` the request is answered
431 and the connection closed; the rest of the head is neither parsed nor kept.

A connection closed while its request is still arriving (this 431, a 413 from the body
limits in ``_limits``, uvicorn's own 400) is closed in stages (RFC 9112 §9.6): the answer
goes out, then our side is shut (FIN), and what the client still sends is read and
dropped, unparsed, until it hangs up or ``_LINGER`` seconds pass. Closed at once, the
kernel would answer the unread bytes with a reset, and a client still sending its body
would never read why it was refused.

Invariants:
- The parser is never given more than ``http.maxHeaderBytes`` bytes of one head. (The
  first bytes of a pipelined request, read together with the end of the request before
  it, go uncounted: at most one read's worth.)
- After a refusal nothing more is parsed on the connection, and the refusal is the last
  thing written to it.
- A connection lingers at most ``_LINGER`` seconds after its last answer.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Final

from uvicorn.config import Config
from uvicorn.server import ServerState

from mcpx.config import Settings

from ._limits import refusal
from ._one_send import OneSendProtocol

__all__ = ["LimitedProtocol", "limited_protocol"]

# Long enough for a client on loopback or a LAN to finish sending and read the answer;
# short enough that a client that never stops costs little.
_LINGER: Final = 2.0
_STATUS: Final = b"HTTP/1.1 431 Request Header Fields Too Large\r\n"


class _StagedClose:
    """The socket's transport under uvicorn's: ``close`` lingers while a request is unread."""

    def __init__(self, transport: asyncio.Transport, protocol: LimitedProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closing = False
        self._timer: asyncio.TimerHandle | None = None

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        if not self._protocol.request_unread() or not self._transport.can_write_eof():
            self._transport.close()
            return
        self._transport.write_eof()  # once what is buffered (the answer) has gone
        self._protocol.discard()
        self._timer = asyncio.get_running_loop().call_later(_LINGER, self._transport.close)

    def close_now(self) -> None:
        """Close without lingering (the peer is gone, or the daemon is stopping)."""
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._transport.close()

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class LimitedProtocol(OneSendProtocol):
    """uvicorn's protocol (one send per loop step) holding each request head to limits."""

    max_head_bytes: ClassVar[int] = 64 * 1024
    max_headers: ClassVar[int] = 100

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._staged: _StagedClose | None = None
        self._in_head = True  # the next bytes read belong to a request head
        self._in_message = False  # a request has begun and not yet ended
        self._head_bytes = 0
        self._fields = 0
        self._discarding = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._staged = _StagedClose(transport, self)
        super().connection_made(self._staged)  # type: ignore[arg-type]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._staged is not None:
            self._staged.close_now()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        if self._discarding and self._staged is not None:
            self._staged.close_now()  # a refused request's leftovers are not worth a wait
            return
        super().shutdown()

    def request_unread(self) -> bool:
        """Whether a request has begun and the parser has not seen its end."""
        return self._in_message

    def discard(self) -> None:
        """From now on, what the client sends is read and dropped."""
        self._discarding = True
        self.flow.resume_reading()  # a paused read would leave the client blocked

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        if self._in_head:
            room = self.max_head_bytes - self._head_bytes
            if len(data) > room:
                # Only what fits is parsed: a head that has not ended within it is too big.
                self._head_bytes = self.max_head_bytes
                super().data_received(data[:room])
                if self._discarding or self.transport.is_closing():
                    return
                if self._in_head:
                    self._refuse("http.maxHeaderBytes", self.max_head_bytes)
                    return
                data = data[room:]
            else:
                self._head_bytes += len(data)
        super().data_received(data)

    # Parser callbacks: none acts once the connection is refused.

    def on_message_begin(self) -> None:
        if not self._discarding:
            self._in_message = True
            super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        if not self._discarding:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._discarding:
            return
        self._fields += 1
        if self._fields > self.max_headers:
            self._refuse("http.maxHeaders", self.max_headers)
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if not self._discarding:
            self._in_head = False
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._discarding:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._discarding:
            return
        self._in_message, self._in_head = False, True
        self._head_bytes = self._fields = 0
        super().on_message_complete()

    def _refuse(self, setting: str, limit: int) -> None:
        self.discard()
        if self.cycle is not None and not self.cycle.response_complete:
            # An answer is still going out: a 431 cannot follow it in order, so the
            # connection ends after it instead.
            self.cycle.keep_alive = False
            return
        url = getattr(self, "url", b"")  # set when the request began
        path = url.split(b"?", 1)[0].decode("latin-1")
        if setting == "http.maxHeaderBytes":
            code = "header_too_large"
            what = f"the request head (request line and header fields) is over {limit} bytes"
        else:
            code, what = "too_many_headers", f"the request has over {limit} header fields"
        message = f"{what}; send less, or raise the setting {setting}"
        body = refusal(431, path, code, message, {"limit": limit, "setting": setting})
        head = [_STATUS]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def limited_protocol(settings: Settings) -> type[LimitedProtocol]:
    """The protocol class uvicorn is given, with the configured limits."""

    class Configured(LimitedProtocol):
        max_head_bytes = int(settings["http.maxHeaderBytes"])
        max_headers = int(settings["http.maxHeaders"])

    return Configured
