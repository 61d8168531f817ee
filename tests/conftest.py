"""Session-wide test fixtures.

The official schemas must be found before any test runs: a missing copy stops
the session with a message (never a skip).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.schemas import FrameLog, SchemasMissing, schema_root


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        schema_root()
    except SchemasMissing as exc:
        pytest.exit(str(exc), returncode=3)


@pytest.fixture
def sent_frames() -> Iterator[FrameLog]:
    """Record every frame mcpx sends in the test; all must be valid at the end."""
    log = FrameLog()
    yield log
    log.assert_valid()
