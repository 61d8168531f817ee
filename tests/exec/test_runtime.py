"""The generated client's runtime against a real daemon, from a real child Python.

The daemon serves mcpx's demo server. Its live tools (``GET /v1/tools``) are generated
into ``mcpx_tools`` in a temporary directory, and each test runs a script in a child
``python -S`` (no site-packages: the runtime must need nothing but the standard
library) whose environment names the daemon's socket and a run id, as ``mcpx exec``
gives a script. The script prints what it saw as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpx import ops
from mcpx.exec import RUN_HEADER, RUN_ID_ENV, RUN_SOCKET_ENV, generate_package
from support.daemon import Daemon, running_daemon
from support.exec_client import DEMO, live_tools, write_package


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("exec-runtime"), {"demo": DEMO}) as d:
        yield d


@pytest.fixture(scope="module")
def package(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_package(generate_package(live_tools(daemon)), tmp_path_factory.mktemp("pkg"))


def run_script(
    package: Path, code: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=package,
        env={"PYTHONPATH": str(package), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def seen(daemon: Daemon, package: Path, code: str) -> Any:
    """What the script prints last (JSON), run as a script of run ``r1``."""
    env = {RUN_SOCKET_ENV: str(daemon.info["socket"]), RUN_ID_ENV: "r1"}
    done = run_script(package, "import json\nfrom mcpx_tools import *\n" + code, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_text_results_are_unwrapped_and_keep_the_envelope(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "out = {}\n"
        "for text in ['hi', '{\"a\": [1, 2]}', '42', '2.5', 'true', 'NaN']:\n"
        "    v = demo.echo(text=text)\n"
        "    out[text] = [v, type(v).__name__, raw_of(v)]\n"
        "out['run'] = run_id()\n"
        "print(json.dumps(out))\n",
    )
    assert got.pop("run") == "r1"
    assert got["hi"][:2] == ["hi", "RawStr"]
    assert got["hi"][2]["content"] == [{"type": "text", "text": "hi"}]
    assert got['{"a": [1, 2]}'][:2] == [{"a": [1, 2]}, "RawDict"]
    assert got["42"][:2] == [42, "RawInt"]
    assert got["2.5"][:2] == [2.5, "RawFloat"]
    assert got["true"] == [True, "bool", None]  # bool cannot carry .raw: plain
    assert got["NaN"][:2] == ["NaN", "RawStr"]  # not JSON here: the text


def test_structured_content_and_several_blocks(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "s = demo.add(a=2, b=3.5)\n"
        "r = demo.readme()\n"
        "print(json.dumps([s, type(s).__name__, raw_of(s)['structuredContent'],"
        " [b['type'] for b in r], type(r).__name__]))\n",
    )
    assert got == [{"sum": 5.5}, "RawDict", {"sum": 5.5}, ["resource_link", "resource"], "RawList"]


def test_optional_arguments_are_sent_only_when_given(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "print(json.dumps([demo.slow(seconds=0), demo.slow(seconds=0, steps=2),"
        " demo.slow(seconds=0, steps=UNSET)]))\n",
    )
    assert got == ["slept 0 s in 5 steps", "slept 0 s in 2 steps", "slept 0 s in 5 steps"]


@pytest.mark.obligation("C-ERR-7")
def test_is_error_raises_tool_error_with_its_text(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "try:\n"
        "    demo.add(a=1e308, b=1e308)\n"
        "except ToolError as e:\n"
        "    print(json.dumps([str(e), e.server, e.tool, e.raw['isError'],"
        " isinstance(e, McpxError)]))\n",
    )
    message, server, tool, is_error, is_base = got
    assert message == "demo/add: add: the sum is too large to represent in JSON"
    assert (server, tool, is_error, is_base) == ("demo", "add", True, True)


def test_bad_arguments_raise_argument_error_naming_them(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "from mcpx_tools import _runtime\n"
        "out = []\n"
        "for args in ({'text': 5}, {}):\n"
        "    try:\n"
        "        _runtime.call('demo', 'echo', args)\n"
        "    except ArgumentError as e:\n"
        "        out.append([e.argument, e.code, str(e)])\n"
        "try:\n"
        "    demo.echo(text=object())\n"
        "except ArgumentError as e:\n"
        "    out.append([e.argument, e.code, str(e)])\n"
        "print(json.dumps(out))\n",
    )
    wrong_type, missing, not_json = got
    assert wrong_type[:2] == ["text", "invalid_input"]
    assert "text" in wrong_type[2] and "'string'" in wrong_type[2]
    assert missing[0] is None and "'text' is a required property" in missing[2]
    assert not_json[0] == "text" and "cannot be sent as JSON" in not_json[2]


def test_unknown_tool_and_server_name_what_exists(daemon: Daemon, package: Path) -> None:
    got = seen(
        daemon,
        package,
        "from mcpx_tools import _runtime\n"
        "out = []\n"
        "for server, tool in (('demo', 'nope'), ('nowhere', 'echo')):\n"
        "    try:\n"
        "        _runtime.call(server, tool, {})\n"
        "    except UnknownTool as e:\n"
        "        out.append([e.code, e.known, str(e)])\n"
        "print(json.dumps(out))\n",
    )
    tool, server = got
    assert tool[0] == "unknown_tool" and {"echo", "add", "slow"} <= set(tool[1])
    assert "nope" in tool[2]
    assert server[:2] == ["unknown_server", ["demo"]] and "nowhere" in server[2]


def test_gathered_calls_run_at_once(daemon: Daemon, package: Path) -> None:
    started = time.monotonic()
    got = seen(
        daemon,
        package,
        "import asyncio\n"
        "async def main():\n"
        "    slow = [demo.aio.slow(seconds=2, steps=1) for _ in range(5)]\n"
        "    sums = [demo.aio.add(a=i, b=1) for i in range(5)]\n"
        "    return await asyncio.gather(*slow, *sums)\n"
        "print(json.dumps(asyncio.run(main())))\n",
    )
    took = time.monotonic() - started
    assert got == ["slept 2 s in 1 step"] * 5 + [{"sum": i + 1} for i in range(5)]
    assert took < 9, f"5 calls of 2 s each took {took:.1f} s: not at once"


def test_without_the_daemon_the_error_says_why(
    daemon: Daemon, package: Path, tmp_path: Path
) -> None:
    code = (
        "from mcpx_tools import demo, McpxError\n"
        "try:\n"
        "    demo.echo(text='x')\n"
        "except McpxError as e:\n"
        "    print(e)\n"
    )
    unset = run_script(package, code, {})
    assert unset.returncode == 0, unset.stderr
    assert "MCPX_RUN_SOCKET is not set" in unset.stdout and "mcpx exec" in unset.stdout
    gone = run_script(package, code, {RUN_SOCKET_ENV: str(tmp_path / "no.sock")})
    assert gone.returncode == 0, gone.stderr
    assert "could not be reached" in gone.stdout and "no.sock" in gone.stdout


def test_the_runtime_names_the_header_the_daemon_reads() -> None:
    # The runtime runs alone in the sandbox (no mcpx to import), so it spells the
    # header itself: it must be the operation table's.
    assert RUN_HEADER == ops.RUN_HEADER
