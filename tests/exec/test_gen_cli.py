"""``mcpx gen python``: the client written as a package, against a real daemon.

The command asks the daemon for the package (``GET /v1/exec/client``) and writes it
under ``--out``; mypy then checks a script against what was written. A directory the
command did not write is never overwritten; one it did is rewritten, stale files gone.
The handler behind the route is also run on its own, over a catalogue stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcpx.cli._gen import MARKER
from mcpx.ops._handle_gen import exec_client
from support.daemon import Daemon, running_daemon
from support.exec_client import DEMO, mypy_strict

SCRIPT = """\
from mcpx_tools import demo

total: float = demo.add(a=1, b=2)["sum"]
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("gen-cli"), {"demo": DEMO}) as d:
        yield d


def test_gen_python_writes_a_package_mypy_accepts(daemon: Daemon, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = daemon.cli("gen", "python", "--out", str(out))
    assert done.returncode == 0, done.stderr
    package = out / "mcpx_tools"
    written = {str(p.relative_to(out)) for p in package.iterdir()}
    expected = {"__init__.py", "_runtime.py", "py.typed", "demo.py", MARKER}
    assert written == {f"mcpx_tools/{name}" for name in expected}
    assert str(package / "demo.py") in done.stdout
    (out / "script.py").write_text(SCRIPT)
    checked = mypy_strict(out, "mcpx_tools", "script.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_gen_python_rewrites_only_its_own_files(daemon: Daemon, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert daemon.cli("gen", "python", "--out", str(out)).returncode == 0
    package = out / "mcpx_tools"
    # As if a server since removed had had a module, and the user had added a file.
    (package / "gone.py").write_text("x = 1\n")
    (package / "mine.txt").write_text("keep me\n")
    marker = json.loads((package / MARKER).read_text())
    marker["files"].append("mcpx_tools/gone.py")
    (package / MARKER).write_text(json.dumps(marker))
    (package / "demo.py").write_text("edited\n")

    again = daemon.cli("gen", "python", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert not (package / "gone.py").exists()
    assert (package / "mine.txt").read_text() == "keep me\n"
    assert "def echo(" in (package / "demo.py").read_text()


def test_gen_python_refuses_a_directory_it_did_not_write(daemon: Daemon, tmp_path: Path) -> None:
    package = tmp_path / "mcpx_tools"
    package.mkdir()
    (package / "__init__.py").write_text("# somebody else's\n")
    done = daemon.cli("gen", "python", "--out", str(tmp_path))
    assert done.returncode == 1
    assert "was not written by `mcpx gen python`" in done.stderr and MARKER in done.stderr
    assert (package / "__init__.py").read_text() == "# somebody else's\n"
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py"]


class _Catalogue:
    def __init__(self, entries: dict[str, dict[str, Any]]) -> None:
        self._entries = entries

    async def entries(self, names: list[str]) -> dict[str, dict[str, Any]]:
        return {n: self._entries[n] for n in names}


def test_handler_generates_from_the_catalogue_and_names_failed_servers() -> None:
    echo = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
    entries: dict[str, dict[str, Any]] = {
        "demo": {"tools": [echo]},
        "down": {"error": "it exited with status 1"},
    }
    ctx: Any = SimpleNamespace(catalogue=_Catalogue(entries), server_names=lambda: sorted(entries))
    doc = anyio.run(exec_client, ctx, {})
    assert doc["package"] == "mcpx_tools"
    assert "mcpx_tools/demo.py" in doc["files"] and "mcpx_tools/down.py" not in doc["files"]
    assert "def echo() -> _t.Any:" in doc["files"]["mcpx_tools/demo.py"]
    assert doc["errors"] == {"down": "it exited with status 1"}
