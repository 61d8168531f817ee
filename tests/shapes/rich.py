"""Rich results in the newest (2026-07-28) shape: every optional field, every
content type, _meta everywhere, the envelope and its cache hints."""

from __future__ import annotations

from typing import Any

from mcpx.spec import TASKS_EXTENSION

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
ICON = {
    "src": "https://example.com/i.png",
    "mimeType": "image/png",
    "sizes": ["48x48"],
    "theme": "light",
}
ANN = {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"}
META = {"com.example/k": "v"}
SERVER_INFO = {
    "name": "mcpx",
    "version": "1.0.0",
    "title": "mcpx gateway",
    "description": "many servers as one",
    "icons": [ICON],
    "websiteUrl": "https://example.com/mcpx",
}
LINK_URI = "mcpx://artifacts/report.txt"


def result_meta() -> dict[str, Any]:
    return {"com.example/trace": "t-1", SERVER_INFO_KEY: dict(SERVER_INFO)}


def blocks() -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "hello", "annotations": dict(ANN), "_meta": dict(META)},
        {
            "type": "image",
            "data": "aGk=",
            "mimeType": "image/png",
            "annotations": dict(ANN),
            "_meta": dict(META),
        },
        {
            "type": "audio",
            "data": "aGk=",
            "mimeType": "audio/wav",
            "annotations": dict(ANN),
            "_meta": dict(META),
        },
        {
            "type": "resource_link",
            "uri": LINK_URI,
            "name": "report.txt",
            "title": "Report",
            "description": "the report",
            "mimeType": "text/plain",
            "size": 3,
            "annotations": dict(ANN),
            "icons": [dict(ICON)],
            "_meta": dict(META),
        },
        {
            "type": "resource",
            "annotations": dict(ANN),
            "_meta": dict(META),
            "resource": {
                "uri": "file:///a.txt",
                "mimeType": "text/plain",
                "text": "abc",
                "_meta": dict(META),
            },
        },
        {
            "type": "resource",
            "resource": {
                "uri": "file:///a.bin",
                "mimeType": "application/octet-stream",
                "blob": "AAE=",
                "_meta": dict(META),
            },
        },
    ]


def tool() -> dict[str, Any]:
    return {
        "name": "get_weather",
        "title": "Weather",
        "description": "the weather",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}},
        "annotations": {
            "title": "Weather",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": True,
        },
        "icons": [dict(ICON)],
        "_meta": dict(META),
    }


def prompt() -> dict[str, Any]:
    return {
        "name": "greet",
        "title": "Greet",
        "description": "say hi",
        "icons": [dict(ICON)],
        "_meta": dict(META),
        "arguments": [{"name": "who", "title": "Who", "description": "whom", "required": True}],
    }


def resource() -> dict[str, Any]:
    return {
        "uri": "file:///a.txt",
        "name": "a.txt",
        "title": "A",
        "description": "a file",
        "mimeType": "text/plain",
        "size": 3,
        "annotations": dict(ANN),
        "icons": [dict(ICON)],
        "_meta": dict(META),
    }


def template() -> dict[str, Any]:
    return {
        "uriTemplate": "file:///{path}",
        "name": "files",
        "title": "Files",
        "description": "any file",
        "mimeType": "text/plain",
        "annotations": dict(ANN),
        "icons": [dict(ICON)],
        "_meta": dict(META),
    }


def full_capabilities() -> dict[str, Any]:
    return {
        "experimental": {"com.example/x": {}},
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "extensions": {TASKS_EXTENSION: {}},
    }


def _cached(body: dict[str, Any], scope: str, ttl: int = 60000) -> dict[str, Any]:
    return {
        **body,
        "resultType": "complete",
        "ttlMs": ttl,
        "cacheScope": scope,
        "_meta": result_meta(),
    }


def _complete(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "resultType": "complete", "_meta": result_meta()}


def results() -> dict[str, dict[str, Any]]:
    """Method -> a rich newest-shape result answering it."""
    return {
        "tools/list": _cached({"tools": [tool()], "nextCursor": "c2"}, "public"),
        "tools/call": _complete(
            {"content": blocks(), "structuredContent": {"temp": 21.5}, "isError": False}
        ),
        "prompts/list": _cached({"prompts": [prompt()], "nextCursor": "c2"}, "public"),
        "prompts/get": _complete(
            {
                "description": "greeting",
                "messages": [
                    {"role": "user" if i % 2 else "assistant", "content": b}
                    for i, b in enumerate(blocks())
                ],
            }
        ),
        "resources/list": _cached({"resources": [resource()], "nextCursor": "c2"}, "private"),
        "resources/templates/list": _cached({"resourceTemplates": [template()]}, "public"),
        "resources/read": _cached(
            {"contents": [b["resource"] for b in blocks()[4:]]}, "private", 0
        ),
        "completion/complete": _complete(
            {"completion": {"values": ["a", "b"], "total": 2, "hasMore": False}}
        ),
        "server/discover": _cached(
            {
                "supportedVersions": ["2025-11-25", "2026-07-28"],
                # Core tasks are no 2026-07-28 capability: the newest shape has none.
                "capabilities": {k: v for k, v in full_capabilities().items() if k != "tasks"},
                "instructions": "use me",
            },
            "public",
        ),
        # initialize exists only in legacy revisions; this is its superset shape.
        "initialize": {
            "protocolVersion": "2025-11-25",
            "capabilities": full_capabilities(),
            "serverInfo": dict(SERVER_INFO),
            "instructions": "use me",
            "_meta": {"com.example/trace": "t-1"},
        },
    }
