"""What mcpx answers upstream: a broker answer made into its question's result, and
roots cut down to those that may be exposed.

Invariants:

- An answer given through the broker becomes the result its question needs, or is
  refused (InvalidParams naming the member at fault) while the question stays open:
  the upstream must never get a result it cannot read.
  - elicitation, form (or no mode): ``content`` holds only fields the requested schema
    lists, each a string, number, boolean or list of strings, and matches the schema;
    sent as ``{"action": "accept", "content": …}``.
  - elicitation, url: no content (``{}`` or ``{"action": "accept"}``: the user says
    it is done there); sent as ``{"action": "accept"}``.
  - sampling: a ``CreateMessageResult``: role, one content block (text, image or
    audio; a single block is valid in every revision), model, and nothing else.
  - roots: ``{"roots": [{"uri", "name"?}, …]}``.
- Roots sent upstream, whoever gave them (a host, the broker), are ``file://`` URIs
  with no ``..`` segment, percent-encoded or not (C-ROOTS-3, C-ROOTS-4): any other is
  dropped and logged (which, and why), and the rest are sent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import jsonschema
from referencing import Registry
from referencing.exceptions import Unresolvable

from mcpx.wire import InvalidParams

__all__ = ["broker_result", "exposable_roots"]

log = logging.getLogger("mcpx.questions")

JSON = dict[str, Any]
_SAMPLED_KEYS: Final = frozenset({"role", "content", "model", "stopReason", "_meta"})
_BLOCK_KEYS: Final = {
    "text": frozenset({"type", "text", "annotations", "_meta"}),
    "image": frozenset({"type", "data", "mimeType", "annotations", "_meta"}),
    "audio": frozenset({"type", "data", "mimeType", "annotations", "_meta"}),
}
_ROOT_KEYS: Final = frozenset({"uri", "name", "_meta"})


def _refused(where: str, why: str) -> InvalidParams:
    return InvalidParams(f"the answer is not valid: {where}: {why}", {"field": where})


# -- broker answers ------------------------------------------------------------------


def broker_result(method: str, params: Mapping[str, Any], content: Mapping[str, Any]) -> JSON:
    """The result ``content`` (as given to the broker) makes for the question asked.

    Raises:
        InvalidParams: ``content`` cannot answer it; ``data["field"]`` names where.
    """
    if method == "elicitation/create":
        if params.get("mode") == "url":
            return _consented(content)
        return {"action": "accept", "content": _form_content(params, content)}
    checks: dict[str, Callable[[Mapping[str, Any]], None]] = {
        "sampling/createMessage": _check_sampled,
        "roots/list": _check_roots,
    }
    checks[method](content)
    return dict(content)


def _consented(content: Mapping[str, Any]) -> JSON:
    if dict(content) not in ({}, {"action": "accept"}):
        raise _refused("(answer)", "a url elicitation takes no content: answer it once done there")
    return {"action": "accept"}


def _form_content(params: Mapping[str, Any], content: Mapping[str, Any]) -> JSON:
    schema = params.get("requestedSchema")
    fields = schema.get("properties") if isinstance(schema, Mapping) else None
    for key, value in content.items():
        if isinstance(fields, Mapping) and key not in fields:
            raise _refused(key, f"the question has no such field (its fields: {', '.join(fields)})")
        if not _primitive(value):
            raise _refused(key, "a value is a string, number, boolean or list of strings")
    if isinstance(schema, Mapping):
        # An empty registry: a $ref is never fetched (jsonschema's default would).
        validator = jsonschema.Draft202012Validator(dict(schema), registry=Registry())
        try:
            problems = sorted(validator.iter_errors(dict(content)), key=lambda e: list(e.path))
        except Unresolvable as exc:
            raise _refused("(answer)", f"the question's schema cannot be used: {exc}") from exc
        if problems:
            where = ".".join(map(str, problems[0].absolute_path)) or "(answer)"
            raise InvalidParams(
                f"the answer does not match what was asked: {where}: {problems[0].message}",
                {"field": where},
            )
    return dict(content)


def _primitive(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return isinstance(value, str | int | float | bool)


def _check_sampled(content: Mapping[str, Any]) -> None:
    _only(content, _SAMPLED_KEYS, "")
    if content.get("role") not in ("user", "assistant"):
        raise _refused("role", 'required: "assistant" (or "user")')
    if not isinstance(content.get("model"), str):
        raise _refused("model", "required: the name of the model (a person: any name)")
    if "stopReason" in content and not isinstance(content["stopReason"], str):
        raise _refused("stopReason", "a string")
    block = content.get("content")
    if not isinstance(block, Mapping):
        raise _refused("content", 'required: one block, e.g. {"type": "text", "text": "…"}')
    kind = block.get("type")
    allowed = _BLOCK_KEYS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        raise _refused("content.type", "one of text, image, audio")
    _only(block, allowed, "content.")
    for key in sorted(allowed - {"annotations", "_meta"}):
        if not isinstance(block.get(key), str):
            raise _refused(f"content.{key}", "required: a string")


def _check_roots(content: Mapping[str, Any]) -> None:
    _only(content, frozenset({"roots", "_meta"}), "")
    roots = content.get("roots")
    if not isinstance(roots, list):
        raise _refused("roots", 'required: a list of roots, e.g. [{"uri": "file:///…"}]')
    for n, root in enumerate(roots):
        if not isinstance(root, Mapping) or not isinstance(root.get("uri"), str):
            raise _refused(f"roots.{n}.uri", "required: a string")
        _only(root, _ROOT_KEYS, f"roots.{n}.")
        if "name" in root and not isinstance(root["name"], str):
            raise _refused(f"roots.{n}.name", "a string")


def _only(given: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
    extra = sorted(set(given) - allowed)
    if extra:
        raise _refused(prefix + extra[0], "not a member of the result")


# -- roots that may be exposed -------------------------------------------------------


def exposable_roots(result: Mapping[str, Any], server: str) -> JSON:
    """``result`` (a roots answer) with only the roots ``server`` may be told of."""
    roots = result.get("roots")
    if not isinstance(roots, list):
        log.info("%s: the roots answer had no list of roots; none sent", server)
        roots = []
    kept = []
    for root in roots:
        why = _unexposable(root)
        if why is None:
            kept.append(root)
        else:
            uri = root.get("uri") if isinstance(root, Mapping) else root
            log.info("%s: root %r not sent: %s", server, uri, why)
    return {**result, "roots": kept}


def _unexposable(root: object) -> str | None:
    uri = root.get("uri") if isinstance(root, Mapping) else None
    if not isinstance(uri, str):
        return "not a root (no uri)"
    if not uri.lower().startswith("file://"):
        return "not a file:// URI"
    # Decoded first: "%2e%2e" is ".." to whoever opens the path.
    if ".." in re.split(r"[/\\]", unquote(urlsplit(uri).path)):
        return "path traversal (a '..' segment)"
    return None
