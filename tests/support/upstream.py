"""Driving mcpx's upstream client in tests: settings, a recording hook set, and
the check that every frame mcpx sent was valid for the revision it was sent in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from mcpx.client import EraCache, Hooks, QuestionHandler, Session, open_session
from mcpx.config import ServerConfig, Settings, resolve

from .schemas import FrameLog

META_VERSION = "io.modelcontextprotocol/protocolVersion"


def settings(**flags: str) -> Settings:
    """Defaults with ``flags`` (setting name with dots as underscores → raw value)."""
    return resolve(file=None, env={}, flags={k.replace("__", "."): v for k, v in flags.items()})


@dataclass
class Recorder:
    """Hooks that keep everything an upstream session reports."""

    sent: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def hooks(self) -> Hooks:
        return Hooks(
            on_stderr=lambda _server, line: self.stderr.append(line),
            on_event=lambda kind, data: self.events.append((kind, data)),
            on_notification=lambda _s, method, params, scope="": self.notifications.append(
                (method, params)
            ),
            on_sent=lambda _server, frame, answering: self.sent.append((frame, answering)),
        )

    def methods_sent(self) -> list[str]:
        return [f["method"] for f, _ in self.sent if "method" in f]

    def record_into(self, log: FrameLog, revision: str) -> None:
        """Each frame's revision: its own declaration (modern _meta, the
        initialize offer), else the one the session negotiated."""
        for frame, answering in self.sent:
            params = frame.get("params") or {}
            rev = (params.get("_meta") or {}).get(META_VERSION)
            if frame.get("method") == "initialize":
                rev = params.get("protocolVersion")
            log.sent(frame, rev or revision, sender="client", answering=answering)


def stdio_server(name: str, argv: list[str], **kw: Any) -> ServerConfig:
    return ServerConfig(name=name, transport="stdio", command=argv[0], args=tuple(argv[1:]), **kw)


def http_server(name: str, url: str, **kw: Any) -> ServerConfig:
    return ServerConfig(name=name, transport="http", url=url, **kw)


@asynccontextmanager
async def connected(
    server: ServerConfig,
    recorder: Recorder,
    log: FrameLog,
    *,
    config: Settings | None = None,
    cache_dir: Path | None = None,
    handler: QuestionHandler | None = None,
    limit: float = 90,
) -> AsyncIterator[Session]:
    """A session to ``server``; its sent frames go into ``log`` when it closes."""
    cache = EraCache(cache_dir / "upstream-eras.json") if cache_dir else None
    revision = "2024-11-05"
    with anyio.fail_after(limit):
        try:
            async with open_session(
                server, config or settings(), handler=handler, cache=cache, hooks=recorder.hooks()
            ) as session:
                revision = session.revision
                yield session
        finally:
            recorder.record_into(log, revision)
