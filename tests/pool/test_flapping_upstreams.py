"""Issue 27: an upstream that restarts in a loop, and one that answers slowly under load.

End to end: a real daemon (its own process) and tests/fixtures/flapping_server.py, which
appends a line per start to a file, so that the starts are counted and their spacing
measured:

- one that exits right after ``initialize`` is started again only after a pause that
  doubles from 500 ms up to ``pool.restartBackoff``, whether calls keep asking for it or
  a resource subscription keeps it wanted (the pool's guard restarts it by itself); the
  daemon stays nearly idle meanwhile, and ``mcpx servers`` says it is backing off and why;
- one that answers each call after a while answers all 16 calls made at once (or each
  times out with ``upstream_timeout`` at ``pool.callTimeout``), and /health answers
  meanwhile.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from support.daemon import Daemon, running_daemon
from support.waiting import wait_until

FLAPPING = Path(__file__).parents[1] / "fixtures" / "flapping_server.py"
WATCHED = "mcpx://flap/flap%3A%2F%2Fstate"
CAP = 2.0  # pool.restartBackoff in these tests
# A start comes this soon after its pause ends (a call or the guard asks at once); the
# rest of a gap is the upstream's own start and exit.
SLACK = 3.0
STARTS = 6  # enough for the pause to reach its cap (0, 0.5, 1, 2, 2)


def entry(starts: Path, *extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FLAPPING), "--starts", str(starts), *extra]}


def started(starts: Path) -> list[float]:
    """When each start of the fixture happened (wall clock), in order."""
    if not starts.exists():
        return []
    return [float(line) for line in starts.read_text().split()]


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` so far, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pause_before(start: int) -> float:
    """The least pause before start number ``start`` (0-based) of a server failing each time."""
    failures = start  # every start before it failed
    return 0.0 if failures < 2 else min(0.5 * 2 ** (failures - 2), CAP)


def assert_backed_off(times: list[float]) -> None:
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(times)]
    for i, gap in enumerate(gaps, start=1):
        assert gap >= pause_before(i) * 0.95, f"start {i} came too soon: gaps {gaps}"
        assert gap <= CAP + SLACK, f"start {i} came too late (the pause is capped): gaps {gaps}"


def restarts_of(daemon: Daemon) -> dict[str, Any]:
    done = daemon.cli("servers", "--json")
    assert done.returncode == 0, done.stderr
    [flap] = [s for s in json.loads(done.stdout)["servers"] if s["name"] == "flap"]
    restarts: dict[str, Any] = flap["restarts"] or {}
    return restarts


def assert_clear_state(daemon: Daemon) -> None:
    restarts = restarts_of(daemon)
    assert restarts["state"] in ("backoff", "failing"), restarts
    assert restarts["failures"] >= STARTS - 1, restarts
    assert "exited with status 2" in restarts["lastError"], restarts
    assert "flapping: exiting" in restarts["lastError"], restarts
    assert 0 <= restarts["nextStartIn"] <= CAP, restarts


def test_an_upstream_exiting_after_initialize_is_called_again_and_again(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    servers = {"flap": entry(starts, "--life", "0")}
    settings = {"pool.restartBackoff": f"{CAP:g}s"}
    with running_daemon(tmp_path, servers, settings) as daemon, daemon.http() as api:
        answers: list[httpx.Response] = []

        def call_until_enough_starts() -> bool:
            body = {"server": "flap", "tool": "echo", "arguments": {"text": "x"}}
            answers.append(api.post("/v1/call", json=body))
            return len(started(starts)) >= STARTS

        wait_until(call_until_enough_starts, timeout=60, interval=0.01, message="more starts")
        times = started(starts)
        assert_backed_off(times)
        assert all(a.status_code == 502 for a in answers), {a.status_code for a in answers}
        codes = {a.json()["error"]["code"] for a in answers}
        assert codes == {"upstream_error"}, codes
        # A call refused during the pause says why, naming the server and the last error.
        refused = [a.json()["error"]["message"] for a in answers]
        assert any("not started again for" in m and "status 2" in m for m in refused), refused[-3:]
        assert all(m.startswith("flap") for m in refused), refused[-3:]
        # Many calls, few starts: each call is no longer a spawn.
        assert len(answers) > len(times), (len(answers), len(times))
        assert_clear_state(daemon)


def _legacy_session(mcp: httpx.Client) -> dict[str, str]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}}
    init["clientInfo"] = {"name": "t", "version": "1"}
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    return {"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}


@contextmanager
def subscribed(daemon: Daemon) -> Iterator[None]:
    """A legacy session subscribed to the fixture's resource, for the block."""
    with httpx.Client(base_url=daemon.info["url"], timeout=30) as mcp:
        headers = _legacy_session(mcp)
        frame = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe"}
        frame["params"] = {"uri": WATCHED}
        assert mcp.post("/mcp", json=frame, headers=headers).json()["result"] == {}
        try:
            yield
        finally:
            mcp.delete("/mcp", headers=headers)


def test_a_watched_upstream_that_keeps_exiting_is_restarted_without_a_busy_loop(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    # It lives long enough to take the subscription, then exits: the guard restarts it.
    servers = {"flap": entry(starts, "--life", "0.2")}
    settings = {"pool.restartBackoff": f"{CAP:g}s"}
    with running_daemon(tmp_path, servers, settings) as daemon, subscribed(daemon):
        pid = daemon.proc.pid
        cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
        # Nothing calls it: only the guard of the subscription starts it again.
        wait_until(lambda: len(started(starts)) >= STARTS, timeout=60, message="more starts")
        cpu = cpu_seconds(pid) - cpu_before
        wall = time.monotonic() - wall_before
        times = started(starts)
        assert_backed_off(times)
        # The daemon waits its pauses out: a small share of one CPU, far from a busy loop.
        assert cpu <= 0.15 * wall + 0.3, f"the daemon used {cpu:.2f} s of CPU in {wall:.1f} s"
        assert_clear_state(daemon)
        with daemon.http() as api:
            [flap] = api.get("/v1/servers").json()["servers"]
        assert flap["subscriptions"] == ["flap://state"]


def _call_all(daemon: Daemon, n: int) -> list[httpx.Response | BaseException]:
    """``n`` calls of echo at once, each with its own text; their answers, by index."""
    answers: list[httpx.Response | BaseException] = [RuntimeError("no answer")] * n
    gate = threading.Barrier(n)

    def call(i: int) -> None:
        try:
            with daemon.http() as api:
                gate.wait(timeout=30)
                body = {"server": "slow", "tool": "echo", "arguments": {"text": f"call {i}"}}
                answers[i] = api.post("/v1/call", json=body)
        except BaseException as exc:  # recorded: the test says which call lost what
            answers[i] = exc

    threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    health: list[float] = []
    with daemon.http() as api:
        while any(t.is_alive() for t in threads):
            asked = time.monotonic()
            assert api.get("/health", timeout=5).status_code == 200
            health.append(time.monotonic() - asked)
            threads[0].join(timeout=0.05)
    for t in threads:
        t.join(timeout=60)
    assert health, "/health was not asked while the calls ran"
    assert max(health) < 2.0, f"/health answered slowly while the calls ran: {max(health):.2f} s"
    return answers


def test_sixteen_calls_at_once_to_a_slow_upstream_all_answer(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    servers = {"slow": entry(starts, "--delay", "1.5")}
    with running_daemon(tmp_path, servers, {"pool.callTimeout": "20s"}) as daemon:
        answers = _call_all(daemon, 16)
    for i, answer in enumerate(answers):
        assert isinstance(answer, httpx.Response), f"call {i}: {answer!r}"
        assert answer.status_code == 200, f"call {i}: {answer.text}"
        assert answer.json()["content"][0]["text"] == f"call {i}", answer.text
    assert len(started(starts)) == 1  # one shared instance served them all


def test_sixteen_calls_at_once_past_the_call_timeout_each_time_out(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    servers = {"slow": entry(starts, "--delay", "4")}
    with running_daemon(tmp_path, servers, {"pool.callTimeout": "1s"}) as daemon:
        answers = _call_all(daemon, 16)
        for i, answer in enumerate(answers):
            assert isinstance(answer, httpx.Response), f"call {i}: {answer!r}"
            assert answer.status_code == 504, f"call {i}: {answer.text}"
            error = answer.json()["error"]
            assert error["code"] == "upstream_timeout", answer.text
            assert "within 1s" in error["message"], answer.text
        # The instance outlives its timed-out calls: the next call goes to it (slow too).
        with daemon.http() as api:
            body = {"server": "slow", "tool": "echo", "arguments": {"text": "after"}}
            assert api.post("/v1/call", json=body, timeout=30).status_code == 504
    assert len(started(starts)) == 1
