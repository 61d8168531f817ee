"""One upstream call as the call log keeps it: ``CallRecord``, made once per call where
every door's calls pass (``_upstream_call.request_for_caller``) and handed to a
``CallRecorder``.

The recorder is an interface so that what else wants to see a finished call (a span, a
metric) hooks in at the same place: ``record`` is called once per call, on the call's
own path, and must return at once (never touch a disk or a socket there).

What is kept of a caller's values (``log.payloads``): every value under a key that
looks secret (``token``, ``secret``, ``password``, ``key``, ``authorization``,
``cookie`` …, in any case and spelling: ``apiToken``, ``x-api-key``) is ``REDACTED``,
at any depth. Error texts go through the config's ``Redactor`` (URLs' secrets) and lose
what follows ``Bearer`` or a ``token=``-like name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, Protocol

from mcpx.config import REDACTED, Redactor

__all__ = [
    "CallRecord",
    "CallRecorder",
    "Caller",
    "Outcome",
    "redact_error",
    "redact_payload",
    "trace_id",
]

Outcome = Literal["ok", "tool_error", "error", "cancelled"]

# A key "looks secret" when, lower-cased and without separators, it holds one of these.
_SECRET_PARTS: Final = (
    "token",
    "secret",
    "passw",
    "passphrase",
    "authorization",
    "cookie",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "signature",
    "sessionid",
)
_SEPARATORS: Final = re.compile(r"[^a-z0-9]")
# "key" alone, or as the last word (apiKey, x-api-key, key_id is not a secret's value).
_KEY_WORD: Final = re.compile(r"(^|[^a-zA-Z])key$|[a-z]Key$|^key$", re.IGNORECASE)
_BEARER: Final = re.compile(r"\b(Bearer|Basic|Token)\s+[^\s\"',;]+", re.IGNORECASE)
_NAMED: Final = re.compile(
    r"\b([\w-]*(?:token|secret|password|passwd|api[_-]?key|authorization|cookie)[\w-]*)"
    r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)",
    re.IGNORECASE,
)
_MOST_DEPTH: Final = 64
_NO_CONNECTION: Final = Redactor("")


def _secret_key(key: str) -> bool:
    flat = _SEPARATORS.sub("", key.lower())
    return any(part in flat for part in _SECRET_PARTS) or bool(_KEY_WORD.search(key))


def redact_payload(value: Any, depth: int = 0) -> Any:
    """``value`` with the values of secret-looking keys hidden, at any depth."""
    if depth > _MOST_DEPTH:
        return REDACTED  # deeper than any call is let through: not worth keeping
    if isinstance(value, dict):
        return {
            k: REDACTED if _secret_key(str(k)) else redact_payload(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_payload(v, depth + 1) for v in value]
    return value


def redact_error(text: str) -> str:
    """An error text as the log keeps it: URL secrets, bearer tokens and named secrets hidden."""
    text = _NO_CONNECTION.text(text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _NAMED.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


_TRACEPARENT: Final = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def trace_id(meta: dict[str, Any] | None) -> str | None:
    """The trace id of a W3C ``traceparent`` in ``_meta``, if it has a valid one."""
    parent = (meta or {}).get("traceparent")
    match = _TRACEPARENT.match(parent.strip().lower()) if isinstance(parent, str) else None
    return match.group(1) if match else None


@dataclass(frozen=True)
class Caller:
    """Who a call came from and through which door.

    ``door``: ``mcp`` (a host on /mcp or ``mcpx serve``), ``passthrough`` (a host's
    request forwarded as it came), ``v1``, ``cli`` (the CLI, over /v1), ``exec`` (a
    script's call). ``transport``:
    ``stdio``, ``http`` or ``unix``. ``who``: the host's name and version as it gave
    them, or the /v1 client's User-Agent. ``revision``: the host's revision, if it has one.
    """

    door: str
    transport: str | None = None
    who: str | None = None
    revision: str | None = None


class CallRecord(NamedTuple):
    """One finished upstream call. Times: ``ts`` wall clock at the start (seconds);
    ``queue_ms`` waiting for a pool instance (its start included), ``upstream_ms`` the
    rest. A named tuple, in the log's column order: one is made per call, and a frozen
    dataclass of these 16 fields cost several times as much to make and to turn into
    a row."""

    ts: float
    door: str
    server: str
    method: str
    outcome: Outcome
    queue_ms: float
    upstream_ms: float
    transport: str | None = None
    caller: str | None = None
    tool: str | None = None
    host_revision: str | None = None
    upstream_revision: str | None = None
    error: str | None = None
    trace_id: str | None = None
    arguments: Any = None
    result: Any = None

    @property
    def ms(self) -> float:
        return round(self.queue_ms + self.upstream_ms, 3)


class CallRecorder(Protocol):
    """Sees every finished call; ``record`` returns at once (no I/O on the call's path)."""

    @property
    def payloads(self) -> bool:
        """Whether records should carry arguments and results (``log.payloads``)."""
        ...

    def record(self, call: CallRecord) -> None: ...
