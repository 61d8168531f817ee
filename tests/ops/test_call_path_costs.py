"""What the call path no longer does per call, with what it answers unchanged: the call
log gathers records into one transaction (a reader, a full batch or the end cut the
gathering short), a catalogued tool is found by name without walking the listing, and
a per-request context is copied without ``dataclasses.replace``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.ops import CallRecord, OpContext, open_call_log
from mcpx.ops import _call_log as call_log_module
from mcpx.ops._call_log import CallLog
from mcpx.ops._catalogue import Catalogue, ToolsByName
from support.upstream import settings
from support.waiting import await_until

# Long enough that only a reader, a full batch or the end can have started a write.
_FOREVER = 3600.0


def _record(n: int) -> CallRecord:
    return CallRecord(
        ts=time.time(),
        door="passthrough",
        server="s",
        method="tools/call",
        outcome="ok",
        queue_ms=0.5,
        upstream_ms=float(n),
        tool=f"t{n}",
    )


def _count_batches(calls: CallLog, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    write = calls._write

    def counted(batch: Sequence[CallRecord]) -> None:
        sizes.append(len(batch))
        write(batch)

    monkeypatch.setattr(calls, "_write", counted)
    return sizes


@pytest.mark.anyio
async def test_records_arriving_while_the_writer_gathers_go_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(call_log_module, "_GATHER", _FOREVER)
    async with open_call_log(tmp_path / "calls.db", settings()) as calls:
        sizes = _count_batches(calls, monkeypatch)
        calls.record(_record(0))
        # The writer has taken the first record and is gathering.
        await await_until(lambda: calls._receive.statistics().current_buffer_used == 0)
        for n in range(1, 10):
            calls.record(_record(n))
        with anyio.fail_after(10):  # a reader has them written at once, not in an hour
            await calls.wait_written()
        rows = await calls.select("1", [], "ORDER BY id ASC")
    assert sizes == [10]
    assert [r["tool"] for r in rows] == [f"t{n}" for n in range(10)]
    assert rows[3]["ms"] == 3.5 and rows[3]["door"] == "passthrough"


@pytest.mark.anyio
async def test_a_full_batch_is_written_without_a_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(call_log_module, "_GATHER", _FOREVER)
    monkeypatch.setattr(call_log_module, "_BATCH", 4)
    async with open_call_log(tmp_path / "calls.db", settings()) as calls:
        sizes = _count_batches(calls, monkeypatch)
        for n in range(4):
            calls.record(_record(n))
        await await_until(lambda: sizes, timeout=10)
        assert sizes == [4]
        assert calls.dropped == 0


@pytest.mark.anyio
async def test_the_end_of_the_log_writes_what_is_gathering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(call_log_module, "_GATHER", _FOREVER)
    path = tmp_path / "calls.db"
    with anyio.fail_after(10):  # not the gathering's hour, nor the close's bound
        async with open_call_log(path, settings()) as calls:
            calls.record(_record(7))
    async with open_call_log(path, settings()) as again:
        rows = await again.select("1", [], "")
    assert [r["tool"] for r in rows] == ["t7"]


def test_tools_by_name_keeps_the_listing_order_for_a_name_listed_twice() -> None:
    first, second = {"name": "a", "n": 1}, {"name": "a", "n": 2}
    other = {"name": "b"}
    tools = ToolsByName([first, other, second, {"title": "no name"}, {"name": 3}])
    assert tools.first == {"a": first, "b": other}
    assert tools.last == {"a": second, "b": other}


def test_the_tool_index_follows_the_entry_it_was_made_for(tmp_path: Path) -> None:
    catalogue = Catalogue(None, pool=None)  # type: ignore[arg-type]
    entry: dict[str, Any] = {"tools": [{"name": "echo"}]}
    made = catalogue.tools_by_name("s", entry)
    assert catalogue.tools_by_name("s", entry) is made  # not rebuilt per call
    replaced = {"tools": [{"name": "echo", "execution": {"taskSupport": "required"}}]}
    assert catalogue.tools_by_name("s", replaced).first["echo"]["execution"] == {
        "taskSupport": "required"
    }


def test_evolve_is_replace_without_its_cost() -> None:
    ctx = OpContext(pool=None, catalogue=None, settings=None)  # type: ignore[arg-type]
    copy = ctx.evolve(identity="host-1", log_level="debug")
    assert copy == dataclasses.replace(ctx, identity="host-1", log_level="debug")
    assert type(copy) is OpContext and copy is not ctx
    assert ctx.identity is None and ctx.log_level is None  # the original is untouched
    assert copy.calls is ctx.calls  # shared, as replace shares them
    with pytest.raises(TypeError, match="no field"):
        ctx.evolve(identiy="typo")
