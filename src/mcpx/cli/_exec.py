"""``mcpx exec``, ``mcpx run`` and ``mcpx scripts``: scripts that call many tools.

The daemon runs the script (``POST /v1/exec``), where the tools are; this command sends
it and shows what came back: the script's stdout on stdout, its stderr on stderr, and its
own exit status. A question nobody present can answer ends the command with 75, as it
ends ``mcpx call``: the script runs on as a task, ``mcpx task result ID`` collects it.
Ctrl-C cancels the run (its processes end), as it cancels a call.

Named scripts live in ``.mcpx/scripts/NAME.py``, looked for in the working directory and
each directory above it, then in the user's config dir (``<config>/mcpx/scripts``); the
nearest of a name wins.

Exit statuses beyond the README's: the script's own (0 done, 1 an uncaught exception,
2 a syntax error or ``--typecheck`` failing), 124 a limit stopped it (stderr says which).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final, NoReturn

import click
import platformdirs

from mcpx.ops import by_name

from ._call_stream import EX_TEMPFAIL, parked, streamed_call
from ._context import load_settings, settings_options
from ._daemon import DaemonClient
from ._views import fail_reply

__all__ = ["EX_LIMIT", "exec_command", "run_command", "scripts_command", "show_run"]

EX_LIMIT: Final = 124  # as timeout(1): a limit stopped the script
_SCRIPTS: Final = Path(".mcpx") / "scripts"


def _send(
    params: dict[str, Any], code: str, name: str, argv: tuple[str, ...], inline: bool, **kw: Any
) -> NoReturn:
    loaded = load_settings(params)
    client = DaemonClient(loaded, profile=kw.get("profile"))
    if kw.get("typecheck"):
        _typecheck(client, code, name)
    body: dict[str, Any] = {"code": code, "name": name, "args": list(argv), "inline": inline}
    if kw.get("timeout") is not None:
        body["timeoutSec"] = kw["timeout"]
    response = streamed_call(client, "POST", by_name("exec").path, body)
    if response.status_code >= 400:
        fail_reply(response)
    doc = response.json()
    if response.status_code == 202:  # stopped on a question; the script goes on
        if kw.get("as_json"):
            click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        parked(doc)
        raise SystemExit(EX_TEMPFAIL)
    show_run(doc, bool(kw.get("as_json")))


def show_run(doc: dict[str, Any], as_json: bool) -> NoReturn:
    """A script run's outcome, as ``mcpx exec`` shows it, and its exit status."""
    code = int(doc.get("exitCode", 1))
    if as_json:
        shown = {
            "ok": doc.get("ok"),
            "exitCode": code,
            "durationMs": doc.get("durationMs"),
            "result": doc["result"] if "result" in doc else doc.get("stdout", ""),
            "logs": doc.get("stderr", ""),
        }
        if doc.get("limit"):
            shown["limit"] = doc["limit"]
        click.echo(json.dumps(shown, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(str(doc.get("stdout") or ""))
        sys.stdout.flush()
        sys.stderr.write(str(doc.get("stderr") or ""))
    if doc.get("limit"):
        raise SystemExit(EX_LIMIT)
    raise SystemExit(code if 0 <= code < 256 else 128 + abs(code) % 128)


def _typecheck(client: DaemonClient, code: str, name: str) -> None:
    """mypy --strict on the script against the client the daemon would give it: a
    wrong tool, argument or type is found before anything runs (exit 2)."""
    try:
        import mypy  # noqa: F401  (only whether it is there)
    except ImportError:
        raise click.UsageError("--typecheck needs mypy: pip install mypy") from None
    response = client.call("GET", by_name("exec.client").path)
    if response.status_code >= 400:
        fail_reply(response)
    with tempfile.TemporaryDirectory(prefix="mcpx-typecheck-") as tmp:
        root = Path(tmp)
        for rel, text in response.json()["files"].items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        script = root / (Path(name).name if name.endswith(".py") else "script.py")
        script.write_text(code)
        checked = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
            cwd=root,
            env={**os.environ, "MYPYPATH": str(root)},
            capture_output=True,
            text=True,
            check=False,
        )
    if checked.returncode != 0:
        click.echo(checked.stdout.replace(str(script), name), err=True, nl=False)
        click.echo("mcpx: --typecheck found problems; the script was not run", err=True)
        raise SystemExit(2)


def _common(f: Any) -> Any:
    f = settings_options(f)
    f = click.option("--json", "as_json", is_flag=True, help="{ok, exitCode, durationMs, ...}")(f)
    f = click.option("--timeout", type=float, default=None, help="This run's limit, seconds.")(f)
    f = click.option("--typecheck", is_flag=True, help="Run mypy --strict on it first.")(f)
    f = click.option("--profile", metavar="NAME", default=None, help="Only this profile's.")(f)
    return f


@click.command("exec", context_settings={"ignore_unknown_options": True})
@click.option("-c", "inline_code", metavar="CODE", default=None, help="The script as a string.")
@click.argument("file", required=False)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
@_common
def exec_command(
    inline_code: str | None, file: str | None, argv: tuple[str, ...], **params: Any
) -> None:
    """Run a Python script that calls tools: FILE, - (stdin) or -c CODE.

    The script imports the servers (`from mcpx_tools import demo`), calls their tools
    (`demo.echo(text="hi")`) and prints what matters; a main() is called and its
    return value printed as JSON.
    """
    kw = {k: params.pop(k) for k in ("as_json", "timeout", "typecheck", "profile")}
    if inline_code is not None:
        rest = (file, *argv) if file is not None else argv
        _send(params, inline_code, "<string>", rest, True, **kw)
    if file is None:
        raise click.UsageError("give a script: FILE, - for stdin, or -c CODE")
    if file == "-":
        _send(params, sys.stdin.read(), "<stdin>", argv, False, **kw)
    try:
        code = Path(file).read_text()
    except OSError as exc:
        raise click.UsageError(f"cannot read {file}: {exc.strerror}") from None
    _send(params, code, file, argv, False, **kw)


@click.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
@_common
def run_command(name: str, argv: tuple[str, ...], **params: Any) -> None:
    """Run the named script .mcpx/scripts/NAME.py (see mcpx scripts)."""
    kw = {k: params.pop(k) for k in ("as_json", "timeout", "typecheck", "profile")}
    found = named_scripts().get(name)
    if found is None:
        known = ", ".join(sorted(named_scripts())) or "none"
        raise click.UsageError(f"no script named {name!r} (known: {known}); see mcpx scripts")
    _send(params, found.read_text(), str(found), argv, False, **kw)


@click.command("scripts")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def scripts_command(as_json: bool) -> None:
    """List the named scripts mcpx run can run, with their first docstring line."""
    found = named_scripts()
    rows = [{"name": n, "path": str(p), "summary": _summary(p)} for n, p in sorted(found.items())]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no scripts: put them in {_SCRIPTS}/NAME.py or {_user_scripts()}")
    for row in rows:
        click.echo(f"{row['name']:<20} {row['summary']}")


def named_scripts(start: Path | None = None) -> dict[str, Path]:
    """Every named script, by name: the nearest directory's first."""
    here = (start or Path.cwd()).resolve()
    found: dict[str, Path] = {}
    for folder in [*(d / _SCRIPTS for d in (here, *here.parents)), _user_scripts()]:
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else ():
            found.setdefault(path.stem, path)
    return found


def _user_scripts() -> Path:
    return Path(platformdirs.user_config_dir("mcpx")) / "scripts"


def _summary(path: Path) -> str:
    try:
        doc = ast.get_docstring(ast.parse(path.read_text()))
    except (OSError, SyntaxError, ValueError):
        return "(unreadable)"
    return doc.strip().splitlines()[0] if doc else ""
