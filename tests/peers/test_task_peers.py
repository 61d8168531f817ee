"""Tasks through mcpx with the official peers, both eras and both directions.

Upstreams (a real daemon's): npm ``@modelcontextprotocol/server-everything`` over stdio,
whose only task tool is ``simulate-research-query`` (``execution.taskSupport:
"required"``, about 4 s in four stages; ``ambiguous: true`` makes it ask an elicitation
mid-task, which its TS SDK queues for ``tasks/result``), and the official Python SDK
1.23.3 ``tests/fixtures/task_server.py`` (``work_required``: required; every frame it is sent is in
its log; ``--no-status``: it sends no status notifications; ``--tools-call``: it declares
the ``tasks.requests.tools.call`` the SDK leaves out, while ``asis`` serves the SDK's own
declaration). Both speak 2025-11-25 core tasks to mcpx; both are passed through on
``/mcp`` (``mcp.passthrough``) and by ``mcpx serve --passthrough``.

Hosts: the official Python SDK 1.23.3 client as a 2025-11-25 host with its experimental
tasks API (``HOST`` below, run by that release's python) over stdio and ``/mcp``; raw
2026-07-28 requests with the tasks extension (``support.modern``); and mcpx's own doors
(``mcpx call``, ``/v1/call``, ``mcpx_call``). Every frame the daemon sent is checked
against its revision's schema (and the extension's) when the daemon stops.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import Daemon, running_daemon
from support.hosts import SERVE_COMMAND, HostRun, mcp_url, run_host
from support.modern import modern_headers, modern_meta, modern_params
from support.peers import FIXTURES, everything_server_command, peer_python
from support.schemas import frame_errors
from support.waiting import wait_until

RESEARCH = "simulate-research-query"
RELATED = "io.modelcontextprotocol/related-task"
EXT = "io.modelcontextprotocol/tasks"
TRANSPORTS = ("stdio", "http")
TERMINAL = ("completed", "failed", "cancelled")
# What server-everything asks, as mcpx relays it (to the host natively, or the broker).
ASKED = (
    'everything (via mcpx) asks: The research query "{topic}" could have multiple interpretations. '
    "Please clarify what you're looking for:"
)

# A 2025-11-25 host on mcp 1.23.3's client: a task-augmented call of one tool, polled
# (its own 0.1 s) until input_required or terminal, then tasks/result (where 2025-11-25
# delivers the task's questions, answered with ANSWER when given), then polled to the end.
HOST = r"""
import json, os, sys
import anyio
from mcp import ClientSession, types

transport, tool, arguments, answer, target = sys.argv[1:6]
asked, statuses = [], []

async def elicitation(context, params):
    asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
    return types.ElicitResult(action="accept", content={"interpretation": answer})

async def poll(session, task_id, until):
    with anyio.fail_after(60):
        while True:
            status = (await session.experimental.get_task(task_id)).status
            if not statuses or statuses[-1] != status:
                statuses.append(status)
            if status in until:
                return
            await anyio.sleep(0.1)

async def main():
    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        streams = stdio_client(server)
    else:
        from mcp.client.streamable_http import streamablehttp_client
        streams = streamablehttp_client(target)
    callbacks = {"elicitation_callback": elicitation} if answer else {}
    async with streams as opened, ClientSession(opened[0], opened[1], **callbacks) as session:
        await session.initialize()
        listed = {t.name: t for t in (await session.list_tools()).tools}
        execution = listed[tool].execution.model_dump(mode="json", exclude_none=True)
        tasks = session.experimental
        created = await tasks.call_tool_as_task(tool, json.loads(arguments), ttl=60000)
        task_id = created.task.taskId
        await poll(session, task_id, ("input_required",) + TERMINAL)
        result = await session.experimental.get_task_result(task_id, types.CallToolResult)
        await poll(session, task_id, TERMINAL)
        dump = lambda o: o.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {"execution": execution, "created": dump(created), "statuses": statuses,
                "asked": asked, "result": dump(result)}

TERMINAL = ("completed", "failed", "cancelled")
print(json.dumps(anyio.run(main)))
"""


def _task_server(log: Path, *flags: str) -> dict[str, Any]:
    argv = [str(FIXTURES / "task_server.py"), *flags, str(log)]
    return {"command": str(peer_python("1.23.3")), "args": argv}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("task-peers")
    everything = everything_server_command("stdio")
    servers = {
        "everything": {"command": everything[0], "args": everything[1:]},
        "tasky": _task_server(tmp / "tasky.jsonl", "--tools-call", "--no-status"),
        "asis": _task_server(tmp / "asis.jsonl"),
    }
    settings = {"mcp.passthrough": ["everything", "tasky"]}
    with running_daemon(tmp, servers, settings) as d:
        d.logs = {name: tmp / f"{name}.jsonl" for name in ("tasky", "asis")}  # type: ignore[attr-defined]
        for server in servers:  # a tool's taskSupport is read from the catalogue
            listed = d.cli("tools", server)
            assert listed.returncode == 0, listed.stderr
        yield d


def _host(
    daemon: Daemon, transport: str, tool: str, arguments: dict[str, Any], answer: str = ""
) -> HostRun:
    target = json.dumps([*SERVE_COMMAND, "--passthrough", "everything,tasky"])
    argv = [str(peer_python("1.23.3")), "-c", HOST, transport, tool, json.dumps(arguments)]
    argv += [answer, target if transport == "stdio" else mcp_url(daemon)]
    return run_host(argv, daemon)


def _payloads_valid(run: HostRun) -> None:
    """Each ``tasks/result`` mcpx sent the host is a valid CallToolResult of its revision
    (2025-11-25's schema types that payload only as a Result, so the frame check at the
    daemon's exit cannot tell)."""
    answers = [f for f in run.frames if f["answering"] == "tasks/result"]
    assert answers, "no tasks/result answer was traced"
    for line in answers:
        problems = frame_errors(line["frame"], line["rev"], sender="server", answering="tools/call")
        assert not problems, f"tasks/result is no valid CallToolResult: {problems}\n{line}"


def _text(result: dict[str, Any]) -> str:
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def _report(topic: str, clarified: str | None = None) -> str:
    return f"# Research Report: {topic}" + (f" ({clarified})" if clarified else "") + "\n"


def _valid_modern(frame: dict[str, Any], answering: str) -> dict[str, Any]:
    """``frame`` (a reply mcpx sent a 2026-07-28 host), once it is strictly valid there;
    the daemon's teardown checks it too, but this says which call sent it."""
    problems = frame_errors(frame, "2026-07-28", sender="server", answering=answering)
    assert not problems, f"mcpx answered {answering} with an invalid frame: {problems}\n{frame}"
    return frame


def _received(daemon: Daemon, server: str) -> list[dict[str, Any]]:
    path: Path = daemon.logs[server]  # type: ignore[attr-defined]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- 1a, 2: a 2025-11-25 SDK host's task-augmented call of a pass-through required tool ---


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk_host_runs_everythings_research_as_a_task_answering_its_question(
    daemon: Daemon, transport: str
) -> None:
    topic = f"python via {transport}"
    run = _host(daemon, transport, RESEARCH, {"topic": topic, "ambiguous": True}, "snake")
    seen = run.seen
    assert seen["execution"] == {"taskSupport": "required"}
    task = seen["created"]["task"]
    assert task["status"] == "working", seen
    statuses = seen["statuses"]
    assert statuses[-1] == "completed", statuses
    [asked] = seen["asked"]  # the upstream's question, relayed to the host natively
    assert asked["message"] == ASKED.format(topic=topic)
    assert asked["_meta"][RELATED] == {"taskId": task["taskId"]}
    assert _text(seen["result"]).startswith(_report(topic, "snake")), seen["result"]
    assert seen["result"]["_meta"][RELATED] == {"taskId": task["taskId"]}
    _payloads_valid(run)


@pytest.mark.obligation("C-TASK-4", "C-TASK-8", "C-TASK-9")
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk_host_runs_the_sdk_servers_required_tool_as_a_task(
    daemon: Daemon, transport: str
) -> None:
    before = len(_received(daemon, "tasky"))
    seen = _host(daemon, transport, "work_required", {"ms": 1500}).seen
    assert seen["execution"] == {"taskSupport": "required"}
    assert seen["statuses"][-1] == "completed", seen
    assert _text(seen["result"]) == "done as required task"
    received = _received(daemon, "tasky")[before:]
    # C-TASK-4: a required tool always goes upstream as a task.
    calls = [f["params"] for f in received if f.get("method") == "tools/call"]
    assert calls and all("task" in p for p in calls if p["name"] == "work_required"), calls
    # C-TASK-9: tasks/* carry their taskId param only, no related-task _meta.
    followed = [f for f in received if f.get("method", "").startswith("tasks/")]
    assert {f["method"] for f in followed} >= {"tasks/get", "tasks/result"}, followed
    for frame in followed:
        assert set(frame["params"]) == {"taskId"}, frame
        assert isinstance(frame["params"]["taskId"], str), frame
    # C-TASK-8: the upstream sends no status notifications (--no-status): mcpx found the
    # 1.5 s task's end by polling tasks/get (pollInterval 500 ms), more than once.
    polls = [f for f in followed if f["method"] == "tasks/get"]
    assert len(polls) >= 2, followed
    assert followed[-1]["method"] == "tasks/result", followed


# --- 1b, 2: mcpx's own doors, which task-augment upstream themselves ---------------------


@pytest.mark.parametrize(
    ("server", "tool", "arguments", "expected"),
    [
        ("everything", RESEARCH, {"topic": "gateways"}, _report("gateways")),
        ("tasky", "work_required", {"ms": 200}, "done as required task"),
    ],
)
def test_mcpx_call_v1_call_and_mcpx_call_run_a_required_tool(
    daemon: Daemon, server: str, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    done = daemon.cli("call", server, tool, "--args", json.dumps(arguments), "--json")
    assert done.returncode == 0, done.stderr
    assert _text(json.loads(done.stdout)).startswith(expected), done.stdout
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": server, "tool": tool, "arguments": arguments})
    assert r.status_code == 200, r.text
    assert _text(r.json()).startswith(expected), r.text
    params = {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": modern_params(params)}
        r = mcp.post("/mcp", json=frame, headers=modern_headers("tools/call", params))
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result["resultType"] == "complete", result
    assert _text(result).startswith(expected), result


def test_v1_call_question_midtask_is_answered_through_the_broker(daemon: Daemon) -> None:
    topic = "python by broker"
    replies: dict[str, httpx.Response] = {}

    def call() -> None:
        body = {
            "server": "everything",
            "tool": RESEARCH,
            "arguments": {"topic": topic, "ambiguous": True},
        }
        with daemon.http() as api:
            replies["r"] = api.post("/v1/call", json=body, timeout=120)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        question = daemon.open_question(ASKED.format(topic=topic))
        with daemon.http() as api:
            answered = api.post(
                f"/v1/questions/{question['id']}/answer",
                json={"content": {"interpretation": "comedy"}},
            )
            assert answered.status_code == 200, answered.text
    finally:
        caller.join(timeout=120)
    wait_until(lambda: "r" in replies, timeout=10, message="the call's reply")
    assert replies["r"].status_code == 200, replies["r"].text
    assert _text(replies["r"].json()).startswith(_report(topic, "comedy"))


# --- 3: a 2026-07-28 host with the tasks extension ----------------------------------------


def test_modern_host_with_the_extension_gets_a_task_and_its_result_inlined(daemon: Daemon) -> None:
    meta = modern_meta({"extensions": {EXT: {}}})
    arguments = {"server": "everything", "tool": RESEARCH, "arguments": {"topic": "modern"}}

    def send(mcp: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": 1, "method": method, "params": modern_params(params, meta)}
        r = mcp.post("/mcp", json=frame, headers=modern_headers(method, params))
        assert r.status_code == 200, r.text
        body = _valid_modern(r.json(), method)
        assert "result" in body, body
        return dict(body["result"])

    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        created = send(mcp, "tools/call", {"name": "mcpx_call", "arguments": arguments})
        assert created["resultType"] == "task", created
        assert created["status"] == "working" and "result" not in created
        task_id = created["taskId"]

        def ended() -> dict[str, Any] | None:
            got = send(mcp, "tasks/get", {"taskId": task_id})
            return got if got["status"] in TERMINAL else None

        done = wait_until(ended, timeout=60, interval=0.2, message=f"task {task_id} ending")
    assert done["status"] == "completed", done
    assert _text(done["result"]).startswith(_report("modern")), done


@pytest.mark.obligation("C-TASK-3")
def test_the_sdks_own_declaration_without_tools_call_is_never_sent_a_task(
    daemon: Daemon,
) -> None:
    # mcp 1.23.3 declares tasks.requests.tools without call (tests/fixtures/task_server.py):
    # by 2025-11-25 it takes no task-augmented tools/call, so its required tool cannot run.
    done = daemon.cli("call", "asis", "work_required", "--json")
    assert done.returncode != 0, done.stdout
    assert "does not declare tasks.requests.tools.call" in done.stderr, done.stderr
    calls = [f for f in _received(daemon, "asis") if f.get("method") == "tools/call"]
    assert all("task" not in f["params"] for f in calls), calls


def test_an_sdk_tasks_result_reaches_hosts_as_a_valid_call_tool_result(daemon: Daemon) -> None:
    # mcp 1.23.3 answers tasks/result with its content blocks dumped null members and all
    # ({"type": "text", "text": ..., "annotations": null, "_meta": null}); what mcpx hands
    # on, to a 2025-11-25 host's tasks/result and a 2026-07-28 host's mcpx_call, must be a
    # valid CallToolResult of the host's revision all the same.
    _payloads_valid(_host(daemon, "http", "work_required", {"ms": 100}))
    arguments = {"server": "tasky", "tool": "work_required", "arguments": {"ms": 100}}
    params = {"name": "mcpx_call", "arguments": arguments}
    frame = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": modern_params(params)}
    with httpx.Client(base_url=daemon.info["url"], timeout=120) as mcp:
        r = mcp.post("/mcp", json=frame, headers=modern_headers("tools/call", params))
    assert r.status_code == 200, r.text
    assert _text(_valid_modern(r.json(), "tools/call")["result"]) == "done as required task"
