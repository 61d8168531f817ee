"""What mcpx owes an upstream server that asks it questions (roots, sampling,
elicitation; ``input_required`` rounds in 2026-07-28): what it declares, questions
answered by a real daemon's broker (``/v1/questions``, ``mcpx elicit``), questions
refused at once, and answers checked before they are sent.

The scripted asker and the shared helpers are in ``helpers``; the daemon fixture
(``askers``) is in this directory's ``conftest.py``.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from obligations.client_questions.helpers import (
    EXPECTED_CAPS,
    FORM,
    LEGACY,
    META,
    SAMPLE,
    SAMPLED,
    Brokered,
    _call,
    _received,
    _text,
)
from support.daemon import Daemon


# C-ROOTS-2 (not offered: roots.listChanged is never declared)
# C-SAMP-2 (not offered: sampling.tools is never declared)
@pytest.mark.obligation(
    "C-ROOTS-1", "C-SAMP-1", "C-ELIC-1", "C-ELIC-2", "C-MRTR-11", "C-ROOTS-2", "C-SAMP-2"
)
def test_what_mcpx_declares_upstream_it_serves(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    # Legacy: declared once, at initialize; both elicitation modes spelled out.
    init = _text(_call(daemon, "legacy", "init", {}))
    assert init["protocolVersion"] == LEGACY
    assert init["capabilities"] == EXPECTED_CAPS
    # Modern: declared on every request, the one that may ask included (tools/call).
    meta = _text(_call(daemon, "modern", "meta", {}))
    assert meta[META + "clientCapabilities"] == EXPECTED_CAPS
    for entry in _received(modern_log):
        frame = entry["frame"]
        if "method" in frame and "id" in frame:
            caps = frame["params"]["_meta"][META + "clientCapabilities"]
            assert caps == EXPECTED_CAPS, frame
    # And roots are really served: nobody present to ask, mcpx's own (none).
    asked = {"requests": [{"method": "roots/list"}]}
    [reply] = _text(_call(daemon, "legacy", "ask", asked))
    assert reply["result"] == {"roots": []}


# C-SREQ-1 (and a request for an undeclared feature is an error, never a hang)
@pytest.mark.obligation("C-SREQ-1")
def test_ping_is_answered_and_undeclared_requests_are_errors(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    requests = [
        {"method": "ping"},
        {"method": "tasks/list"},  # mcpx declared no tasks capability
        {"method": "ping", "params": {"_meta": {"k": "v"}}},
    ]
    started = time.monotonic()
    replies = _text(_call(daemon, "legacy", "ask", {"requests": requests}))
    assert time.monotonic() - started < 60
    assert replies[0]["result"] == {}
    assert replies[2]["result"] == {}
    assert replies[1]["error"]["code"] == -32601, replies[1]
    assert "result" not in replies[1]


# C-SAMP-4 C-SAMP-9: a human (the broker) denies sampling: the server gets error -1.
@pytest.mark.obligation("C-SAMP-4", "C-SAMP-9")
def test_a_denied_sampling_request_is_error_minus_one(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    message = {"role": "user", "content": {"type": "text", "text": "tell me a secret"}}
    question = {"method": "sampling/createMessage"}
    question["params"] = {"messages": [message], "maxTokens": 10}
    call = Brokered(daemon, "legacy", {"requests": [question]})
    assert call.question["method"] == "sampling/createMessage"
    assert call.question["params"]["messages"] == [message]
    [reply] = _text(call.settle("decline"))
    assert reply["error"]["code"] == -1, reply
    assert "declined" in reply["error"]["message"]


OPAQUE = "e/../1?x=%20\u00fc=="
URL = "/consent?state=" + "x" * 300 + "&return=https%3A%2F%2Fexample.test%2Fdone"


class Hits(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Hits.seen.append(self.path)
        self.send_response(200)
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def watched_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose every request is counted."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{URL}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.obligation("C-ELIC-11", "C-ELIC-12", "C-ELIC-13", "C-ELIC-18", "C-MRTR-10")
@pytest.mark.parametrize("server", ["legacy", "modern"])
def test_a_url_elicitation_is_shown_whole_and_never_fetched(
    askers: tuple[Daemon, Path, Path], watched_url: str, server: str
) -> None:
    daemon, _, _ = askers
    params = {"mode": "url", "message": "sign in", "url": watched_url, "elicitationId": OPAQUE}
    if server == "legacy":
        arguments: dict[str, Any] = {
            "requests": [{"method": "elicitation/create", "params": params}]
        }
    else:
        request = {"method": "elicitation/create", "params": params}
        arguments = {"inputRequests": {"login": request}, "requestState": "s"}
    Hits.seen.clear()
    call = Brokered(daemon, server, arguments)
    # The same treatment in both eras: the whole URL, attributed, for the user to examine.
    assert call.question["params"]["url"] == watched_url
    assert call.question["params"]["elicitationId"] == OPAQUE  # carried as it came
    assert call.question["params"]["message"] == f"{server} (via mcpx) asks: sign in"
    shown = daemon.cli("elicit", "show", call.question["id"])
    assert shown.returncode == 0, shown.stderr
    assert f"  url:      {watched_url}" in shown.stdout.splitlines()
    time.sleep(0.5)  # had mcpx fetched it, the hit would be here by now
    assert Hits.seen == []  # not pre-fetched
    done = call.settle("cli")  # the user says it is done there
    assert Hits.seen == []  # nor opened by mcpx after consent: the user opens it
    if server == "legacy":
        [reply] = _text(done)
        assert reply["result"]["action"] == "accept"
    else:
        retried = _text(done)
        assert retried["params"]["inputResponses"]["login"]["action"] == "accept"


# C-MRTR-12: declined elicitation goes back as its action; a declined sampling request
# ends the call without a retry, and never as a JSON-RPC response.
@pytest.mark.obligation("C-MRTR-12")
def test_modern_declines_are_actions_or_no_retry(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    elicit = {"method": "elicitation/create", "params": {"message": "name?"}}
    elicit["params"]["requestedSchema"] = schema
    call = Brokered(daemon, "modern", {"inputRequests": {"who": elicit}})
    retried = _text(call.settle("decline"))
    assert retried["params"]["inputResponses"] == {"who": {"action": "decline"}}

    before = len(_received(modern_log))
    message = {"role": "user", "content": {"type": "text", "text": "hi"}}
    sample = {"method": "sampling/createMessage"}
    sample["params"] = {"messages": [message], "maxTokens": 5}
    call = Brokered(daemon, "modern", {"inputRequests": {"s": sample}})
    ended = call.settle("decline")
    assert ended["error"]["code"] == "upstream_error", ended
    assert "sampling/createMessage was declined" in ended["error"]["message"]
    after = [e["frame"] for e in _received(modern_log)[before:]]
    calls = [f for f in after if f.get("method") == "tools/call"]
    assert len(calls) == 1, calls  # asked once, never retried
    assert [f for f in after if "method" not in f] == []  # no response of any kind


# C-MRTR-11: a question of a kind mcpx did not declare fails the call (a server error).
@pytest.mark.obligation("C-MRTR-11")
def test_an_undeclared_kind_of_input_request_is_a_server_error(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, modern_log = askers
    before = len(_received(modern_log))
    bogus = {"inputRequests": {"t": {"method": "tasks/get", "params": {"taskId": "1"}}}}
    with daemon.http() as api:
        r = api.post("/v1/call", json={"server": "modern", "tool": "ask", "arguments": bogus})
    error = r.json()["error"]
    assert r.status_code == 502 and error["code"] == "upstream_error", error
    assert error["message"].startswith("modern asked tasks/get, which mcpx cannot answer")
    after = [e["frame"] for e in _received(modern_log)[before:]]
    assert len([f for f in after if f.get("method") == "tools/call"]) == 1, after


# C-ELIC-17: a completion for an elicitation mcpx never saw changes nothing.
@pytest.mark.obligation("C-ELIC-17")
def test_an_unknown_elicitation_completion_is_ignored(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    note = {
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "never-asked-0000"},
    }
    replies = _text(
        _call(daemon, "legacy", "ask", {"notify": [note], "requests": [{"method": "ping"}]})
    )
    assert replies[0]["result"] == {}
    # The connection is as good as before, and nothing waits in the broker.
    assert _text(_call(daemon, "legacy", "init", {}))["protocolVersion"] == LEGACY
    with daemon.http() as api:
        assert api.get("/v1/questions").json()["questions"] == []


# -- questions mcpx refuses at once, and answers it checks before sending -------------


TOOL = {"name": "get_weather", "inputSchema": {"type": "object"}}


def _nothing_held(daemon: Daemon) -> bool:
    with daemon.http() as api:
        return api.get("/v1/questions").json()["questions"] == []


# C-SAMP-3 C-SREQ-4 S-INPUT-15: mcpx never declares sampling.tools, so sampling with tools
# or toolChoice is answered -32602 at once, naming why: never held by the broker, never put
# to a host.
@pytest.mark.obligation("C-SAMP-3", "C-SREQ-4", "S-INPUT-15")
def test_sampling_with_tools_is_refused_at_once(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    requests = [
        {"method": "sampling/createMessage", "params": {**SAMPLE, "tools": [TOOL]}},
        {"method": "sampling/createMessage", "params": {**SAMPLE, "toolChoice": {"mode": "auto"}}},
    ]
    replies = _text(_call(daemon, "legacy", "ask", {"requests": requests}))
    for reply in replies:
        assert reply["error"]["code"] == -32602, reply
        assert "sampling.tools" in reply["error"]["message"]
    assert _nothing_held(daemon)


# C-SAMP-3 (2026-07-28: no reply channel, so the call fails, and is never retried)
@pytest.mark.obligation("C-SAMP-3")
def test_modern_sampling_with_tools_ends_the_call(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, modern_log = askers
    before = len(_received(modern_log))
    sample = {"method": "sampling/createMessage", "params": {**SAMPLE, "tools": [TOOL]}}
    with daemon.http() as api:
        body = {"server": "modern", "tool": "ask", "arguments": {"inputRequests": {"s": sample}}}
        r = api.post("/v1/call", json=body)
    assert r.status_code == 502 and "sampling.tools" in r.json()["error"]["message"], r.text
    calls = [e for e in _received(modern_log)[before:] if e["frame"].get("method") == "tools/call"]
    assert len(calls) == 1
    assert _nothing_held(daemon)


# C-SAMP-8 (includeContext may be ignored, in every revision): "thisServer" is not
# refused though mcpx declares no sampling.context; the broker holds it like any other.
@pytest.mark.obligation("C-SAMP-8")
def test_include_context_is_not_refused(askers: tuple[Daemon, Path, Path]) -> None:
    daemon, _, _ = askers
    sample = {"method": "sampling/createMessage"}
    sample["params"] = {**SAMPLE, "includeContext": "thisServer"}
    call = Brokered(daemon, "legacy", {"requests": [sample]})
    assert call.question["params"]["includeContext"] == "thisServer"
    [reply] = _text(call.settle("answer", SAMPLED))
    assert reply["result"] == SAMPLED


# C-ELIC-4 C-SREQ-4: a mode other than form (or none) and url is -32602 at once.
@pytest.mark.obligation("C-ELIC-4", "C-SREQ-4")
def test_an_unknown_elicitation_mode_is_refused_at_once(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    asks = [{"mode": "telepathy", "message": "think"}, {"mode": None, "message": "think"}]
    requests = [{"method": "elicitation/create", "params": p} for p in asks]
    for reply in _text(_call(daemon, "legacy", "ask", {"requests": requests})):
        assert reply["error"]["code"] == -32602, reply
        assert "mode" in reply["error"]["message"]
    assert _nothing_held(daemon)


# C-ELIC-4: a 2025-06-18 server was declared elicitation without modes (form only):
# its url elicitation is -32602 at once; its form one is taken as before.
@pytest.mark.obligation("C-ELIC-4")
def test_url_elicitation_where_url_was_not_declared_is_refused(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    url = {"mode": "url", "message": "sign in", "url": "https://example.test/x"}
    url["elicitationId"] = "e1"
    requests = [{"method": "elicitation/create", "params": url}, {"method": "ping"}]
    refused, pong = _text(_call(daemon, "older", "ask", {"requests": requests}))
    assert refused["error"]["code"] == -32602, refused
    assert "elicitation.url" in refused["error"]["message"]
    assert pong["result"] == {}
    form = {"message": "name?", "requestedSchema": FORM}
    call = Brokered(
        daemon, "older", {"requests": [{"method": "elicitation/create", "params": form}]}
    )
    [reply] = _text(call.settle("answer", {"answer": "ada"}))
    assert reply["result"] == {"action": "accept", "content": {"answer": "ada"}}


# C-ELIC-1 (an ElicitResult needs action): a url elicitation answered through
# /v1/questions with empty content goes upstream as {"action": "accept"}; content is
# refused with 400 first, and the question stays open.
@pytest.mark.obligation("C-ELIC-1")
def test_a_url_elicitation_answered_through_v1_is_an_accept(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    url = {"mode": "url", "message": "sign in", "url": "https://example.test/x"}
    url["elicitationId"] = "e2"
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "elicitation/create", "params": url}]}
    )
    with daemon.http() as api:
        path = f"/v1/questions/{call.question['id']}/answer"
        wrong = api.post(path, json={"content": {"token": "x"}})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_answer"
    [reply] = _text(call.settle("answer", {}))
    assert reply["result"] == {"action": "accept"}


# C-SAMP-1 (a CreateMessageResult needs role, content, model) and C-ELIC-9: answers given
# through /v1/questions are checked before they are sent; a wrong one is 400 naming
# what is wrong, and the question stays open.
@pytest.mark.obligation("C-SAMP-1", "C-ELIC-9")
def test_v1_answers_are_checked_before_they_go_upstream(
    askers: tuple[Daemon, Path, Path],
) -> None:
    daemon, _, _ = askers
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "sampling/createMessage", "params": SAMPLE}]}
    )
    wrong = [
        ({"text": "hi"}, "text"),
        ({"role": "assistant", "content": {"type": "text", "text": "hi"}}, "model"),
        ({**SAMPLED, "content": {"type": "text"}}, "content.text"),
        ({**SAMPLED, "content": [SAMPLED["content"]]}, "content"),
    ]
    with daemon.http() as api:
        path = f"/v1/questions/{call.question['id']}/answer"
        for content, field in wrong:
            r = api.post(path, json={"content": content})
            assert r.status_code == 400, (content, r.text)
            assert r.json()["error"]["details"]["field"] == field, r.text
        assert api.get(f"/v1/questions/{call.question['id']}").json()["state"] == "pending"
    [reply] = _text(call.settle("answer", SAMPLED))
    assert reply["result"] == SAMPLED
    form = {"message": "name?", "requestedSchema": FORM}
    call = Brokered(
        daemon, "legacy", {"requests": [{"method": "elicitation/create", "params": form}]}
    )
    with daemon.http() as api:
        extra = {"content": {"answer": "ada", "age": 3}}
        r = api.post(f"/v1/questions/{call.question['id']}/answer", json=extra)
    assert r.status_code == 400 and r.json()["error"]["details"]["field"] == "age", r.text
    [reply] = _text(call.settle("answer", {"answer": "ada"}))
    assert reply["result"] == {"action": "accept", "content": {"answer": "ada"}}
