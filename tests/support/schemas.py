"""The official MCP schemas, loaded for tests, and strict validation of frames.

Where the schemas come from, in order: ``$MCPX_SCHEMAS``; ``../shared/mcp-schemas``
beside the project; a cache under ``.tooling/mcp-schemas`` filled by a download of
the pinned official files (commit and sha256 in ``schema_pins.py``). If none works
the test session stops with a message saying where to put them: never a skip.

Strict mode: every object type a revision defines gets ``additionalProperties:
false``, so a property the revision never defined is an error rather than silently
allowed. Left open: ``_meta`` objects and open maps (tool arguments,
structuredContent, JSON Schemas, experimental, extension settings, sampling
metadata), and types composed with allOf/anyOf (closing a branch would reject the
other branch's properties), but for a type that is only ``allOf`` references, which is
merged into one object type and closed whole.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft7Validator, Draft202012Validator

from mcpx.spec import REVISIONS, at_or_after

from .schema_pins import EXT_TASKS, SCHEMAS

PROJECT = Path(__file__).resolve().parents[2]
CACHE = PROJECT / ".tooling" / "mcp-schemas"

# Property names whose values are open maps or whole JSON Schemas.
OPEN_PROPERTIES = frozenset(
    {
        "_meta",
        "arguments",
        "structuredContent",
        "inputSchema",
        "outputSchema",
        "experimental",
        "extensions",
        "metadata",
    }
)
# Definitions that are open by design: meta objects, raw JSON, and a payload
# that carries whatever result the original request had.
OPEN_DEFINITIONS = frozenset({"JSONObject", "JSONValue", "GetTaskPayloadResult"})
_COMPOSED = ("allOf", "anyOf", "oneOf")


class SchemasMissing(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _candidates() -> Iterator[Path]:
    env = os.environ.get("MCPX_SCHEMAS")
    if env:
        yield Path(env)
    yield PROJECT.parent / "shared" / "mcp-schemas"
    yield CACHE


def _complete(root: Path) -> bool:
    return all((root / rev / "schema.json").is_file() for rev in REVISIONS)


def _download(root: Path) -> None:
    """Fetch the pinned files and check each against its sha256."""
    for rel, (url, digest) in {**SCHEMAS, "ext-tasks/schema.json": EXT_TASKS}.items():
        target = root / rel
        if target.is_file() and _sha256(target) == digest:
            continue
        with urllib.request.urlopen(url, timeout=20) as resp:
            body = resp.read()
        if hashlib.sha256(body).hexdigest() != digest:
            raise SchemasMissing(f"{url} does not match its pinned sha256 {digest}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


@cache
def schema_root() -> Path:
    """The folder holding ``<rev>/schema.json`` for every revision.

    Raises:
        SchemasMissing: no copy is present and the pinned download failed.
    """
    for root in _candidates():
        if _complete(root):
            return root
    try:
        _download(CACHE)
    except (OSError, SchemasMissing) as exc:
        raise SchemasMissing(
            "the official MCP schemas are needed by the tests and none were found.\n"
            "Put them in $MCPX_SCHEMAS or ../shared/mcp-schemas (a folder with "
            "<revision>/schema.json for " + ", ".join(REVISIONS) + "), or allow the "
            f"pinned download into {CACHE}. The download failed: {exc}"
        ) from exc
    return CACHE


@cache
def raw_schema(rev: str) -> dict[str, Any]:
    root = schema_root()
    path = root / "ext-tasks" / "schema.json" if rev == "ext-tasks" else root / rev / "schema.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def definitions(rev: str) -> dict[str, Any]:
    doc = raw_schema(rev)
    defs: dict[str, Any] = doc.get("$defs") or doc["definitions"]
    return defs


def _defs_key(doc: dict[str, Any]) -> str:
    return "$defs" if "$defs" in doc else "definitions"


def _close(node: Any) -> None:
    """Add additionalProperties: false below ``node``, sparing open maps."""
    if isinstance(node, list):
        for item in node:
            _close(item)
        return
    if not isinstance(node, dict):
        return
    if "properties" in node and not any(k in node for k in _COMPOSED):
        node["additionalProperties"] = False
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                if name not in OPEN_PROPERTIES:
                    _close(sub)
        elif key != "additionalProperties":
            _close(value)


def _reserve_meta(definition: dict[str, Any]) -> None:
    """Every revision reserves ``params._meta`` on requests and notifications,
    though the older schemas declare it only on the base type."""
    params = definition.get("properties", {}).get("params")
    if isinstance(params, dict) and "properties" in params:
        params["properties"].setdefault("_meta", {"type": "object"})


def _merged(defs: dict[str, Any], definition: dict[str, Any]) -> dict[str, Any]:
    """A definition that is only ``allOf`` references (2025-11-25's ``GetTaskResult``:
    ``Result`` and ``Task``) as one object type with every part's properties, so that it
    can be closed whole; any other definition as it is."""
    parts = definition.get("allOf")
    if not parts or not all(isinstance(p, dict) and set(p) == {"$ref"} for p in parts):
        return definition
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        merged = _merged(defs, defs[part["$ref"].split("/")[-1]])
        properties.update(merged.get("properties", {}))
        required += [r for r in merged.get("required", []) if r not in required]
    out = {"type": "object", "properties": properties, "required": required}
    return {**{k: v for k, v in definition.items() if k != "allOf"}, **out}


@cache
def strict_schema(rev: str) -> dict[str, Any]:
    doc = copy.deepcopy(raw_schema(rev))
    defs = doc[_defs_key(doc)]
    for name, definition in list(defs.items()):
        defs[name] = _merged(raw_schema(rev)[_defs_key(doc)], definition)
    for name, definition in defs.items():
        if name in OPEN_DEFINITIONS or name.endswith("MetaObject"):
            continue
        _reserve_meta(definition)
        _close(definition)
    return doc


def _validator_class(rev: str) -> type[Draft7Validator] | type[Draft202012Validator]:
    dialect = raw_schema(rev).get("$schema", "")
    return Draft202012Validator if "2020-12" in dialect else Draft7Validator


@cache
def _validator(rev: str, definition: str, strict: bool) -> jsonschema.protocols.Validator:
    doc = strict_schema(rev) if strict else raw_schema(rev)
    if definition not in doc[_defs_key(doc)]:
        raise KeyError(f"{rev} defines no {definition}")
    root = {**doc, "$ref": f"#/{_defs_key(doc)}/{definition}"}
    cls = _validator_class(rev)
    return cls(root, format_checker=cls.FORMAT_CHECKER)


def errors(instance: Any, rev: str, definition: str, *, strict: bool = True) -> list[str]:
    """Every way ``instance`` fails ``definition`` of ``rev``, as readable lines."""
    found = _validator(rev, definition, strict).iter_errors(instance)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in found]


# -- frames -----------------------------------------------------------------

_UNIONS = {
    ("request", "client"): "ClientRequest",
    ("request", "server"): "ServerRequest",
    ("notification", "client"): "ClientNotification",
    ("notification", "server"): "ServerNotification",
}


def _members(rev: str, union: str) -> list[str]:
    defs = definitions(rev)
    if union not in defs:
        return []
    node = defs[union]
    refs = node.get("anyOf", [node])
    names = [r["$ref"].split("/")[-1] for r in refs if "$ref" in r]
    # A one-member union is written as that member itself.
    return names or [n for n, d in defs.items() if d is node and n != union] or [union]


@cache
def methods(rev: str, kind: str, sender: str) -> dict[str, str]:
    """Method name -> definition name, from the schema's union for that direction."""
    out: dict[str, str] = {}
    defs = definitions(rev)
    for name in _members(rev, _UNIONS[(kind, sender)]):
        const = defs[name].get("properties", {}).get("method", {}).get("const")
        if const:
            out[const] = name
    return out


def result_definition(rev: str, method: str, result: dict[str, Any]) -> str:
    """The result type answering ``method``, by the schema's naming."""
    if rev == "2026-07-28" and result.get("resultType") == "input_required":
        return "InputRequiredResult"
    if "task" in result and "CreateTaskResult" in definitions(rev):
        return "CreateTaskResult"
    for sender in ("client", "server"):
        request = methods(rev, "request", sender).get(method)
        if request:
            candidate = request.removesuffix("Request") + "Result"
            if candidate in definitions(rev):
                return candidate
    return "EmptyResult"


def _request_errors(frame: dict[str, Any], rev: str, sender: str, kind: str) -> list[str]:
    method = frame.get("method")
    table = methods(rev, kind, sender)
    if method not in table:
        return [f"{rev} defines no {kind} {method!r} sent by a {sender}"]
    definition = table[method]
    envelope = "JSONRPCRequest" if kind == "request" else "JSONRPCNotification"
    found = errors(frame, rev, envelope, strict=False)
    declared = definitions(rev)[definition].get("properties", {})
    body = {k: v for k, v in frame.items() if k in declared or k not in ("jsonrpc", "id")}
    return found + errors(body, rev, definition)


# -- the 2026-07-28 tasks extension (its own schema, "ext-tasks") --------------

_EXT_SCHEMA = "ext-tasks"  # raw_schema's name for the extension's schema
# The extension's methods' results; tools/call's CreateTaskResult is told by resultType.
_EXT_RESULTS = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}
_ENVELOPE_KEYS = ("resultType", "_meta")


def _extension_errors(frame: dict[str, Any], rev: str, answering: str | None) -> list[str] | None:
    """How a 2026-07-28 frame only the tasks extension defines fails its schema (None:
    not one of those). Its types are composed (``allOf`` with ``Result``), which cannot be
    closed whole: each is checked as composed, and its task part (``Task``,
    ``DetailedTask``, without the envelope keys) strictly."""
    if rev != "2026-07-28":
        return None
    if frame.get("method") == "notifications/tasks":
        params = {k: v for k, v in (frame.get("params") or {}).items() if k != "_meta"}
        found = errors(frame, _EXT_SCHEMA, "TaskStatusNotification", strict=False)
        return found + errors(params, _EXT_SCHEMA, "DetailedTask")
    if frame.get("method") == "notifications/subscriptions/acknowledged":
        notes = (frame.get("params") or {}).get("notifications")
        if not isinstance(notes, dict) or "taskIds" not in notes:
            return None
        core = {**frame, "params": {**frame["params"], "notifications": {**notes}}}
        del core["params"]["notifications"]["taskIds"]
        ids = {"taskIds": notes["taskIds"]}
        found = frame_errors(core, rev, sender="server")
        return found + errors(ids, _EXT_SCHEMA, "TaskSubscriptionAcknowledgedNotifications")
    result = frame.get("result")
    if not isinstance(result, dict):
        return None
    if result.get("resultType") == "task":
        definition, part = "CreateTaskResult", "Task"
    elif answering in _EXT_RESULTS:
        definition, part = _EXT_RESULTS[answering], "DetailedTask"
    else:
        return None
    found = errors(result, _EXT_SCHEMA, definition, strict=False)
    if definition in ("CreateTaskResult", "GetTaskResult"):
        body = {k: v for k, v in result.items() if k not in _ENVELOPE_KEYS}
        found += errors(body, _EXT_SCHEMA, part)
    elif set(result) - set(_ENVELOPE_KEYS):  # an empty acknowledgement
        found.append(f"<root>: {answering} answers an empty result, got {sorted(result)}")
    return found


def frame_errors(
    frame: dict[str, Any], rev: str, *, sender: str, answering: str | None = None
) -> list[str]:
    """Every way ``frame`` is not a valid ``rev`` message from ``sender``.

    ``answering`` names the method a result answers (its type depends on it). At
    2026-07-28 the tasks extension's frames are held to its schema (``_extension_errors``).
    """
    if sender == "server" and (ext := _extension_errors(frame, rev, answering)) is not None:
        return ext
    if "method" in frame:
        kind = "request" if "id" in frame else "notification"
        return _request_errors(frame, rev, sender, kind)
    if "error" in frame:
        envelope = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in definitions(rev) else ""
        return errors(frame, rev, envelope or "JSONRPCError")
    if "result" in frame:
        envelope = "JSONRPCResultResponse" if at_or_after(rev, "2025-11-25") else "JSONRPCResponse"
        found = errors({**frame, "result": {}}, rev, envelope, strict=False)
        found = [e for e in found if not e.startswith("result")]
        if answering is None:
            return [*found, "a result frame needs the method it answers to be validated"]
        result = frame["result"]
        if not isinstance(result, dict):
            return [*found, "result must be an object"]
        return found + errors(result, rev, result_definition(rev, answering, result))
    return ["not a JSON-RPC request, notification or response"]


@dataclass
class Sent:
    frame: dict[str, Any]
    rev: str
    sender: str
    answering: str | None


@dataclass
class FrameLog:
    """Every frame mcpx sent in one test, checked against the peer's revision.

    Tests (and the transports' taps) call ``sent``; the ``sent_frames`` fixture
    calls ``assert_valid`` when the test ends.
    """

    frames: list[Sent] = field(default_factory=list)

    def sent(
        self,
        frame: dict[str, Any],
        rev: str,
        *,
        sender: str = "server",
        answering: str | None = None,
    ) -> None:
        self.frames.append(Sent(frame, rev, sender, answering))

    def problems(self) -> list[str]:
        out = []
        for i, s in enumerate(self.frames):
            for problem in frame_errors(s.frame, s.rev, sender=s.sender, answering=s.answering):
                out.append(f"frame {i} ({s.rev}, from {s.sender}): {problem}")
        return out

    def assert_valid(self) -> None:
        problems = self.problems()
        assert not problems, "frames invalid for the peer's revision:\n" + "\n".join(problems)
