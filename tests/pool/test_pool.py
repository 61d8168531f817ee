"""The pool in-process, against real upstream processes (the bundled demo server)."""

from __future__ import annotations

import sys

import anyio
import pytest

from mcpx.client import UpstreamError
from mcpx.config import ServerConfig
from mcpx.pool import PoolFull, UnknownServer, call_budget, open_pool
from support.upstream import settings
from support.waiting import await_until

pytestmark = pytest.mark.anyio


def demo(name: str = "demo", scope: str = "shared") -> ServerConfig:
    return ServerConfig(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=("-m", "mcpx", "demo-server"),
        scope=scope,  # type: ignore[arg-type]
    )


async def _echo(pool: object, identity: str | None = None, text: str = "x") -> str:
    result = await pool.request(  # type: ignore[attr-defined]
        "demo", "tools/call", {"name": "echo", "arguments": {"text": text}}, identity=identity
    )
    return str(result["content"][0]["text"])


async def test_identity_scope_gets_one_instance_per_caller() -> None:
    with anyio.fail_after(60):
        async with open_pool({"demo": demo(scope="identity")}, settings()) as pool:
            assert await _echo(pool, "alice") == "x"
            assert await _echo(pool, "bob") == "x"
            assert await _echo(pool, "alice") == "x"
            scopes = sorted(i.scope_key for i in pool.instances("demo"))
            assert scopes == ["alice", "bob"]
            pids = {i.status()["pid"] for i in pool.instances("demo")}
            assert len(pids) == 2


@pytest.mark.obligation("C-STDIO-13")
async def test_shared_scope_is_one_instance_for_everyone() -> None:
    with anyio.fail_after(60):
        async with open_pool({"demo": demo()}, settings()) as pool:
            await _echo(pool, "alice")
            await _echo(pool, "bob")
            assert [i.scope_key for i in pool.instances()] == [""]


async def test_pool_max_evicts_the_least_recently_used_idle_instance() -> None:
    with anyio.fail_after(60):
        config = settings(pool__max="1")
        async with open_pool({"demo": demo(scope="identity")}, config) as pool:
            await _echo(pool, "alice")
            first = pool.instances("demo")[0]
            await _echo(pool, "bob")
            assert [i.scope_key for i in pool.instances("demo")] == ["bob"]
            assert first.state == "closed"


async def test_pool_max_refuses_when_every_instance_is_busy() -> None:
    config = settings(pool__max="1")
    busy = anyio.Event()

    async def slow_call(pool: object) -> None:
        slow = {"name": "slow", "arguments": {"seconds": 2, "steps": 20}}
        request = pool.request("demo", "tools/call", slow, identity="alice")  # type: ignore[attr-defined]
        busy.set()
        await request

    with anyio.fail_after(60):
        async with (
            open_pool({"demo": demo(scope="identity")}, config) as pool,
            anyio.create_task_group() as tg,
        ):
            await _echo(pool, "alice")  # started and warm
            tg.start_soon(slow_call, pool)
            await busy.wait()
            await await_until(lambda: pool.instances("demo")[0].in_flight, timeout=5)
            assert pool.instances("demo")[0].in_flight == 1
            with pytest.raises(PoolFull, match=r"pool\.max"):
                await _echo(pool, "bob")


async def test_unknown_server_names_the_configured_ones() -> None:
    async with open_pool({"demo": demo()}, settings()) as pool:
        with pytest.raises(UnknownServer) as info:
            await pool.request("nope", "tools/list")
        assert "configured: demo" in str(info.value)


async def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    broken = ServerConfig(name="broken", transport="stdio", command="/nonexistent/binary")
    async with open_pool({"broken": broken}, settings(pool__startTimeout="5s")) as pool:
        with pytest.raises(UpstreamError, match="broken could not be started"):
            await pool.request("broken", "tools/list")


def test_call_budget_is_clamped_never_raised() -> None:
    config = settings(pool__callTimeout="10s")
    assert call_budget(config) == 10
    assert call_budget(config, 2.5) == 2.5
    assert call_budget(config, 600) == 10
    assert call_budget(config, 0) == 10
    assert call_budget(config, None) == 10


async def test_a_request_pending_on_a_stopped_instance_fails_at_once() -> None:
    # The instance goes away under a call (stopped): the call fails now, naming the
    # server, rather than waiting out its budget (pool.callTimeout, 120 s here).
    failed: list[BaseException] = []

    async def slow_call(pool: object) -> None:
        slow = {"name": "slow", "arguments": {"seconds": 60, "steps": 1}}
        try:
            await pool.request("demo", "tools/call", slow)  # type: ignore[attr-defined]
        except UpstreamError as exc:
            failed.append(exc)

    with anyio.fail_after(30):
        async with open_pool({"demo": demo()}, settings()) as pool, anyio.create_task_group() as tg:
            await _echo(pool)  # started and warm
            tg.start_soon(slow_call, pool)
            [instance] = pool.instances("demo")
            await await_until(lambda: instance.in_flight, timeout=5)
            assert instance.in_flight == 1
            await instance.stop()
    [error] = failed
    assert "demo" in str(error) and "closed" in str(error), error


async def test_closing_stops_every_instance_at_once() -> None:
    # Each of these outlives its stdin by a `sleep`: stopping one waits out the stdin
    # grace (2 s) before SIGTERM. Three of them stop in about one grace, not three.
    lingering = ServerConfig(
        name="demo",
        transport="stdio",
        command="sh",
        args=("-c", f"'{sys.executable}' -m mcpx demo-server; sleep 30"),
        scope="identity",
    )
    with anyio.fail_after(60):
        async with open_pool({"demo": lingering}, settings()) as pool:
            for who in ("alice", "bob", "carol"):
                assert await _echo(pool, who) == "x"
            assert len(pool.instances("demo")) == 3
            started = anyio.current_time()
            await pool.close()
            took = anyio.current_time() - started
            assert pool.instances("demo") == []
    assert took < 4.5, took  # one after another it was over 6 s
