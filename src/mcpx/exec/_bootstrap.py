"""The child's entry: run one script as ``__main__``, inside its limits.

Run as ``python -I -u -B _bootstrap.py SETTINGS SCRIPT [ARGS...]`` (under bubblewrap this
file is bound read-only beside the run dir, and only the Python runtime is visible). It
imports nothing of mcpx: it must work with the standard library alone.

SETTINGS is a JSON object: ``name`` (the script's file name in messages), ``inline``,
``memory``/``cpu``/``processes``/``fsize`` (rlimits) and ``uid`` (when started as root:
the unprivileged uid the script runs as, since root ignores RLIMIT_NPROC).

Exits: the script's own (``SystemExit`` honoured); 2 for a syntax error (file, line and a
caret on stderr); 1 for an uncaught exception (its traceback on stderr). A limit that ended
the run is named in ``$MCPX_RUN_DIR/limit`` ("memory" or "processes"; the runner tells cpu
and timeout by the exit itself). ``main()``'s return value, when not None, goes to stdout
as JSON and to ``$MCPX_RUN_DIR/result.json``.
"""

from __future__ import annotations

import errno
import inspect
import json
import linecache
import os
import resource
import sys
import traceback
import types
from typing import Any

_ORIGIN = os.getpid()  # forked children run this file's tail too: only the origin reports


def _drop_root(uid: int) -> None:
    """Become ``uid`` for good (saved ids too), with no supplementary groups."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _own_processes() -> int:
    """Processes of this uid already counted against RLIMIT_NPROC (all of them outside a pid
    namespace; in bubblewrap's, its init and this one)."""
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                continue  # gone meanwhile
    return count


def _set_limits(settings: dict[str, Any]) -> None:
    cpu = int(settings["cpu"])
    # SIGXCPU at the soft limit, SIGKILL a second later if the script ignores it.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (int(settings["memory"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(settings["fsize"]),) * 2)
    nproc = _own_processes() + int(settings["processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _note_limit(limit: str) -> None:
    try:
        with open(os.path.join(os.environ["MCPX_RUN_DIR"], "limit"), "a") as out:
            out.write(limit + "\n")
    except OSError:
        pass  # a full disk or a closed run dir: the exit still says the script failed


def _limit_of(exc: BaseException) -> str | None:
    """The limit an uncaught exception shows was hit, looking down its chain."""
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return None
        if isinstance(seen, MemoryError):
            return "memory"
        if isinstance(seen, BlockingIOError) and seen.errno == errno.EAGAIN:
            return "processes"  # fork()/spawn refused: RLIMIT_NPROC
        seen = seen.__cause__ or seen.__context__
    return None


def _server_namespaces() -> dict[str, types.ModuleType]:
    """Every server namespace of the generated package: its ``__all__`` names that are modules."""
    try:
        import mcpx_tools  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        if exc.name != "mcpx_tools":
            raise
        return {}
    names = getattr(mcpx_tools, "__all__", [])
    found = {n: getattr(mcpx_tools, n, None) for n in names}
    return {n: m for n, m in found.items() if isinstance(m, types.ModuleType)}


def _returned(value: Any) -> None:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"main() returned a {type(value).__name__}, which is not JSON: {exc}"
        ) from exc
    print(text)
    with open(os.path.join(os.environ["MCPX_RUN_DIR"], "result.json"), "w") as out:
        out.write(text)


def _run(code: str, name: str, inline: bool) -> None:
    try:
        compiled = compile(code, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        sys.stderr.write("".join(traceback.format_exception_only(exc)))
        raise SystemExit(2) from None
    # Tracebacks show the script's lines whatever its name (inline code has no file).
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    module = types.ModuleType("__main__")
    module.__file__ = name
    sys.modules["__main__"] = module
    if inline:
        vars(module).update(_server_namespaces())
    exec(compiled, vars(module))
    main = vars(module).get("main")
    if callable(main):
        value = main()
        if inspect.iscoroutine(value):
            import asyncio

            value = asyncio.run(value)
        if value is not None and os.getpid() == _ORIGIN:
            _returned(value)


def _script_frames(exc: BaseException) -> types.TracebackType | None:
    """The traceback from the script's first frame on (this file's frames are noise)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def main() -> None:
    settings = json.loads(sys.argv[1])
    if os.geteuid() == 0 and settings.get("uid") is not None:
        _drop_root(int(settings["uid"]))
    _set_limits(settings)
    os.chdir(os.environ["MCPX_RUN_DIR"])
    path, args = sys.argv[2], sys.argv[3:]
    with open(path, encoding="utf-8") as source:
        code = source.read()
    name = str(settings["name"])
    sys.argv = [name, *args]
    # -I ignores PYTHONPATH: the generated package's dir is put on the path here.
    sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    try:
        _run(code, name, bool(settings["inline"]))
    except SystemExit:
        raise
    except BaseException as exc:  # the script's own failure: told, never re-raised
        limit = _limit_of(exc)
        if limit is not None:
            _note_limit(limit)
        traceback.print_exception(type(exc), exc, _script_frames(exc))
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
