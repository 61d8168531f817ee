"""run_script with real child processes: output, main()'s result, failures, and every limit
ending a run (the whole process tree gone afterwards)."""

from __future__ import annotations

import os
import resource
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.exec import ExecLimits, RunOutcome, bwrap_path, run_script
from support.waiting import await_until

pytestmark = pytest.mark.anyio

LIMITS = ExecLimits(timeout=30, max_output=64 * 1024, memory=512 << 20, cpu=20, processes=32)
TOOLS = {
    "mcpx_tools/__init__.py": "from . import demo\n__all__ = ['demo', 'ToolError']\n"
    "class ToolError(Exception):\n    pass\n",
    "mcpx_tools/demo.py": "def echo(text):\n    return text\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _run(code: str, tmp_path: Path, **given: Any) -> RunOutcome:
    options: dict[str, Any] = {
        "filename": "script.py",
        "argv": [],
        "inline": False,
        "package": TOOLS,
        "run_id": "run-1",
        "daemon_socket": tmp_path / "no-daemon.sock",
        "sandbox": "none",
        "limits": LIMITS,
        "work_root": tmp_path,
    }
    return await run_script(code, **{**options, **given})


def _alive(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(entry))
    return found


def _run_dirs(root: Path) -> list[Path]:
    return list(root.glob("mcpx-run-*"))


def _tree_script(marker: str) -> str:
    """A script starting a grandchild that leaves the session (setsid), then hanging."""
    return (
        "import subprocess, sys, time\n"
        "child = 'import subprocess, time; "
        f'subprocess.Popen(["setsid", "sleep", "{marker}"]); time.sleep(600)\'\n'
        "subprocess.Popen([sys.executable, '-c', child])\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )


async def test_stdout_stderr_argv_and_main_result(tmp_path: Path) -> None:
    code = (
        "import sys\nprint('to out', sys.argv)\nprint('to err', file=sys.stderr)\n"
        "async def main():\n    return {'echo': demo.echo(text='hi'), 'n': 2}\n"
    )
    out = await _run(code, tmp_path, argv=["a", "b c"], inline=True, filename="<inline>")
    assert out.exit_code == 0, out.stderr
    assert out.stdout.splitlines() == ["to out ['<inline>', 'a', 'b c']", '{"echo": "hi", "n": 2}']
    assert out.stderr == "to err\n"
    assert out.returned and out.result == {"echo": "hi", "n": 2}
    assert out.limit is None and not out.truncated
    assert not _run_dirs(tmp_path), "the run dir is removed afterwards"


async def test_no_main_returns_nothing_and_file_mode_has_no_globals(tmp_path: Path) -> None:
    out = await _run("print('demo' in globals())\nfrom mcpx_tools import demo\n", tmp_path)
    assert (out.exit_code, out.stdout, out.returned) == (0, "False\n", False)


async def test_syntax_error_exits_2_with_file_line_and_caret(tmp_path: Path) -> None:
    out = await _run("x = 1\ny = (1 +\n", tmp_path, filename="bad.py")
    assert out.exit_code == 2
    assert 'File "bad.py", line 2' in out.stderr
    assert "y = (1 +" in out.stderr and "^" in out.stderr and "SyntaxError" in out.stderr


async def test_exception_exits_1_with_traceback_and_system_exit_honoured(tmp_path: Path) -> None:
    out = await _run("def f():\n    raise KeyError('nope')\nf()\n", tmp_path)
    assert out.exit_code == 1
    assert out.stderr.startswith("Traceback") and "line 2, in f" in out.stderr
    assert "KeyError: 'nope'" in out.stderr and "bootstrap" not in out.stderr
    assert (await _run("raise SystemExit(7)", tmp_path)).exit_code == 7


async def test_main_returning_non_json_is_named(tmp_path: Path) -> None:
    out = await _run("def main():\n    return {1, 2}\n", tmp_path)
    assert out.exit_code == 1 and "main() returned a set, which is not JSON" in out.stderr


async def test_bad_package_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relative path inside it"):
        await _run("pass", tmp_path, package={"../evil.py": ""})


async def test_env_has_no_inherited_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPX_TEST_SECRET", "s3cr3t-value")
    code = "import os, json\ndef main():\n    return dict(os.environ)\n"
    out = await _run(code, tmp_path, run_id="run-env")
    assert out.returned, out.stderr
    env = out.result
    assert "MCPX_TEST_SECRET" not in env and "s3cr3t-value" not in str(env)
    assert env["MCPX_RUN_ID"] == "run-env" and env["MCPX_RUN_SOCKET"].endswith("run.sock")
    assert set(env) <= {
        *("PATH", "HOME", "LANG", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"),
        *("MCPX_RUN_SOCKET", "MCPX_RUN_ID", "MCPX_RUN_DIR", "LC_CTYPE"),
    }


async def test_timeout_kills_the_whole_tree(tmp_path: Path) -> None:
    marker = f"{4000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    limits = ExecLimits(timeout=3, max_output=1024, memory=512 << 20, cpu=20, processes=32)
    out = await _run(_tree_script(marker), tmp_path, limits=limits)
    assert out.limit == "timeout" and out.exit_code == 128 + 9
    assert "the script was stopped: it ran past exec.timeout (3s)" in out.stderr
    assert out.stdout == "started\n"
    assert _alive(marker) == [], "the grandchild (in a session of its own) is gone"


async def test_cancellation_kills_the_whole_tree(tmp_path: Path) -> None:
    marker = f"{5000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, _tree_script(marker), tmp_path)
            await await_until(lambda: _alive(marker), timeout=30, message="the grandchild")
            scope.cancel()
    assert scope.cancelled_caught
    assert _alive(marker) == []
    assert not _run_dirs(tmp_path)


async def test_a_gigabyte_of_output_is_cut_with_memory_bounded(tmp_path: Path) -> None:
    code = (
        "import sys\nblock = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(block)\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = await _run(code, tmp_path)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
    assert out.truncated and out.limit == "output"
    assert out.stdout.startswith("x" * LIMITS.max_output + "\n[mcpx: stdout cut at 65536 bytes")
    assert len(out.stdout) < LIMITS.max_output + 200
    assert grown < 64 * 1024, f"the test process grew by {grown} KiB reading it"


async def test_output_past_the_cap_is_cut_and_the_run_goes_on(tmp_path: Path) -> None:
    code = "print('y' * 100000)\ndef main():\n    return 'done'\n"
    out = await _run(code, tmp_path)
    assert out.truncated and out.limit is None and out.exit_code == 0
    assert out.returned and out.result == "done"
    assert "more bytes dropped]" in out.stdout


async def test_memory_hog_is_stopped_naming_memory(tmp_path: Path) -> None:
    limits = ExecLimits(timeout=30, max_output=1024, memory=256 << 20, cpu=20, processes=32)
    out = await _run("hog = bytearray(1 << 30)\n", tmp_path, limits=limits)
    assert out.exit_code == 1 and out.limit == "memory"
    assert "MemoryError" in out.stderr and "it ran out of memory (exec.memory" in out.stderr


async def test_cpu_hog_is_stopped_naming_cpu(tmp_path: Path) -> None:
    limits = ExecLimits(timeout=60, max_output=1024, memory=256 << 20, cpu=1, processes=32)
    out = await _run("while True:\n    pass\n", tmp_path, limits=limits)
    assert out.limit == "cpu" and out.exit_code == 128 + 24
    assert "more CPU time than exec.cpu allows (1s)" in out.stderr


async def test_spawning_past_the_process_limit_is_stopped(tmp_path: Path) -> None:
    # Root ignores RLIMIT_NPROC: the bound only holds for the unprivileged uid the sandbox
    # gives a script, so the test runs under bubblewrap when root.
    if os.geteuid() == 0 and bwrap_path() is None:
        pytest.fail("bubblewrap is missing: run scripts/peers.sh")
    sandbox = "bwrap" if os.geteuid() == 0 else "none"
    code = (
        "import subprocess\nkids = []\nfor _ in range(200):\n"
        "    kids.append(subprocess.Popen(['sleep', '30']))\n"
    )
    limits = ExecLimits(timeout=60, max_output=4096, memory=256 << 20, cpu=20, processes=16)
    out = await _run(code, tmp_path, limits=limits, sandbox=sandbox)
    assert out.exit_code == 1 and out.limit == "processes", out.stderr
    assert "BlockingIOError" in out.stderr
    assert "more than exec.processes (16) processes" in out.stderr
