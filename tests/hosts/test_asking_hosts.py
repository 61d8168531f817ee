"""An upstream's mid-call question reaches the real SDK host that made the call, in its era.

The upstreams are the official SDK's fixture server (``tests/fixtures/sdk_server.py``) on
1.23.3 (``legacy``: it asks with a request mid-call) and on 2.3.0 (``modern``: mcpx finds it
2026-07-28; it asks through ``input_required``). Its tools ``ask`` (a form elicitation with
one string field ``answer``), ``sample`` (sampling/createMessage) and ``roots`` (roots/list)
return what they were answered.

The hosts are ``tests/fixtures/sdk_host.py --ask`` on each official Python SDK release's own
python, over stdio (``mcpx serve``) and Streamable HTTP (the daemon's ``/mcp``). A host
declares a capability by registering the SDK's callback for it, and calls ``mcpx_call``:

- a legacy host (2024-11-05 … 2025-11-25) that declared what the question needs is sent it as
  a request (on its pipe, or on the POST's event stream), and its SDK callback answers;
- a 2026-07-28 host (2.3.0's ``mcp.Client`` in ``auto`` mode) gets an ``input_required``
  result carrying the question, which its ``Client`` answers through the same callback and
  retries with, on its own;
- a host that did not declare it never sees it: the question waits in mcpx's broker, is
  answered through ``/v1/questions``, and the host's call completes with that answer;
- while two calls are in flight on one server, the question cannot be told apart: it goes to
  the broker, never to the other host.

What each release's client can declare (from its source): 1.2.1 has no callbacks at all and
declares roots, always (the host answers from ``session.incoming_messages``); 1.9.4 has
``sampling_callback`` and ``list_roots_callback`` (its revision, 2025-03-26, has no
elicitation); ``elicitation_callback`` comes with 1.12.4 (2025-06-18). 1.2.1 has no
Streamable HTTP client. Combinations a release cannot make are left out of the
parametrization below, each with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.hosts import (
    PYTHON_HOST_TRANSPORTS,
    SDK_HOST,
    SERVE_COMMAND,
    HostRun,
    mcp_url,
    python_host_revision,
    run_host,
)
from support.peers import MODERN_REVISION, peer_python
from support.waiting import wait_until

# Server name -> the SDK release its fixture server runs on.
UPSTREAMS = {"legacy": "1.23.3", "modern": "2.3.0"}
HOST_RUN_TIMEOUT = 90.0  # one host process, start to end
CALL_TIMEOUT = 60.0  # the host's mcpx_call (sdk_host.py --timeout)
POLL_INTERVAL = 0.1
SHOW_LIMIT = 30.0  # how long a question or an in-flight call may take to show
ROOT = {"uri": "file:///work", "name": "work"}

# (release, mode) of every host whose client can declare each capability. 1.2.1 is in none
# but roots (no callbacks; it declares roots regardless), 1.9.4 is not in elicitation (no
# elicitation_callback; 2025-03-26 has no elicitation).
Host = tuple[str, str | None]
ELICITING: tuple[Host, ...] = (("1.12.4", None), ("1.23.3", None), ("2.3.0", "legacy"))
ELICITING += (("2.3.0", "auto"),)
SAMPLING: tuple[Host, ...] = (("1.9.4", None), *ELICITING)
ROOTS: tuple[Host, ...] = (("1.2.1", None), *SAMPLING)
# Hosts that declare nothing the question needs: 1.9.4 cannot declare elicitation at all,
# the others simply register no callback; 1.2.1 declares only roots, whatever it does.
UNDECLARED: tuple[Host, ...] = (("1.2.1", None), ("1.9.4", None), ("1.23.3", None))
UNDECLARED += (("2.3.0", "legacy"), ("2.3.0", "auto"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    servers = {name: sdk_entry(version) for name, version in UPSTREAMS.items()}
    with running_daemon(tmp_path_factory.mktemp("asking-hosts"), servers) as d:
        yield d


def _cases(hosts: tuple[Host, ...]) -> list[Any]:
    """Every host, on each transport its release has, with each upstream."""
    return [
        pytest.param(
            version,
            mode,
            transport,
            server,
            id=f"{version}{'-' + mode if mode else ''}-{transport}-{server}",
        )
        for version, mode in hosts
        for transport in PYTHON_HOST_TRANSPORTS[version]
        for server in UPSTREAMS
    ]


def asking_host(
    daemon: Daemon,
    host: Host,
    transport: str,
    *,
    server: str,
    tool: str,
    declare: tuple[str, ...],
    answer: str = "",
    arguments: dict[str, Any] | None = None,
) -> list[str]:
    """``sdk_host.py --ask`` on ``host``'s release, reaching ``daemon`` over ``transport``."""
    version, mode = host
    argv = [str(peer_python(version)), str(SDK_HOST), "--transport", transport]
    if mode is not None:
        argv += ["--mode", mode]
    argv += ["--ask", tool, "--server", server, "--declare", ",".join(declare)]
    argv += ["--answer", answer, "--timeout", str(CALL_TIMEOUT)]
    if arguments is not None:
        argv += ["--arguments", json.dumps(arguments)]
    return argv + (["--", *SERVE_COMMAND] if transport == "stdio" else [mcp_url(daemon)])


def _revision(host: Host) -> str:
    return python_host_revision(*host)


def _check_asked_natively(run: HostRun, host: Host, method: str) -> dict[str, Any]:
    """The host's callback got exactly one question, ``method``, in the host's own era;
    the params it got."""
    rev = _revision(host)
    seen = run.seen
    assert seen["sdk"] == host[0]
    assert seen["protocolVersion"] == rev, seen
    [asked] = seen["asked"]
    assert asked["method"] == method, seen["asked"]
    assert seen["result"]["isError"] is False, seen["result"]
    # Every frame mcpx sent this host is at its revision (and the daemon's sweep holds each
    # to that revision's schema when the module ends).
    assert {f["rev"] for f in run.frames} == {rev}, [(f["rev"], f["answering"]) for f in run.frames]
    questions = [f["frame"] for f in run.frames if "method" in f["frame"]]
    rounds = [
        f["frame"]["result"]
        for f in run.frames
        if f["answering"] == "tools/call"
        and f["frame"].get("result", {}).get("resultType") == "input_required"
    ]
    if rev == MODERN_REVISION:
        # Asked in-band: no request was sent; the call was answered input_required with the
        # question, and the SDK's Client retried on its own with the answer.
        assert questions == [], questions
        assert len(rounds) == 1, rounds
        [request] = rounds[0]["inputRequests"].values()
        assert request["method"] == method, rounds[0]
        assert rounds[0]["requestState"], rounds[0]
    else:
        # Asked with a request of mcpx's (negative id) mid-call.
        assert rounds == [], rounds
        assert [(q["method"], q["id"] < 0) for q in questions] == [(method, True)], questions
    params: dict[str, Any] = asked.get("params", {})
    return params


def _texts(run: HostRun) -> list[str]:
    texts: list[str] = run.seen["result"]["texts"]
    return texts


def _answered_with(run: HostRun, text: str) -> None:
    """The call's result is the upstream's: the answer it got (hosts before 2025-06-18 also
    get the upstream's structuredContent, {"result": ...}, as a second text block)."""
    texts = _texts(run)
    assert texts[0] == text, texts
    if len(texts) > 1:
        assert [json.loads(t) for t in texts[1:]] == [{"result": text}], texts


@pytest.mark.obligation("S-MSG-3", "S-INPUT-5", "C-ELIC-5", "C-ELIC-6")
@pytest.mark.parametrize(("version", "mode", "transport", "server"), _cases(ELICITING))
def test_elicitation_reaches_the_calling_host(
    daemon: Daemon, version: str, mode: str | None, transport: str, server: str
) -> None:
    host = (version, mode)
    answer = f"answered by {version} {mode or ''} over {transport}"
    argv = asking_host(
        daemon, host, transport, server=server, tool="ask", declare=("elicitation",), answer=answer
    )
    run = run_host(argv, daemon, timeout=HOST_RUN_TIMEOUT)
    params = _check_asked_natively(run, host, "elicitation/create")
    assert params["message"] == f"{server} (via mcpx) asks: q?", params
    assert params["requestedSchema"]["properties"]["answer"]["type"] == "string", params
    assert params["requestedSchema"]["required"] == ["answer"], params
    _answered_with(run, answer)


@pytest.mark.parametrize(("version", "mode", "transport", "server"), _cases(SAMPLING))
def test_sampling_reaches_the_calling_host(
    daemon: Daemon, version: str, mode: str | None, transport: str, server: str
) -> None:
    host = (version, mode)
    answer = f"sampled by {version} {mode or ''} over {transport}"
    argv = asking_host(
        daemon, host, transport, server=server, tool="sample", declare=("sampling",), answer=answer
    )
    run = run_host(argv, daemon, timeout=HOST_RUN_TIMEOUT)
    params = _check_asked_natively(run, host, "sampling/createMessage")
    assert params["maxTokens"] == 100, params
    [message] = params["messages"]
    assert message["role"] == "user" and message["content"]["text"] == "p", params
    _answered_with(run, answer)


@pytest.mark.parametrize(("version", "mode", "transport", "server"), _cases(ROOTS))
def test_roots_reach_the_calling_host(
    daemon: Daemon, version: str, mode: str | None, transport: str, server: str
) -> None:
    host = (version, mode)
    argv = asking_host(daemon, host, transport, server=server, tool="roots", declare=("roots",))
    run = run_host(argv, daemon, timeout=HOST_RUN_TIMEOUT)
    _check_asked_natively(run, host, "roots/list")
    _answered_with(run, json.dumps([ROOT]))


def _servers_in_flight(daemon: Daemon, server: str) -> int:
    with daemon.http() as api:
        listed = api.get("/v1/servers").json()["servers"]
    [entry] = [s for s in listed if s["name"] == server]
    return sum(int(i["inFlight"]) for i in entry["instances"])


def _pending(daemon: Daemon, running: list[Future[HostRun]]) -> list[dict[str, Any]]:
    """The broker's pending questions, once there are any (bounded); fails early with the
    host's own error if a host ended meanwhile."""
    with daemon.http() as api:

        def held() -> list[dict[str, Any]]:
            pending: list[dict[str, Any]] = api.get("/v1/questions").json()["questions"]
            for done in (f for f in running if f.done() and not pending):
                raise AssertionError(f"a host ended before any question was held: {done.result()}")
            return pending

        return wait_until(
            held, timeout=SHOW_LIMIT, interval=POLL_INTERVAL, message="a question in the broker"
        )


def _answer_in_broker(daemon: Daemon, question: dict[str, Any], text: str) -> None:
    with daemon.http() as api:
        reply = {"content": {"answer": text}}
        done = api.post(f"/v1/questions/{question['id']}/answer", json=reply)
        assert done.status_code == 200 and done.json()["state"] == "answered", done.text
        assert api.get("/v1/questions").json()["questions"] == []


@pytest.mark.parametrize(("version", "mode", "transport", "server"), _cases(UNDECLARED))
def test_a_host_that_declared_no_elicitation_is_answered_through_the_broker(
    daemon: Daemon, version: str, mode: str | None, transport: str, server: str
) -> None:
    host = (version, mode)
    # The host's callbacks (none registered) would answer this; the broker's answer differs.
    argv = asking_host(daemon, host, transport, server=server, tool="ask", declare=(), answer="x")
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(run_host, argv, daemon, timeout=HOST_RUN_TIMEOUT)
        [question] = _pending(daemon, [running])
        assert question["server"] == server and question["method"] == "elicitation/create"
        assert question["params"]["message"] == f"{server} (via mcpx) asks: q?", question
        _answer_in_broker(daemon, question, "the broker's answer")
        run = running.result(timeout=HOST_RUN_TIMEOUT)
    assert run.seen["protocolVersion"] == _revision(host), run.seen
    assert run.seen["asked"] == [], run.seen["asked"]
    assert run.seen["result"]["isError"] is False, run.seen
    _answered_with(run, "the broker's answer")
    # Nothing was put to the host: no request, no input_required round.
    assert [f for f in run.frames if "method" in f["frame"]] == []
    assert all(
        f["frame"].get("result", {}).get("resultType") != "input_required" for f in run.frames
    )


@pytest.mark.obligation("S-MRTR-5")
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_modern_host_asked_what_it_did_not_declare_is_answered_through_the_broker(
    daemon: Daemon, transport: str, server: str
) -> None:
    # S-MRTR-5: it declared sampling only: its call is served in input_required rounds,
    # but the elicitation is not put to it; the broker's answer completes its call.
    host: Host = ("2.3.0", "auto")
    argv = asking_host(
        daemon, host, transport, server=server, tool="ask", declare=("sampling",), answer="x"
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(run_host, argv, daemon, timeout=HOST_RUN_TIMEOUT)
        [question] = _pending(daemon, [running])
        assert question["params"]["message"] == f"{server} (via mcpx) asks: q?", question
        _answer_in_broker(daemon, question, "brokered")
        run = running.result(timeout=HOST_RUN_TIMEOUT)
    assert run.seen["protocolVersion"] == MODERN_REVISION, run.seen
    assert run.seen["asked"] == [], run.seen["asked"]
    _answered_with(run, "brokered")
    for frame in (f["frame"] for f in run.frames if f["answering"] == "tools/call"):
        assert "elicitation/create" not in json.dumps(frame.get("result", {})), frame


# Pairs of hosts (the one making a slow call, the one whose call asks), same era and mixed.
PAIRS: list[tuple[Host, Host]] = [
    (("1.23.3", None), ("1.23.3", None)),
    (("2.3.0", "auto"), ("2.3.0", "auto")),
    (("2.3.0", "auto"), ("1.23.3", None)),
    (("1.23.3", None), ("2.3.0", "auto")),
]
SLOW_SECONDS = 8.0  # long enough for the second host to start and its call to ask


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(
    ("first", "second", "server"),
    [
        pytest.param(a, b, server, id=f"{a[0]}{a[1] or ''}+{b[0]}{b[1] or ''}-{server}")
        for a, b in PAIRS
        # The modern upstream too, for the pairs of one release (it asks in input_required
        # rounds, which mcpx answers; the attribution is the same).
        for server in (UPSTREAMS if a == b else ["legacy"])
    ],
)
def test_a_question_is_never_put_to_another_host(
    daemon: Daemon, transport: str, first: Host, second: Host, server: str
) -> None:
    """Host A's call (``slow``) is in flight on the shared server when host B's call (``ask``)
    asks: with two calls in flight the question cannot be attributed, so it must not reach
    A (nor be guessed to be B's); it waits in the broker, and B's call completes with the
    broker's answer. Both declared elicitation, each answering its own way."""
    slow = asking_host(
        daemon,
        first,
        transport,
        server=server,
        tool="slow",
        declare=("elicitation",),
        answer="from A",
        arguments={"seconds": SLOW_SECONDS},
    )
    asking = asking_host(
        daemon, second, transport, server=server, tool="ask", declare=("elicitation",), answer="B"
    )
    assert _servers_in_flight(daemon, server) == 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        a = pool.submit(run_host, slow, daemon, timeout=HOST_RUN_TIMEOUT)
        wait_until(
            lambda: _servers_in_flight(daemon, server) or a.done(),
            timeout=SHOW_LIMIT,
            interval=POLL_INTERVAL,
        )
        assert not a.done(), f"A ended before its call was in flight: {a.result()}"
        assert _servers_in_flight(daemon, server) == 1
        b = pool.submit(run_host, asking, daemon, timeout=HOST_RUN_TIMEOUT)
        [question] = _pending(daemon, [a, b])
        # The question was held while A's call was still in flight (so it was ambiguous).
        assert not a.done(), "A's call ended before B's question: the case proves nothing"
        assert question["params"]["message"] == f"{server} (via mcpx) asks: q?", question
        _answer_in_broker(daemon, question, "brokered for B")
        run_b = b.result(timeout=HOST_RUN_TIMEOUT)
        run_a = a.result(timeout=HOST_RUN_TIMEOUT)
    assert run_a.seen["asked"] == [], run_a.seen  # A was never asked B's question
    assert _texts(run_a)[0] == f"slept {SLOW_SECONDS}", run_a.seen
    assert run_b.seen["asked"] == [], run_b.seen  # unattributed: not guessed to be B's
    _answered_with(run_b, "brokered for B")
    for run, host in ((run_a, first), (run_b, second)):
        assert run.seen["protocolVersion"] == _revision(host), run.seen
