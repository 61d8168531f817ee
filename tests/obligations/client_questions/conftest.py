"""Fixtures shared by the F1 obligation tests in this directory: one real daemon
with a legacy, a modern and a 2025-06-18 scripted asker (``askers``), started once
for the whole directory (package scope). The helpers are in ``helpers``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from obligations.client_questions.helpers import OLDER, _asker, _entry, _problems
from support.daemon import Daemon, running_daemon

# -- a daemon with a legacy and a modern asker ----------------------------------------


@pytest.fixture(scope="package")
def askers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path, Path]]:
    tmp = tmp_path_factory.mktemp("f1-askers")
    legacy, legacy_log = _asker(tmp, "legacy")
    modern, modern_log = _asker(tmp, "modern", modern=True)
    older, older_log = _asker(tmp, "older", rev=OLDER)
    servers = {"legacy": _entry(legacy), "modern": _entry(modern), "older": _entry(older)}
    with running_daemon(tmp, servers) as d:
        yield d, legacy_log, modern_log
    problems = [p for log in (legacy_log, modern_log, older_log) for p in _problems(log)]
    assert not problems, "frames mcpx sent upstream are invalid:\n" + "\n".join(problems[:20])
