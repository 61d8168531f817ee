"""The stdio transport against real child processes (scripts under ``scripts/``)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx.transport import StdioTransport, TransportClosed, _stdio, open_stdio

pytestmark = pytest.mark.anyio


def request(rid: int, method: str = "ping", **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def gone(pid: int) -> bool:
    """The process no longer exists (a zombie nobody reaps counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Wait (bounded) for a process that is not our child to terminate.

    A pidfd turns readable when the process terminates: an event, not a polling loop.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(timeout):
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)
    assert gone(pid)


@pytest.fixture
def fast_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stdio, "_STDIN_GRACE", 0.3)
    monkeypatch.setattr(_stdio, "_TERM_GRACE", 0.3)


async def test_frames_round_trip(script: Any) -> None:
    command, args = script("echo_server")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        assert t.describe() == {"transport": "stdio", "pid": t.pid, "command": command}
        with anyio.fail_after(10):
            for n in range(3):
                await t.send(request(n, "tools/list", text="line\nbreak ✓"))
            await t.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            answers = [await t.receive() for _ in range(3)]
        assert answers == [
            {
                "jsonrpc": "2.0",
                "id": n,
                "result": {"method": "tools/list", "params": {"text": "line\nbreak ✓"}},
            }
            for n in range(3)
        ]
        assert t.returncode is None
        assert await t.abort(0) is False


async def test_concurrent_sends_never_interleave(script: Any) -> None:
    command, args = script("echo_server")
    big = "y" * 200_000  # larger than a pipe buffer: a write takes several syscalls
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for n in range(40):
                    tg.start_soon(t.send, request(n, blob=big))
                ids = set()
                for _ in range(40):
                    frame = await t.receive()
                    assert isinstance(frame, dict)
                    assert frame["result"]["params"]["blob"] == big
                    ids.add(frame["id"])
        assert ids == set(range(40))


async def test_env_is_merged_and_cwd_applies(script: Any, tmp_path: Path) -> None:
    command, args = script("echo_server")
    env = {"MCPX_TEST_VALUE": "from the test"}
    async with open_stdio(command, args, env, tmp_path, on_stderr=lambda line: None) as t:
        with anyio.fail_after(10):
            await t.send(request(1, "environ", name="MCPX_TEST_VALUE"))
            frame = await t.receive()
            await t.send(request(2, "environ", name="PATH"))
            path_frame = await t.receive()
    assert isinstance(frame, dict) and isinstance(path_frame, dict)
    assert frame["result"] == {"cwd": str(tmp_path), "value": "from the test"}
    assert path_frame["result"]["value"] == os.environ["PATH"]  # merged over os.environ


async def test_exit_is_noticed_with_status_and_last_stderr(script: Any) -> None:
    command, args = script("exit_status")
    lines: list[str] = []
    async with open_stdio(command, args, on_stderr=lines.append) as t:
        with anyio.fail_after(10), pytest.raises(TransportClosed) as caught:
            await t.receive()
        message = str(caught.value)
        assert message.startswith(f"{command} exited with status 3; last stderr: ")
        assert "fatal: cannot open the database" in message
        assert "log line 24" in message and "log line 5 " not in message + " "
        assert len(t.stderr_tail) == _stdio.STDERR_TAIL
        assert t.returncode == 3
        with pytest.raises(TransportClosed, match="exited with status 3"):
            await t.send(request(1))
        with pytest.raises(TransportClosed, match="exited with status 3"):
            await t.receive()  # and again: the end is permanent
    assert lines[-1] == "fatal: cannot open the database"
    assert len(lines) == 26


async def test_exit_during_a_call_delivers_frames_before_the_reason(script: Any) -> None:
    command, args = script("echo_server")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        with anyio.fail_after(10):
            await t.send(request(1))
            await t.send(request(2, "exit", status=0))
            first = await t.receive()
            with pytest.raises(TransportClosed, match="exited with status 0; no stderr"):
                await t.receive()
    assert isinstance(first, dict) and first["id"] == 1


async def test_killed_by_a_signal_names_it(script: Any) -> None:
    command, args = script("echo_server")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        os.kill(t.pid, signal.SIGKILL)
        with anyio.fail_after(10), pytest.raises(TransportClosed) as caught:
            await t.receive()
    assert "exited with status -9 (SIGKILL)" in str(caught.value)


async def test_stderr_lines_reach_the_callback(script: Any) -> None:
    command, args = script("echo_server")
    seen: list[str] = []
    done = anyio.Event()

    def on_stderr(line: str) -> None:
        seen.append(line)
        if line == "last":
            done.set()

    async with open_stdio(command, args, on_stderr=on_stderr) as t:
        long_line = "z" * 10_000
        notice = {
            "jsonrpc": "2.0",
            "method": "stderr",
            "params": {"lines": ["first", "ünïcode", long_line, "last"]},
        }
        await t.send(notice)
        with anyio.fail_after(10):
            await done.wait()
    assert seen[:2] == ["first", "ünïcode"]
    assert seen[2] == "z" * _stdio._STDERR_LINE_MAX + " [...]"  # capped, and says so
    assert seen[3] == "last"


async def test_a_failing_stderr_callback_does_not_break_the_transport(script: Any) -> None:
    command, args = script("echo_server")

    def on_stderr(line: str) -> None:
        raise RuntimeError("logging is broken")

    async with open_stdio(command, args, on_stderr=on_stderr) as t:
        await t.send({"jsonrpc": "2.0", "method": "stderr", "params": {"lines": ["boom"]}})
        await t.send(request(1))
        with anyio.fail_after(10):
            assert await t.receive() == {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"method": "ping", "params": {}},
            }


async def test_a_stderr_flood_never_blocks_answers(script: Any) -> None:
    command, args = script("stderr_flood")
    count = 0
    flood_done = anyio.Event()

    def on_stderr(line: str) -> None:
        nonlocal count
        count += 1
        if line == "flood done":
            flood_done.set()

    async with open_stdio(command, args, on_stderr=on_stderr) as t:
        await t.send(request(7))
        with anyio.fail_after(60):
            assert await t.receive() == {"jsonrpc": "2.0", "id": 7, "result": {}}
            await flood_done.wait()  # the tail of stderr may trail the answer
    assert count == 50 * 1024 + 1


async def test_close_ends_the_process_group(script: Any) -> None:
    command, args = script("spawn_child")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        with anyio.fail_after(10):
            hello = await t.receive()
        assert isinstance(hello, dict)
        child, leader = hello["params"]["pid"], t.pid
        assert os.getpgid(child) == leader  # the grandchild is in the server's group
    assert gone(leader)  # reaped before the context returned
    await wait_gone(child)


@pytest.mark.obligation("C-STDIO-7")
async def test_sigterm_ignored_still_killed(script: Any, fast_shutdown: None) -> None:
    command, args = script("ignore_sigterm")
    started = time.monotonic()
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        with anyio.fail_after(10):
            assert await t.receive() == {"jsonrpc": "2.0", "method": "ready"}
        pid = t.pid
    assert gone(pid)
    assert t.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 5


async def test_close_under_cancellation_still_reaps(script: Any, fast_shutdown: None) -> None:
    command, args = script("ignore_sigterm")
    pid = 0
    with anyio.move_on_after(10) as outer:
        async with open_stdio(command, args, on_stderr=lambda line: None) as t:
            pid = t.pid
            await t.receive()
            outer.cancel()
            await anyio.sleep_forever()
    assert pid and gone(pid)


async def test_oversize_line_ends_the_transport(script: Any) -> None:
    command, args = script("oversize_line", str(4 * 1024 * 1024))
    async with open_stdio(command, args, on_stderr=lambda _: None, max_frame=65536) as t:
        with anyio.fail_after(10):
            assert await t.receive() == {"jsonrpc": "2.0", "method": "before"}
            with pytest.raises(TransportClosed) as caught:
                await t.receive()
        assert str(caught.value) == f"{command} wrote a line over 65536 bytes to stdout"
        with pytest.raises(TransportClosed, match="over 65536 bytes"):
            await t.send(request(1))
        pid = t.pid
    assert gone(pid)


async def test_invalid_json_ends_the_transport(script: Any) -> None:
    command, args = script("invalid_json")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        with anyio.fail_after(10):
            assert await t.receive() == {"jsonrpc": "2.0", "method": "before"}
            with pytest.raises(TransportClosed) as caught:
                await t.receive()
    message = str(caught.value)
    assert "not a JSON-RPC frame" in message and "'this is not json'" in message


async def test_a_command_that_cannot_start() -> None:
    with pytest.raises(TransportClosed, match="cannot start /nonexistent/mcp-server"):
        async with open_stdio("/nonexistent/mcp-server", on_stderr=lambda line: None):
            pass


async def test_send_after_close_raises(script: Any) -> None:
    command, args = script("echo_server")
    async with open_stdio(command, args, on_stderr=lambda line: None) as t:
        kept: StdioTransport = t
    with pytest.raises(TransportClosed, match="transport closed"):
        await kept.send(request(1))
    with pytest.raises(TransportClosed, match="transport closed"):
        await kept.receive()
    assert kept.returncode == 0  # it exited on its own when stdin closed


async def test_routed_frames_keep_their_order_however_they_are_read(script: Any) -> None:
    # Routed, a read of answers alone goes to the route from the loop's callback and
    # anything else through the reading task: the order holds across both, a line cut
    # in two is joined, and a bad line read either way ends the transport.
    command, args = script("paced_pieces")
    send, receive = anyio.create_memory_object_stream[Any](16)
    routed: list[Any] = []
    with send, receive:
        async with open_stdio(command, args, on_stderr=lambda line: None) as t:
            t.route(send.send_nowait)
            with anyio.fail_after(10):
                for expected in (1, 2, 0, 2):  # the frames each piece completes
                    await t.send({"jsonrpc": "2.0", "method": "next"})
                    routed += [await receive.receive() for _ in range(expected)]
                await t.send({"jsonrpc": "2.0", "method": "next"})
                with pytest.raises(TransportClosed) as caught:
                    await t.receive()
    ids = [f.get("id", f.get("method")) for f in routed]
    assert ids == [1, "notifications/message", 2, 3, 4]
    assert routed[-1]["result"] == {"text": 'a "method"-free answer'}
    assert "not a JSON-RPC frame" in str(caught.value)
