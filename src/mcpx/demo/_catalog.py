"""The demo server's prompt, resources and completions, spelled for each revision.

One prompt (``hello``), one resource (``demo://readme``), one resource template
(``demo://greeting/{name}``), and completion of the ``name`` argument of both.

Invariants:

- Everything listed carries only the fields its revision defines (``title`` from
  2025-06-18, as the matrix says), and lists never paginate: a ``cursor`` was never handed
  out, so any cursor is invalid (-32602).
- An unknown prompt, reference or malformed request is -32602. An unknown resource is
  "resource not found": -32002 in the legacy era, -32602 from 2026-07-28 (SEP-2164), with
  the URI in ``data`` either way.
- Every function is pure: the same request and revision give the same result.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import unquote

from mcpx import spec, wire

from ._eras import titled

__all__ = [
    "complete",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "list_templates",
    "no_cursor",
    "read_resource",
]

README_URI: Final = "demo://readme"
GREETING_TEMPLATE: Final = "demo://greeting/{name}"
_GREETING_PREFIX: Final = "demo://greeting/"

README: Final = """\
# mcpx demo server

This is `mcpx-demo`, the small MCP server bundled with mcpx. The mcpx daemon starts it when
no upstream server is configured, so a fresh machine already shows a working gateway: its
tools, prompt and resources reach you through mcpx exactly as a configured server's would.

Try the `echo`, `add`, `slow` and `now` tools, the `hello` prompt, and the
`demo://greeting/{name}` resource template. Configure your own MCP servers and mcpx offers
theirs instead.
"""

# The names completion offers, for the prompt argument and the template variable alike.
NAMES: Final = ("Ada", "Alan", "Barbara", "Edsger", "Grace", "Katherine", "Linus", "Margaret")

_MAX_NAME: Final = 200  # characters of a name echoed back; a greeting is not a data channel


def no_cursor(params: dict[str, Any]) -> None:
    """Refuse a ``cursor``: the lists fit one page, so no cursor was ever handed out.

    Raises:
        InvalidParams: ``params`` carries a cursor.
    """
    if params.get("cursor") is not None:
        raise wire.InvalidParams("invalid cursor: this server's lists have a single page")


def list_prompts(revision: str) -> dict[str, Any]:
    argument = titled(
        {"name": "name", "description": "Who to greet.", "required": True},
        "PromptArgument",
        "Name",
        revision,
    )
    prompt = titled({"name": "hello"}, "Prompt", "Say hello", revision)
    prompt["description"] = "A one-message prompt asking to greet someone by name."
    prompt["arguments"] = [argument]
    return {"prompts": [prompt]}


def get_prompt(params: dict[str, Any], revision: str) -> dict[str, Any]:
    """The ``prompts/get`` result for ``hello``.

    Raises:
        InvalidParams: another prompt, or a missing or empty ``name`` argument.
    """
    name = params.get("name")
    if name != "hello":
        shown = name[:100] if isinstance(name, str) else wire.dumps(name).decode()[:100]
        raise wire.InvalidParams(f"no prompt named {shown!r}")
    arguments = params.get("arguments") or {}
    who = arguments.get("name") if isinstance(arguments, dict) else None
    if not isinstance(who, str) or not who.strip():
        raise wire.InvalidParams("prompt 'hello' needs the argument 'name' (a non-empty string)")
    text = f"Please greet {who.strip()[:_MAX_NAME]} warmly, in one short sentence."
    return {
        "description": "Greet someone by name.",
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }


def list_resources(revision: str) -> dict[str, Any]:
    readme = titled({"uri": README_URI, "name": "readme"}, "Resource", "About mcpx", revision)
    readme["description"] = "What mcpx is and why this demo server is running."
    readme["mimeType"] = "text/markdown"
    return {"resources": [readme]}


def list_templates(revision: str) -> dict[str, Any]:
    template = titled(
        {"uriTemplate": GREETING_TEMPLATE, "name": "greeting"},
        "ResourceTemplate",
        "Greeting",
        revision,
    )
    template["description"] = "A greeting for the name in the URI."
    template["mimeType"] = "text/plain"
    return {"resourceTemplates": [template]}


def read_resource(params: dict[str, Any], revision: str) -> dict[str, Any]:
    """The ``resources/read`` result for the readme or a greeting.

    Raises:
        InvalidParams: no ``uri`` string; or (2026-07-28) no such resource.
        ResourceNotFound: no such resource (legacy revisions).
    """
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise wire.InvalidParams("resources/read needs a uri (a string)")
    if uri == README_URI:
        return _contents(uri, "text/markdown", README)
    name = _greeted(uri)
    if name:
        return _contents(uri, "text/plain", f"Hello, {name[:_MAX_NAME]}!")
    message = f"no resource at {uri[:200]!r}"
    if spec.era_of(revision) is spec.Era.MODERN:  # -32002 is retired from 2026-07-28 on
        raise wire.InvalidParams(message, {"uri": uri})
    raise wire.ResourceNotFound(message, {"uri": uri})


def complete(params: dict[str, Any]) -> dict[str, Any]:
    """The ``completion/complete`` result: the known names starting with the typed prefix.

    Raises:
        InvalidParams: a malformed request, or a reference to nothing this server has.
    """
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise wire.InvalidParams("completion/complete needs a ref and an argument (objects)")
    name, value = argument.get("name"), argument.get("value")
    if not isinstance(name, str) or not isinstance(value, str):
        raise wire.InvalidParams("the argument to complete needs a name and a value (strings)")
    _check_ref(ref)
    # Both references take exactly one argument, "name"; any other completes to nothing.
    prefix = value.casefold()
    found = [n for n in NAMES if n.casefold().startswith(prefix)] if name == "name" else []
    return {"completion": {"values": found, "total": len(found), "hasMore": False}}


def _greeted(uri: str) -> str:
    """The name in a URI the greeting template expands to, or "" when it is not one.

    ``{name}`` is a simple RFC 6570 expansion, which percent-encodes reserved characters:
    so ``demo://greeting/a%2Fb`` greets "a/b", while ``demo://greeting/a/b`` is no expansion.
    """
    raw = uri.removeprefix(_GREETING_PREFIX) if uri.startswith(_GREETING_PREFIX) else ""
    if any(c in raw for c in "/?#"):
        return ""
    return unquote(raw).strip()


def _check_ref(ref: dict[str, Any]) -> None:
    kind = ref.get("type")
    if kind == "ref/prompt" and ref.get("name") == "hello":
        return
    if kind == "ref/resource" and ref.get("uri") == GREETING_TEMPLATE:
        return
    if kind not in ("ref/prompt", "ref/resource"):
        raise wire.InvalidParams("ref.type must be 'ref/prompt' or 'ref/resource'")
    raise wire.InvalidParams(f"nothing to complete for {wire.dumps(ref).decode()[:200]}")


def _contents(uri: str, mime: str, text: str) -> dict[str, Any]:
    return {"contents": [{"uri": uri, "mimeType": mime, "text": text}]}
