"""The generated client passes ``mypy --strict``, and so lets mypy catch a wrong call.

The tools are the live ones of two real upstreams behind a real daemon: mcpx's demo
server and npm's server-everything (stdio), read from ``GET /v1/tools``. The package is
written to a temporary directory and checked with a script that uses it well (passes)
and one that passes an argument of the wrong type (fails, naming it).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpx.exec import generate_package
from support.daemon import Daemon, running_daemon
from support.exec_client import DEMO, live_tools, mypy_strict, write_package
from support.peers import everything_server_command

GOOD = """\
import asyncio

from mcpx_tools import UNSET, ToolError, demo, everything, raw_of


def total(a: float, b: float) -> float:
    result = demo.add(a=a, b=b)
    return result["sum"] + len(str(raw_of(result)))


async def fan_out() -> list[object]:
    calls = [demo.aio.echo(text=str(i)) for i in range(3)]
    return list(await asyncio.gather(*calls))


def weather() -> str:
    report = everything.get_structured_content(location="Chicago")
    return f"{report['conditions']}: {report['temperature'] + 1.0}"


def steps(n: int | None) -> object:
    try:
        return demo.slow(seconds=0.1, steps=UNSET if n is None else n)
    except ToolError as exc:
        return exc.raw
"""

BAD = """\
from mcpx_tools import demo, everything

demo.add(a="one", b=2)
everything.get_structured_content(location="Paris")
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    argv = everything_server_command("stdio")
    servers = {"demo": DEMO, "everything": {"command": argv[0], "args": argv[1:]}}
    with running_daemon(tmp_path_factory.mktemp("exec-mypy"), servers) as d:
        yield d


def test_generated_client_passes_mypy_strict(daemon: Daemon, tmp_path: Path) -> None:
    tools = live_tools(daemon)
    assert len(tools["everything"]) >= 5 and tools["demo"]
    assert any("outputSchema" in t for t in tools["everything"])  # a TypedDict return
    where = write_package(generate_package(tools), tmp_path)
    everything = (where / "mcpx_tools" / "everything.py").read_text()
    functions = [n.name for n in ast.parse(everything).body if isinstance(n, ast.FunctionDef)]
    assert len(functions) == len(tools["everything"])
    (where / "good.py").write_text(GOOD)
    (where / "bad.py").write_text(BAD)

    good = mypy_strict(where, "mcpx_tools", "good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = mypy_strict(where, "bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert 'Argument "a" to "add" has incompatible type "str"; expected "float"' in bad.stdout
    assert 'Argument "location" to "get_structured_content" has incompatible type' in bad.stdout
    assert "Found 2 errors in 1 file" in bad.stdout


def test_generated_client_imports_and_evaluates(daemon: Daemon, tmp_path: Path) -> None:
    """The TypedDicts and annotations are evaluated at import: every module imports."""
    where = write_package(generate_package(live_tools(daemon)), tmp_path)
    code = (
        "import typing, mcpx_tools as p\n"
        "for m in (p.demo, p.everything):\n"
        "    for name in m.__all__:\n"
        "        obj = getattr(m, name)\n"
        "        if callable(obj) and not isinstance(obj, type):\n"
        "            typing.get_type_hints(obj, vars(m))\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=where,
        env={"PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
