"""Every command the README marks is run, so the README cannot rot (issue 26, "The README").

The marker convention (HTML comments: GitHub renders nothing for them):

- A fenced code block runs when the line just before its opening fence is
  ``<!-- test: run -->`` (each command must exit 0) or ``<!-- test: exit N -->`` (each
  command must exit N, e.g. ``4`` for an unknown tool)::

      <!-- test: run -->
      ```bash
      mcpx servers
      mcpx call demo echo text=hello   # a comment is allowed
      ```

- In a marked block, each line starting with ``mcpx `` is one command, split as a POSIX
  shell would (quotes, ``# comments``) and run as ``python -m mcpx`` in README order;
  blank lines and ``#`` comment lines are skipped; any other line fails the test (a marked
  block is commands only, so nothing in it is silently left unrun).
- A ``<!-- test: ... -->`` comment that is not one of the two markers, or not followed by
  a fence, fails the test; so does a README with no marked command (a test that runs
  nothing proves nothing).

The commands run against one real daemon (``support.daemon.running_daemon``) with its own
state dir and a config whose one upstream is the demo server, named ``demo``, as on a fresh
machine with the embedded default, and in the profile ``ops`` as well as ``default`` (so
``--profile ops`` has something to show); its working directory is the daemon's home, its
environment names that state dir and config. ``HOME`` is a fresh directory for each block
(``XDG_CONFIG_HOME`` and ``APPDATA`` unset), shared by the block's commands in order: what
``mcpx install-host`` or ``mcpx import`` read and write there is the block's own, never the
user's.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from support.daemon import Daemon, running_daemon

README: Final = Path(__file__).resolve().parents[2] / "README.md"
DEMO: Final = {
    "command": sys.executable,
    "args": ["-m", "mcpx", "demo-server"],
    "mcpx": {"profiles": ["ops"], "default": True},
}
# Where a host keeps its config, other than under HOME: unset, so HOME decides.
_HOST_DIRS: Final = ("XDG_CONFIG_HOME", "APPDATA")
_ANY_MARKER: Final = re.compile(r"^\s*<!--\s*test:")
_MARKER: Final = re.compile(r"^<!-- test: (?:run|exit (\d+)) -->$")
_FENCE: Final = re.compile(r"^(`{3,}|~{3,})")


@dataclass(frozen=True)
class Command:
    line: int  # 1-based, in README.md
    argv: tuple[str, ...]
    status: int
    block: int = 0  # which marked block, counted from 0

    def __str__(self) -> str:
        return f"README.md:{self.line}: {shlex.join(self.argv)}"


def marked_commands(text: str) -> list[Command]:
    """The commands of ``text``'s marked blocks, in order.

    Raises:
        ValueError: a marker is malformed or not followed by a fence, a block is not
            closed, or a marked block holds a line that is neither a command nor a comment.
    """
    lines = text.split("\n")
    out: list[Command] = []
    blocks = 0
    i = 0
    while i < len(lines):
        if not _ANY_MARKER.match(lines[i]):
            i += 1
            continue
        marker = _MARKER.match(lines[i].strip())
        if marker is None:
            raise ValueError(f"README.md:{i + 1}: not a test marker: {lines[i]!r}")
        fence = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise ValueError(f"README.md:{i + 1}: the marker is not followed by a fence")
        status = int(marker.group(1) or 0)
        block = blocks
        blocks += 1
        i += 2
        while i < len(lines) and not lines[i].startswith(fence.group(1)):
            out.extend(_command(lines[i], i + 1, status, block))
            i += 1
        if i == len(lines):
            raise ValueError(f"README.md:{i}: a marked block is never closed")
        i += 1
    return out


def _command(line: str, number: int, status: int, block: int) -> list[Command]:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return []
    if not stripped.startswith("mcpx "):
        raise ValueError(f"README.md:{number}: a marked block holds a non-mcpx line: {line!r}")
    return [Command(number, tuple(shlex.split(stripped, comments=True)), status, block)]


COMMANDS: Final = marked_commands(README.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with running_daemon(tmp_path_factory.mktemp("readme"), {"demo": DEMO}) as d:
        yield d


def test_the_readme_marks_commands_to_run() -> None:
    assert COMMANDS, f"{README} marks no command to run (<!-- test: run --> before a fence)"


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """A HOME directory per marked block, made on first use."""
    made: dict[int, Path] = {}

    def home(block: int) -> Path:
        if block not in made:
            made[block] = tmp_path_factory.mktemp(f"readme-home-{block}")
        return made[block]

    return home


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_each_marked_command_exits_as_the_readme_says(
    command: Command, daemon: Daemon, homes: Callable[[int], Path]
) -> None:
    env = {k: v for k, v in daemon.env().items() if k not in _HOST_DIRS}
    env["HOME"] = str(homes(command.block))
    done = subprocess.run(
        [sys.executable, "-m", "mcpx", *command.argv[1:]],
        cwd=daemon.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == command.status, (
        f"{command} exited {done.returncode}, not {command.status}\n"
        f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
    )
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<!-- test: run -->\n```bash\nmcpx servers\n# c\n\nmcpx tools  # x\n```\n", 2),
        ("<!-- test: exit 4 -->\n~~~sh\nmcpx call demo nope\n~~~\n", 1),
        ("```bash\nmcpx servers\n```\n<!-- other -->\n```bash\nmcpx tools\n```\n", 0),
    ],
)
def test_marked_blocks_are_found(text: str, expected: int) -> None:
    assert len(marked_commands(text)) == expected


def test_quoted_arguments_and_statuses_are_read() -> None:
    [command] = marked_commands("<!-- test: exit 4 -->\n```bash\nmcpx call d 'a b' x=\"c d\"\n```")
    assert command.argv == ("mcpx", "call", "d", "a b", "x=c d")
    assert command.status == 4
    assert command.line == 3


@pytest.mark.parametrize(
    "text",
    [
        "<!-- test: runn -->\n```bash\nmcpx servers\n```\n",
        "<!-- test: run -->\n\n```bash\nmcpx servers\n```\n",
        "<!-- test: run -->\n```bash\nmcpx servers\n",
        "<!-- test: run -->\n```bash\n./scripts/run\n```\n",
    ],
    ids=["misspelt", "not-before-a-fence", "unclosed", "not-mcpx"],
)
def test_a_marker_that_would_run_nothing_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"README\.md:\d+: "):
        marked_commands(text)
