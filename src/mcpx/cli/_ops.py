"""CLI subcommands generated from the operations table.

Each operation with a ``Cli`` spec becomes ``mcpx <command>`` (``mcpx <group> <command>``
when it names a group: ``mcpx server start NAME``): its positional parameters in order,
every other parameter an option, and ``--json`` for the raw response. ``mcpx call SERVER
TOOL key=value … [--args JSON]`` adds argument parsing by the tool's own input schema. A
streamed operation (``mcpx events``) prints what it gets as it comes (``_events``). Exit
codes: 0 success, 1 a tool reported an error (isError), 2 usage, 4 unknown name,
5 upstream failed, 6 the daemon went away before answering, 7 its state dir is full,
75 the call stopped on a question nobody present can answer (it goes on as a task:
``mcpx task result ID`` collects it).
"""

from __future__ import annotations

import json
from typing import Any

import click

from mcpx.ops import CLI_GROUPS, OPERATIONS, Operation, Param

from ._call_stream import EX_TEMPFAIL, parked, streamed_call
from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._events import follow
from ._views import fail_reply, show_response

__all__ = ["op_commands"]


def _parse_pairs(pairs: tuple[str, ...], schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, raw = _pair(pair)
        if (props.get(key) or {}).get("type") == "string":
            out[key] = raw
            continue
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def _request(op: Operation, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    path = op.path
    query: dict[str, Any] = {}
    body: dict[str, Any] = {}
    by_name = {p.name: p for p in op.params}
    for name, value in args.items():
        if value is None:
            continue
        where = by_name[name].where
        if where == "path":
            path = path.replace("{" + name + "}", str(value))
        elif where == "query":
            query[name] = str(value).lower() if isinstance(value, bool) else value
        else:
            body[name] = value
    return path, {"params": query} if op.method == "GET" else {"json_body": body}


def _option(param: Param) -> Any:
    kind = param.schema.get("type")
    flag = "--" + param.name.replace("_", "-")
    if kind == "boolean":
        return click.option(flag, param.name, is_flag=True, default=None, help=param.doc)
    if kind == "number":
        return click.option(flag, param.name, type=float, default=None, help=param.doc)
    if kind == "integer":
        return click.option(flag, param.name, type=int, default=None, help=param.doc)
    if kind == "object":
        return click.option(flag, param.name, default=None, metavar="JSON", help=param.doc)
    return click.option(flag, param.name, default=None, help=param.doc)


def _command(op: Operation) -> click.Command:
    assert op.cli is not None
    spec = op.cli
    positional = [p for name in spec.positional for p in op.params if p.name == name]
    has_arguments = any(p.name == "arguments" for p in op.params)

    def run(as_json: bool, profile: str | None, pairs: tuple[str, ...] = (), **params: Any) -> None:
        loaded = load_settings(params)
        args = {p.name: params.get(p.name) for p in op.params if p.name != "arguments"}
        for p in op.params:
            given = args.get(p.name)
            if p.schema.get("type") == "object" and isinstance(given, str):
                args[p.name] = json.loads(given)
        client = DaemonClient(loaded, profile=profile)
        if has_arguments:
            args["arguments"] = _arguments(client, args, pairs, params.get("args_json"))
            if loaded.settings.origin("pool.callTimeout").kind.value == "flag":
                args["timeout"] = loaded.settings["pool.callTimeout"]
        path, kw = _request(op, args)
        if op.stream is not None:
            follow(client, path, kw.get("params") or {}, as_json=as_json, fail=fail_reply)
            return
        if op.relays:
            response = streamed_call(client, op.method, path, kw.get("json_body"))
        else:
            response = client.call(op.method, path, **kw)
        if response.status_code >= 400:
            fail_reply(response)
        if response.status_code == 202:  # stopped on a question; the call goes on
            doc = response.json()
            if as_json:
                click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
            parked(doc)
            raise SystemExit(EX_TEMPFAIL)
        show_response(spec.view, response.json(), as_json)

    command = click.command(spec.command, help=op.doc)(run)
    command = settings_options(command)
    command = click.option("--json", "as_json", is_flag=True, help="Print the raw JSON response.")(
        command
    )
    command = click.option(
        "--profile",
        metavar="NAME",
        default=None,
        help="See and call only what a host of profile NAME would (default: every server).",
    )(command)
    for param in op.params:
        # Headers are the HTTP client's business (Last-Event-ID): not options.
        if param not in positional and param.name != "arguments" and param.where != "header":
            command = _option(param)(command)
    # On a built Command, click keeps parameters in the order they are added.
    for param in positional:
        command = click.argument(param.name, required=param.required or param.where == "path")(
            command
        )
    if has_arguments:
        command = click.option(
            "--args", "args_json", default=None, metavar="JSON", help="Tool arguments as JSON."
        )(command)
        command = click.argument("pairs", nargs=-1, metavar="[KEY=VALUE]...")(command)
    return command


def _arguments(
    client: DaemonClient, args: dict[str, Any], pairs: tuple[str, ...], raw: str | None
) -> dict[str, Any]:
    arguments: dict[str, Any] = json.loads(raw) if raw else {}
    if pairs and "tool" not in args:
        # A prompt's arguments are strings, whatever they look like.
        return arguments | {k: v for k, v in (_pair(p) for p in pairs)}
    if pairs:
        response = client.call("GET", f"/v1/tools/{args['server']}/{args['tool']}")
        schema = response.json().get("inputSchema", {}) if response.status_code == 200 else {}
        arguments |= _parse_pairs(pairs, schema)
    return arguments


def _pair(pair: str) -> tuple[str, str]:
    key, sep, raw = pair.partition("=")
    if not sep:
        raise click.UsageError(f"expected key=value, got {pair!r}")
    return key, raw


def op_commands() -> list[click.Command]:
    """A command per operation with a ``Cli``; those naming a group, under it."""
    commands: list[click.Command] = []
    groups: dict[str, click.Group] = {}
    for op in OPERATIONS:
        if op.cli is None:
            continue
        if op.cli.group is None:
            commands.append(_command(op))
            continue
        group = groups.get(op.cli.group)
        if group is None:
            group = groups[op.cli.group] = click.Group(op.cli.group, help=CLI_GROUPS[op.cli.group])
            commands.append(group)
        group.add_command(_command(op))
    return commands
