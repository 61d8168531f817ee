"""The call log in-process: redaction of secret-looking keys and error texts, trace ids,
``since``, batch writes off the call's path, pruning by rows while running, a full disk
that drops records and never raises into the caller."""

from __future__ import annotations

import sqlite3
import stat
import time
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from mcpx.config import StateDiskFull
from mcpx.ops import CallRecord, open_call_log
from mcpx.ops._call_record import redact_error, redact_payload, trace_id
from mcpx.ops._errors import OpError
from mcpx.ops._handle_log import parse_since
from mcpx.ops._operations import SINCE_PATTERN
from support.upstream import settings


def _record(n: int, **kw: object) -> CallRecord:
    fields: dict[str, object] = {
        "ts": time.time(),
        "door": "v1",
        "server": "s",
        "method": "tools/call",
        "outcome": "ok",
        "queue_ms": 1.0,
        "upstream_ms": float(n),
        "tool": f"t{n}",
    }
    return CallRecord(**(fields | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "key",
    [
        "apiToken",
        "token",
        "password",
        "x-api-key",
        "apiKey",
        "key",
        "Authorization",
        "cookie",
        "client_secret",
        "AWS_SECRET_ACCESS_KEY",
        "sessionId",
        "privateKey",
    ],
)
def test_secret_looking_keys_are_hidden_at_any_depth(key: str) -> None:
    given = {"text": "hi", key: "s3cr3t", "nested": [{key: "s3cr3t", "keep": 1}]}
    assert redact_payload(given) == {
        "text": "hi",
        key: "***",
        "nested": [{key: "***", "keep": 1}],
    }


@pytest.mark.parametrize("key", ["text", "keyboard", "monkey_count", "name", "keys"])
def test_plain_keys_are_kept(key: str) -> None:
    assert redact_payload({key: "v"}) == {key: "v"}


def test_error_texts_lose_their_secrets() -> None:
    text = (
        "401 from https://u:pw@api.example/x?access_token=abc123 with Bearer eyJhbGciOi; "
        "password=hunter22 token: 'qwerty'"
    )
    shown = redact_error(text)
    for secret in ("pw@", "abc123", "eyJhbGciOi", "hunter22", "qwerty"):
        assert secret not in shown, shown
    assert "api.example" in shown


def test_trace_id_from_traceparent() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert trace_id({"traceparent": parent}) == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id({"traceparent": "garbage"}) is None
    assert trace_id(None) is None


def test_since() -> None:
    now = 1_000_000.0
    assert parse_since("90s", now) == now - 90
    assert parse_since("30m", now) == now - 1800
    assert parse_since("2d", now) == now - 2 * 86400
    assert parse_since("2026-01-31T12:00:00+00:00") == 1769860800.0
    with pytest.raises(OpError) as refused:
        parse_since("yesterday")
    assert refused.value.status == 400
    # A day past its month's end means that month's last day.
    assert parse_since("2026-02-31T00:00Z") == parse_since("2026-02-28T00:00Z")


@settings_(max_examples=300, deadline=None)
@given(st.from_regex(SINCE_PATTERN, fullmatch=True))
def test_every_since_the_schema_admits_is_read(text: str) -> None:
    """/v1/log and /v1/stats publish SINCE_PATTERN: a value it admits is never refused
    later by the handler (schemathesis found one, with Unicode digits)."""
    parse_since(text)


@pytest.mark.anyio
async def test_batches_are_written_and_pruned_by_rows(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    async with open_call_log(path, settings(log__keepRows="50")) as calls:
        for n in range(1200):  # more than one prune interval
            calls.record(_record(n))
        await calls.wait_written()
        rows = await calls.select("1", [], "ORDER BY id ASC")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert calls.dropped == 0
    # Pruned after the 1000th row, not per call: at most 50 + the rows since.
    assert 50 <= len(rows) < 1200
    assert rows[-1]["tool"] == "t1199"
    db = sqlite3.connect(path)
    (count,) = db.execute("SELECT count(*) FROM calls").fetchone()
    db.close()
    assert count == len(rows)


@pytest.mark.anyio
async def test_a_full_disk_drops_records_and_never_fails_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "calls.db"
    async with open_call_log(path, settings()) as calls:
        db = calls._db
        assert db is not None

        def full(*_: object) -> None:
            raise StateDiskFull(path)  # what open_state_db's connection raises (and logs)

        calls._db = type("FullDb", (), {"execute": staticmethod(full)})()
        for n in range(5):
            calls.record(_record(n))  # never raises
        with anyio.fail_after(10):
            await calls.wait_written()
        assert calls.dropped == 5
        calls._db = db  # room again: the next records are kept
        calls.record(_record(99))
        await calls.wait_written()
        rows = await calls.select("1", [], "")
    assert [r["tool"] for r in rows] == ["t99"]
