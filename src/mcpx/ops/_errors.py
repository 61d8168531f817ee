"""The one error shape of /v1: ``{"error": {"code", "message", "details"}}``.

code              status  when
----------------  ------  ------------------------------------------------
bad_request       400     the body is not JSON, or not an object
invalid_input     400     input or tool arguments fail their schema (names the field),
                          or nest over 64 levels deep (details.limit)
unknown_server    404     no such server (details.known lists the valid names)
unknown_tool      404     no such tool on the server (details.known)
unknown_instance  404     the server runs no instance of that id (details.known: those it runs)
forbidden         403     an OAuth caller stopping a shared instance or another caller's
unknown_operation 404     no such route
unknown_profile   400     Mcpx-Profile (or ?profile=) names a profile no server lists
                          (details.known lists the profiles)
upstream_refused_input 400  the upstream answered -32602: the params do not fit it
                          (details.jsonrpc carries its error) — names the server
upstream_error    502     the upstream failed or answered a JSON-RPC error
                          (details.jsonrpc carries it) — names the server
upstream_timeout  504     no answer within the call's budget
login_needed      424     the upstream needs an OAuth sign-in nobody has done (or it was
                          revoked): details.command is the `mcpx auth login` to run
internal_error    500     mcpx failed on its own side of an upstream call (the request
                          could not be encoded): nothing was sent — names the server
too_many_tasks    429     proto.maxTasks calls already run as tasks
too_many_streams  503     events.maxSubscribers event streams already open
body_too_large    413     the request body is over http.maxBody / http.maxSmallBody
arguments_too_large 413   a tool call's arguments are over pool.maxArguments
header_too_large  431     the request head is over http.maxHeaderBytes
too_many_headers  431     the request has more than http.maxHeaders header fields
"""

from __future__ import annotations

from typing import Any

__all__ = ["OpError", "unknown_server"]


class OpError(Exception):
    def __init__(
        self, status: int, code: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


def unknown_server(name: str, known: list[str]) -> OpError:
    """A server name the caller cannot reach, worded as if it were not configured at all:
    a server outside the caller's profile is not to be told from one that does not exist."""
    listed = ", ".join(known) or "none"
    return OpError(
        404, "unknown_server", f"no server named {name!r}; configured: {listed}", {"known": known}
    )


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object"},
            },
        }
    },
}
