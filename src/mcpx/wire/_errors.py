"""One exception class per JSON-RPC error code mcpx knows, and the way back from the wire.

The tree::

    McpError                              any code (unknown codes land here)
    ├── ParseError                        -32700
    ├── InvalidRequest                    -32600
    ├── MethodNotFound                    -32601
    ├── InvalidParams                     -32602
    ├── InternalError                     -32603
    ├── ResourceNotFound                  -32002  (2025-11-25 and earlier)
    ├── UrlElicitationRequired            -32042  (2025-11-25 only)
    ├── HeaderMismatch                    -32020
    ├── MissingRequiredClientCapability   -32021  data: {"requiredCapabilities": {...}}
    ├── UnsupportedProtocolVersion        -32022  data: {"supported": [...], "requested": "..."}
    └── Throttled                         -429    mcpx's own: refused for now (a limit reached)

Invariants:

- Every subclass has one fixed ``code``; only a bare ``McpError`` takes any code.
- ``remote`` tells an error a peer sent (rebuilt by ``McpError.from_error``) from one mcpx
  detected itself, so a local failure is never passed off as the peer's answer.
- ``data`` is ``NO_DATA`` when the error object had no ``data`` member; ``None`` is the JSON
  ``null`` a peer may send, and ``to_error`` gives back exactly what was received.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Final

__all__ = [
    "NO_DATA",
    "HeaderMismatch",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "McpError",
    "MethodNotFound",
    "MissingRequiredClientCapability",
    "NoData",
    "ParseError",
    "ResourceNotFound",
    "Throttled",
    "UnsupportedProtocolVersion",
    "UrlElicitationRequired",
    "http_status",
]


class NoData(Enum):
    """The type of ``NO_DATA``: an enum member, so ``is`` checks narrow under mypy."""

    NO_DATA = "NO_DATA"

    def __repr__(self) -> str:
        return "NO_DATA"


# JSON null is a legitimate ``data`` value, so absence needs its own marker.
NO_DATA: Final = NoData.NO_DATA


class McpError(Exception):
    """A JSON-RPC error: raised locally, or rebuilt from a peer's error object.

    ``request_id`` is the id of the frame that caused the error when the wire layer could
    read one, so the caller can answer it; it is never part of the error object.
    """

    code: int

    def __init__(
        self,
        message: str,
        data: object = NO_DATA,
        *,
        code: int | None = None,
        remote: bool = False,
        request_id: str | int | None = None,
    ) -> None:
        """Build an error; ``code`` is needed only on a bare ``McpError``.

        Raises:
            TypeError: a bare ``McpError`` without ``code``, or a code that is not an int.
            ValueError: ``code`` differs from a subclass's fixed code.
        """
        super().__init__(message)
        self.code = _settle_code(type(self), code)
        self.message = message
        self.data = data
        self.remote = remote
        self.request_id = request_id

    def __repr__(self) -> str:
        origin = "remote" if self.remote else "local"
        return f"{type(self).__name__}({self.message!r}, code={self.code}, {origin})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The default reduce replays ``args`` only, losing code, data and remote.
        state = (type(self), self.message, self.data, self.code, self.remote, self.request_id)
        return (_rebuild, state)

    @property
    def has_data(self) -> bool:
        return self.data is not NO_DATA

    @property
    def http_status(self) -> int:
        """The HTTP status this error is answered with on 2026-07-28 Streamable HTTP."""
        return http_status(self.code)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object: ``code`` and ``message``, ``data`` only when present."""
        obj: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not NO_DATA:
            obj["data"] = self.data
        return obj

    @classmethod
    def from_error(cls, obj: object) -> McpError:
        """Rebuild the error a peer sent, as the subclass for its code, with ``remote=True``.

        A code with no subclass gives a bare ``McpError`` carrying that code. Called on any
        class, it always dispatches on the code, never on ``cls``.

        Raises:
            InvalidRequest: ``obj`` is not a well-formed error object (local, ``remote=False``):
                the peer broke the protocol, and its error cannot be trusted as an answer.
        """
        problem = error_object_problem(obj)
        if problem is not None:
            raise InvalidRequest(problem)
        assert isinstance(obj, dict)  # error_object_problem checked it; narrows for mypy
        code, message = obj["code"], obj["message"]
        data = obj.get("data", NO_DATA)
        kind = _BY_CODE.get(code)
        if kind is None:
            return McpError(message, data, code=code, remote=True)
        return kind(message, data, remote=True)


def _settle_code(cls: type[McpError], code: int | None) -> int:
    fixed: int | None = getattr(cls, "code", None)
    chosen = fixed if code is None else code
    if chosen is None:
        raise TypeError(f"{cls.__name__} needs a code")
    if isinstance(chosen, bool) or not isinstance(chosen, int):
        raise TypeError(f"an error code must be an int, not {type(chosen).__name__}")
    if fixed is not None and chosen != fixed:
        raise ValueError(f"{cls.__name__} always has code {fixed}, not {chosen}")
    return chosen


def _rebuild(
    cls: type[McpError],
    message: str,
    data: object,
    code: int,
    remote: bool,
    request_id: str | int | None,
) -> McpError:
    # Subclasses fix their code; passing it again is accepted because it matches.
    return cls(message, data, code=code, remote=remote, request_id=request_id)


class ParseError(McpError):
    """-32700: the bytes are not JSON (or not UTF-8)."""

    code = -32700


class InvalidRequest(McpError):
    """-32600: JSON, but not a JSON-RPC 2.0 message MCP accepts."""

    code = -32600


class MethodNotFound(McpError):
    """-32601: no such method, or one gated behind a capability not advertised."""

    code = -32601


class InvalidParams(McpError):
    """-32602: the method exists, its params do not fit it."""

    code = -32602


class InternalError(McpError):
    """-32603: the receiver failed on a well-formed request."""

    code = -32603


class ResourceNotFound(McpError):
    """-32002: resource not found, as 2025-11-25 and earlier send it (later: -32602)."""

    code = -32002


class UrlElicitationRequired(McpError):
    """-32042: the request needs a URL elicitation first (2025-11-25 only)."""

    code = -32042


class HeaderMismatch(McpError):
    """-32020: HTTP headers missing, malformed, or not matching the body."""

    code = -32020


class MissingRequiredClientCapability(McpError):
    """-32021: the request needs a client capability the client did not declare."""

    code = -32021

    @classmethod
    def for_capabilities(
        cls,
        required: Mapping[str, object],
        message: str = "Missing required client capability",
    ) -> MissingRequiredClientCapability:
        """A local error whose data is ``{"requiredCapabilities": required}``."""
        return cls(message, {"requiredCapabilities": dict(required)})

    @property
    def required_capabilities(self) -> dict[str, Any]:
        """``data.requiredCapabilities``, or ``{}`` when a peer sent something else."""
        found = self.data.get("requiredCapabilities") if isinstance(self.data, dict) else None
        return found if isinstance(found, dict) else {}


class UnsupportedProtocolVersion(McpError):
    """-32022: the request's protocol version is not one the receiver implements."""

    code = -32022

    @classmethod
    def for_versions(
        cls,
        supported: Iterable[str],
        requested: str,
        message: str = "Unsupported protocol version",
    ) -> UnsupportedProtocolVersion:
        """A local error whose data is ``{"supported": [...], "requested": requested}``."""
        return cls(message, {"supported": list(supported), "requested": requested})

    @property
    def supported(self) -> list[str]:
        """``data.supported`` (the strings in it), or ``[]`` when a peer sent something else."""
        found = self.data.get("supported") if isinstance(self.data, dict) else None
        return [v for v in found if isinstance(v, str)] if isinstance(found, list) else []

    @property
    def requested(self) -> str | None:
        """``data.requested``, or None when absent or not a string."""
        found = self.data.get("requested") if isinstance(self.data, dict) else None
        return found if isinstance(found, str) else None


class Throttled(McpError):
    """-429: mcpx refuses for now: a limit is reached (an upstream's questions open or
    their rate; a client's requests running, subscriptions, tasks). The message names
    the setting.

    Like HTTP 429; an application code, outside -32768..-32000 (2026-07-28 §Error
    Codes). Never rebuilt from a peer's error: only mcpx's own refusal is one."""

    code = -429


# Explicit rather than filled in by __init_subclass__: a subclass declared elsewhere for
# local use must not silently take over how a peer's error is rebuilt.
_BY_CODE: Final[dict[int, type[McpError]]] = {
    cls.code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        ResourceNotFound,
        UrlElicitationRequired,
        HeaderMismatch,
        MissingRequiredClientCapability,
        UnsupportedProtocolVersion,
    )
}

# 2026-07-28 Streamable HTTP: 404 for an unknown method (and the legacy resource-not-found),
# 400 when the request itself was at fault, 500 when the receiver failed.
_HTTP_STATUS: Final[dict[int, int]] = {
    -32700: 400,
    -32600: 400,
    -32601: 404,
    -32602: 400,
    -32603: 500,
    -32002: 404,
    -32042: 400,
    -32020: 400,
    -32021: 400,
    -32022: 400,
    -429: 429,  # mcpx's Throttled: the client is told to slow down, not that mcpx failed
}


def http_status(code: int) -> int:
    """The HTTP status of an error ``code`` under the 2026-07-28 Streamable HTTP transport.

    Any code not in the table is 500. Nothing says the request was at fault, and a client
    probing for the modern transport treats 400 and 404 as "maybe a legacy server" and
    falls back, so an unexplained failure must not look like one of those.
    """
    return _HTTP_STATUS.get(code, 500)


# error_object_problem and json_type are shared with the sibling modules, not exported.


def error_object_problem(obj: object) -> str | None:
    """What is wrong with ``obj`` as a JSON-RPC error object, or None when it is well formed."""
    if not isinstance(obj, dict):
        return f"error must be an object (got {json_type(obj)})"
    code = obj.get("code")
    # bool is an int in Python, never in JSON.
    if isinstance(code, bool) or not isinstance(code, int):
        return f"error.code must be an integer (got {_member(obj, 'code')})"
    if not isinstance(obj.get("message"), str):
        return f"error.message must be a string (got {_member(obj, 'message')})"
    return None


def json_type(value: object) -> str:
    """The JSON type name of ``value``, for error messages (``float`` kept apart from ints)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in _TYPE_NAMES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


_TYPE_NAMES: Final = (
    (int, "integer"),
    (float, "float"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _member(obj: dict[Any, Any], key: str) -> str:
    return json_type(obj[key]) if key in obj else "nothing"
