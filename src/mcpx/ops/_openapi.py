"""``/openapi.json``: an OpenAPI 3.1 document generated from the operations table."""

from __future__ import annotations

import re
from typing import Any

from mcpx import __version__

from ._errors import ERROR_SCHEMA
from ._table import Operation

__all__ = ["openapi"]


def _success(op: Operation) -> dict[str, Any]:
    if op.stream is None and op.relays:
        # With Accept: application/x-ndjson, whatever the upstream relays comes first as
        # {"notification": …} lines, then this same body as the last line.
        line = {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"notification": {"type": "object"}},
                    "required": ["notification"],
                },
                op.output,
            ]
        }
        content = {
            "application/json": {"schema": op.output},
            "application/x-ndjson": {"schema": {"type": "string"}, "x-item-schema": line},
        }
        return {"description": "Success", "content": content}
    if op.stream is None:
        return {"description": "Success", "content": {"application/json": {"schema": op.output}}}
    # A stream is a string to OpenAPI 3.1; what each event's data holds goes in
    # x-item-schema, shaped as 3.2's itemSchema for server-sent events.
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "event": {"type": "string"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": op.output,
            },
        },
        "required": ["event", "data"],
    }
    media = {"schema": {"type": "string"}, "x-item-schema": item}
    what = "A stream, until the client or the daemon ends it"
    return {"description": what, "content": {op.stream: media}}


def _operation(op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": op.name,
        "summary": op.doc,
        "responses": {
            "200": _success(op),
            "default": {
                "description": "An error, in the one /v1 error shape",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            },
        },
    }
    params = [
        {
            "name": p.name,
            "in": p.where,
            "required": p.required or p.where == "path",
            "description": p.doc,
            "schema": p.schema,
        }
        for p in op.params
        if p.where in ("path", "query", "header")
    ]
    if params:
        doc["parameters"] = params
    body = [p for p in op.params if p.where == "body"]
    # Every POST says Content-Type: application/json (the daemon's front door refuses
    # others, against cross-site posts), so even a bodiless one is sent {}.
    if body or op.method == "POST":
        schema = {
            "type": "object",
            "properties": {p.name: {**p.schema, "description": p.doc} for p in body},
            "required": [p.name for p in body if p.required],
            "additionalProperties": False,
        }
        doc["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema}},
        }
    return doc


def openapi(operations: tuple[Operation, ...]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mcpx",
            "version": __version__,
            "description": "The mcpx daemon's operations: one table, served as routes, "
            "this document and the CLI.",
        },
        "paths": paths,
        "components": {"schemas": {"Error": ERROR_SCHEMA}},
    }


def path_params(path: str) -> list[str]:
    return re.findall(r"{(\w+)}", path)
