"""``mcpx exec`` / ``mcpx run`` / ``/v1/exec`` end to end: a real daemon, real upstreams
(the demo and PyPI's ``mcp-server-time``), the script in the sandbox bubblewrap gives it.

The README's own script (the fenced ``python`` block under "Scripts") is the one run
first, so the README cannot show a script that does not work.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from support.daemon import Daemon, running_daemon
from support.peers import time_server_command

README: Final = Path(__file__).resolve().parents[2] / "README.md"
DEMO: Final = {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}


def _readme_script() -> str:
    text = README.read_text()
    section = text[text.index("## Scripts") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Scripts section shows no script"
    return found.group(1)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    time_argv = time_server_command()
    servers = {"demo": DEMO, "time": {"command": time_argv[0], "args": time_argv[1:]}}
    with running_daemon(tmp_path_factory.mktemp("exec"), servers) as d:
        yield d


def test_the_readme_script_calls_two_servers_in_parallel(daemon: Daemon) -> None:
    script = daemon.home / "cities.py"
    script.write_text(_readme_script())
    out = daemon.cli("exec", str(script))
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)  # main()'s return value, as JSON
    for zone in ("Europe/Paris", "Asia/Tokyo", "America/New_York"):
        assert zone in said, said
    # One call of each of the three to time, and the echo: all of this run, in the log.
    log = daemon.cli("log", "--json")
    doors = [json.loads(line)["door"] for line in log.stdout.splitlines() if line.strip()]
    assert doors.count("exec") >= 4, doors


def test_inline_code_sees_every_server_as_a_global(daemon: Daemon) -> None:
    out = daemon.cli(
        "exec", "-c", "print(demo.add(a=2, b=3)['sum']); import sys; print(sys.argv[1:])", "x"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "['x']"]


def test_json_wraps_the_outcome(daemon: Daemon) -> None:
    out = daemon.cli(
        "exec", "--json", "-c", "def main():\n    return {'n': demo.add(a=1, b=1)['sum']}"
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ok"] is True and doc["exitCode"] == 0
    assert doc["result"] == {"n": 2}
    assert isinstance(doc["durationMs"], int)
    assert "logs" in doc


def test_a_syntax_error_names_file_line_and_caret(daemon: Daemon) -> None:
    script = daemon.home / "broken.py"
    script.write_text("x = 1\nprint(x +)\n")
    out = daemon.cli("exec", str(script))
    assert out.returncode == 2
    assert "broken.py" in out.stderr and "line 2" in out.stderr and "^" in out.stderr


def test_an_exception_is_a_traceback_and_exit_1(daemon: Daemon) -> None:
    out = daemon.cli("exec", "-c", "demo.echo(text='a')\nraise ValueError('nope')")
    assert out.returncode == 1
    assert "ValueError: nope" in out.stderr and "Traceback" in out.stderr


def test_an_unknown_tool_is_named_with_the_tools_there_are(daemon: Daemon) -> None:
    out = daemon.cli("exec", "-c", "demo.nope_not_a_tool(x=1)")
    assert out.returncode == 1
    assert "has no tool 'nope_not_a_tool'" in out.stderr and "echo" in out.stderr, out.stderr


def test_a_tool_error_raises_tool_error(daemon: Daemon) -> None:
    code = (
        "from mcpx_tools import ToolError\n"
        "try:\n    time.get_current_time(timezone='Not/AZone')\n"
        "except ToolError as exc:\n    print('tool error:', exc.server, exc.tool)\n"
    )
    out = daemon.cli("exec", "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tool error: time get_current_time", out.stdout


def test_a_bad_argument_fails_naming_it(daemon: Daemon) -> None:
    code = (
        "from mcpx_tools import ArgumentError\n"
        "try:\n    demo.add(a='two', b=3)\n"
        "except ArgumentError as exc:\n    print('refused:', exc)\n"
    )
    out = daemon.cli("exec", "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused:") and "a" in out.stdout


def test_the_timeout_stops_the_run_with_124(daemon: Daemon) -> None:
    out = daemon.cli(
        "exec", "--timeout", "1", "-c", "import time\nwhile True:\n    time.sleep(0.05)"
    )
    assert out.returncode == 124, (out.returncode, out.stderr)
    assert "exec.timeout" in out.stderr or "timeout" in out.stderr


def test_a_timeout_over_the_maximum_is_clamped_and_said(daemon: Daemon) -> None:
    out = daemon.cli("exec", "--timeout", "999999", "-c", "print(1)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    assert "exec.maxTimeout" in out.stderr and "3600s" in out.stderr


def test_named_scripts_run_and_are_listed(daemon: Daemon) -> None:
    scripts = daemon.home / ".mcpx" / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / "greet.py").write_text(
        '"""Greet someone through the demo."""\nimport sys\nfrom mcpx_tools import demo\n'
        "print(demo.echo(text='hello ' + sys.argv[1]))\n"
    )
    listed = daemon.cli("scripts")
    assert listed.returncode == 0 and "greet" in listed.stdout
    assert "Greet someone through the demo." in listed.stdout
    ran = daemon.cli("run", "greet", "Ada")
    assert ran.returncode == 0, ran.stderr
    assert "hello Ada" in ran.stdout
    missing = daemon.cli("run", "nope")
    assert missing.returncode == 2 and "greet" in missing.stderr


def test_v1_exec_answers_the_run(daemon: Daemon) -> None:
    code = "from mcpx_tools import demo\ndef main():\n    return demo.add(a=20, b=22)['sum']"
    with daemon.http() as api:
        r = api.post("/v1/exec", json={"code": code})
    # A /v1 client that is not the CLI gets a sandboxed run (bubblewrap is installed here).
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    assert doc["ok"] is True and doc["result"] == 42 and doc["run"].startswith("run-")


def test_typecheck_finds_a_wrong_tool_before_anything_runs(daemon: Daemon) -> None:
    script = daemon.home / "typo.py"
    script.write_text(
        "from pathlib import Path\nfrom mcpx_tools import demo\n"
        "Path('ran').write_text('yes')\nprint(demo.ehco(text='hi'))\n"
    )
    out = daemon.cli("exec", "--typecheck", str(script))
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "ehco" in out.stderr and "typo.py" in out.stderr, out.stderr
    assert "was not run" in out.stderr
    good = daemon.home / "good.py"
    good.write_text("from mcpx_tools import demo\nprint(demo.echo(text='typed'))\n")
    ran = daemon.cli("exec", "--typecheck", str(good))
    assert ran.returncode == 0, ran.stderr
    assert "typed" in ran.stdout


def test_a_script_from_stdin(daemon: Daemon) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcpx", "exec", "-"],
        input="from mcpx_tools import demo\nprint(demo.echo(text='piped'))\n",
        cwd=daemon.home,
        env=daemon.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "piped" in out.stdout
