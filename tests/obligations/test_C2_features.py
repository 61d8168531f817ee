"""Server obligations of the features mcpx serves hosts: resources, prompts, completion,
logging, progress, cancellation and 2026-07-28 subscriptions (group C2).

One real daemon for the module, with real upstreams: the demo server, server-everything
(its ``gzip-file-as-resource`` tool registers a resource, so it announces a resource list
change; ``toggle-subscriber-updates`` sends ``notifications/resources/updated`` every 5 s),
the conformance fixture on SDK 2.3.0 (image/embedded prompts, a binary resource, a prompt
list change), the SDK 1.23.3 fixture (a legacy upstream that asks questions), and a small
FastMCP 1.23.3 server written by this module (image and audio prompt content, a blob
resource, 150 listed resources and no ``completions``). Two configured servers fail on
purpose while holding a secret (a header, an environment variable).

Hosts: ``mcpx serve`` over stdio (raw lines) and ``/mcp`` over HTTP (raw requests). Every
frame the daemon sends is traced and checked strictly against the host's revision when the
daemon stops; the frames a test reads are also checked with ``sent_frames``.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import (
    FIXTURES,
    PeerFailed,
    StdioPeer,
    everything_server_command,
    free_port,
    peer_python,
    stdio_peer,
)
from support.schemas import FrameLog

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUB_ID = "io.modelcontextprotocol/subscriptionId"
BOTH = "application/json, text/event-stream"
SECRET = "c2-s3cr3t-7f9a2e"
DOC = "demo://resource/static/document/architecture.md"
OTHER_DOC = "demo://resource/static/document/features.md"
WATCHED = "mcpx://everything/" + quote(DOC, safe="")
OTHER = "mcpx://everything/" + quote(OTHER_DOC, safe="")
README = "mcpx://demo/" + quote("demo://readme", safe="")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(16))
MIME = re.compile(r"[a-z]+/[A-Za-z0-9.+-]+")

# A FastMCP server (SDK 1.23.3): image, audio and an embedded blob in one prompt, a blob
# resource, 150 listed resources and a template over them, and no completions.
RICH_SERVER = f"""
import base64

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.prompts.base import UserMessage
from mcp.types import AudioContent, BlobResourceContents, EmbeddedResource, ImageContent

PNG = {PNG!r}
WAV = {WAV!r}
server = FastMCP("c2-rich", log_level="WARNING")


def b64(data):
    return base64.b64encode(data).decode()


@server.prompt()
def media() -> list:
    blob = BlobResourceContents(
        uri="rich://blob", mimeType="application/octet-stream", blob=b64(bytes(range(256)))
    )
    return [
        UserMessage(ImageContent(type="image", data=b64(PNG), mimeType="image/png")),
        UserMessage(AudioContent(type="audio", data=b64(WAV), mimeType="audio/wav")),
        UserMessage(EmbeddedResource(type="resource", resource=blob)),
    ]


@server.prompt()
def pick(word: str) -> str:
    return "You picked: " + word


@server.resource("rich://blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return bytes(range(256))


for i in range(150):
    server.resource(f"rich://item/{{i:03d}}", name=f"item{{i:03d}}")(lambda: "x")


@server.resource("rich://item/{{n}}")
def item(n: str) -> str:
    return n


server.run("stdio")
"""

# RFC 3986, section 3 (URI = scheme ":" hier-part [ "?" query ] [ "#" fragment ]).
_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_AUTHORITY = (
    rf"(?:(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?"
    rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*(?::[0-9]*)?"
)
RFC3986_URI = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:"
    rf"(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/?(?:{_PCHAR}+(?:/{_PCHAR}*)*)?)"
    rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("c2")
    rich = tmp / "rich_server.py"
    rich.write_text(RICH_SERVER)
    everything = everything_server_command("stdio")
    conformance = [str(FIXTURES / "conformance_server.py"), "--transport", "stdio"]
    servers = {
        "demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]},
        "everything": {"command": everything[0], "args": everything[1:]},
        "conformance": {"command": str(peer_python("2.3.0")), "args": conformance},
        "legacy": sdk_entry("1.23.3"),
        "rich": {"command": str(peer_python("1.23.3")), "args": [str(rich)]},
        # Nothing listens there: every call fails, holding the secret in a header.
        "remote": {
            "url": f"http://127.0.0.1:{free_port()}/mcp",
            "headers": {"Authorization": f"Bearer {SECRET}"},
        },
        # Exits at once, holding the secret in its environment.
        "broken": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit(3)"],
            "env": {"API_TOKEN": SECRET},
        },
    }
    with running_daemon(tmp, servers) as d:
        yield d


# --- hosts ----------------------------------------------------------------------------


def _serve(daemon: Daemon) -> Any:
    return stdio_peer([sys.executable, "-m", "mcpx", "serve"], env=daemon.env())


def _drain(peer: StdioPeer, seconds: float) -> list[dict[str, Any]]:
    """Every message the peer sends within ``seconds``."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            got.append(peer.recv(left))
        except PeerFailed:
            break
    return got


def _until(
    peer: StdioPeer, want: Callable[[list[dict[str, Any]]], bool], limit: float = 30
) -> list[dict[str, Any]]:
    """Messages from the peer until ``want(all so far)`` holds (or ``limit`` s pass)."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + limit
    while not want(got) and (left := deadline - time.monotonic()) > 0:
        try:
            got.append(peer.recv(left))
        except PeerFailed:
            break
    return got


def _frames(r: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC frames of a /mcp response (a JSON body or an event stream)."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(x[len("data: ") :]) for x in r.text.splitlines() if x.startswith("data: ")
        ]
    return [r.json()] if r.content else []


def _session(mcp: httpx.Client, rev: str = LEGACY) -> tuple[dict[str, str], dict[str, Any]]:
    """A legacy HTTP session's headers, and its initialize result."""
    params = {
        "protocolVersion": rev,
        "capabilities": {},
        "clientInfo": {"name": "c2", "version": "1"},
    }
    r = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    headers = {"Mcp-Session-Id": r.headers["mcp-session-id"], "Accept": BOTH}
    if rev >= "2025-06-18":
        headers["MCP-Protocol-Version"] = rev
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
    result: dict[str, Any] = r.json()["result"]
    return headers, result


def _legacy(
    mcp: httpx.Client, headers: dict[str, str], method: str, params: dict[str, Any], rid: Any = 1
) -> list[dict[str, Any]]:
    frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return _frames(mcp.post("/mcp", json=frame, headers=headers))


def _modern(
    mcp: httpx.Client,
    method: str,
    params: dict[str, Any],
    *,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
    rid: Any = 1,
) -> list[dict[str, Any]]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Accept": BOTH}
    if name is not None:
        headers["Mcp-Name"] = name
    frame = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**params, "_meta": meta or params.get("_meta") or META},
    }
    return _frames(mcp.post("/mcp", json=frame, headers=headers))


def _listen_frame(rid: Any, notifications: dict[str, Any]) -> dict[str, Any]:
    params = {"notifications": notifications, "_meta": META}
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}


@contextmanager
def _listening(url: str, rid: Any, notifications: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """An HTTP ``subscriptions/listen`` stream, read by a thread into the yielded list
    (the acknowledgement is in it on entry); the stream is closed on exit."""
    got: list[dict[str, Any]] = []
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen", "Accept": BOTH}

    def read(lines: Iterator[str]) -> None:
        try:
            for line in lines:
                if line.startswith("data: "):
                    got.append(json.loads(line[len("data: ") :]))
        except httpx.HTTPError:
            pass  # closed by the test

    with (
        httpx.Client(base_url=url, timeout=60) as client,
        client.stream("POST", "/mcp", json=_listen_frame(rid, notifications), headers=headers) as r,
    ):
        assert r.status_code == 200
        threading.Thread(target=read, args=(r.iter_lines(),), daemon=True).start()
        assert _wait(lambda: bool(got)), "no acknowledgement"
        yield got


def _wait(predicate: Callable[[], bool], limit: float = 30) -> bool:
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(predicate())


def _servers(daemon: Daemon) -> list[dict[str, Any]]:
    with daemon.http() as api:
        servers: list[dict[str, Any]] = api.get("/v1/servers").json()["servers"]
    return servers


def _watched(daemon: Daemon, server: str = "everything") -> list[str]:
    return next(s["subscriptions"] for s in _servers(daemon) if s["name"] == server)


def _in_flight(daemon: Daemon) -> int:
    return sum(i["inFlight"] for s in _servers(daemon) for i in s["instances"])


def _call(server: str, tool: str, arguments: dict[str, Any], meta: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "mcpx_call",
        "arguments": {"server": server, "tool": tool, "arguments": arguments},
    }
    if meta is not None:
        params["_meta"] = meta
    return params


def _gzip_resource(name: str) -> dict[str, Any]:
    """server-everything registers a resource (and says its list changed)."""
    args = {"name": name, "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}
    return _call("everything", "gzip-file-as-resource", args)


def _all_pages(fetch: Callable[[dict[str, Any]], dict[str, Any]], key: str) -> list[Any]:
    items: list[Any] = []
    params: dict[str, Any] = {}
    while True:
        result = fetch(params)
        items += result[key]
        if "nextCursor" not in result:
            return items
        params = {"cursor": result["nextCursor"]}


def _b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


_TOGGLED: list[bool] = []


def _updates_on(daemon: Daemon) -> None:
    """server-everything's simulated updates on, once per daemon (the tool toggles)."""
    if not _TOGGLED:
        done = daemon.cli("call", "everything", "toggle-subscriber-updates")
        assert done.returncode == 0, done.stderr
        _TOGGLED.append(True)


# --- resources ------------------------------------------------------------------------


# S-RES-2 S-SUB-1 S-SUB-2 S-SUB-3 S-SUB-4 S-SUB-5
def test_a_resource_list_change_reaches_legacy_hosts_and_the_listens_that_asked(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    with _serve(daemon) as legacy, _serve(daemon) as modern:
        caps = legacy.initialize(LEGACY)["capabilities"]
        assert caps["resources"]["listChanged"] is True
        # Three concurrent listens on one stdio connection, ids of both types.
        filters = {
            "s-1": {"resourcesListChanged": True},
            2: {"resourcesListChanged": True, "promptsListChanged": True},
            "tools-only": {"toolsListChanged": True},
        }
        for rid, wanted in filters.items():
            modern.send(_listen_frame(rid, wanted))
        acks = _until(modern, lambda got: len(got) >= 3)
        assert len(acks) == 3
        by_id = {a["params"]["_meta"][SUB_ID]: a for a in acks}
        assert set(by_id) == set(filters)  # each tagged with its own id, type preserved
        for ack in acks:
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            sent_frames.sent(ack, MODERN)
        # Only what will be delivered: no prompts (never promised), no tools (no
        # pass-through server, so mcpx's tool list is fixed).
        assert by_id["s-1"]["params"]["notifications"] == {"resourcesListChanged": True}
        assert by_id[2]["params"]["notifications"] == {"resourcesListChanged": True}
        assert by_id["tools-only"]["params"]["notifications"] == {}

        reply = legacy.request(1, "tools/call", _gzip_resource("c2-a.txt.gz"), timeout=60)
        assert reply["result"]["content"][0]["type"] == "resource_link", reply
        changed = "notifications/resources/list_changed"
        seen = legacy.notifications + _until(
            legacy, lambda got: any(m.get("method") == changed for m in got)
        )
        assert {"jsonrpc": "2.0", "method": changed} in seen
        for note in seen:
            sent_frames.sent(note, LEGACY)
        pushed = _until(modern, lambda got: len(got) >= 2) + _drain(modern, 1.0)
        for note in pushed:
            sent_frames.sent(note, MODERN)
        # Exactly one per listen that asked, each carrying that listen's id.
        assert sorted((n["method"], str(n["params"]["_meta"][SUB_ID])) for n in pushed) == [
            (changed, "2"),
            (changed, "s-1"),
        ]
        assert [n["params"]["_meta"][SUB_ID] for n in pushed if n["params"]["_meta"][SUB_ID] == 2]


# S-RES-4
def test_updates_come_for_the_subscribed_uri_only_and_stop_after_unsubscribe(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    updated = "notifications/resources/updated"

    def updates(got: list[dict[str, Any]]) -> list[str]:
        return [m["params"]["uri"] for m in got if m.get("method") == updated]

    with _serve(daemon) as host, _serve(daemon) as other:
        host.initialize(LEGACY)
        other.initialize(LEGACY)
        assert host.request(1, "resources/subscribe", {"uri": WATCHED})["result"] == {}
        # Another host watches a second URI: the upstream then sends updates for both.
        assert other.request(1, "resources/subscribe", {"uri": OTHER})["result"] == {}
        _updates_on(daemon)
        # server-everything sends one round every 5 s.
        seen = _until(host, lambda got: bool(updates(got)), limit=20)
        assert updates(seen) == [WATCHED], seen
        assert OTHER not in updates(seen + _drain(host, 0.5))
        for note in seen:
            sent_frames.sent(note, LEGACY)
        assert other.request(2, "ping")["result"] == {}
        assert OTHER in updates(other.notifications + _drain(other, 6))

        reply = host.request(2, "resources/unsubscribe", {"uri": WATCHED})
        assert reply["result"] == {}
        _drain(host, 0.5)  # a round already on its way
        later = _drain(host, 6)  # another round: none for this host
        assert updates(later) == [], later
        # The upstream kept sending (the other host still hears of its URI).
        assert OTHER in updates(other.notifications + _drain(other, 1))


# S-RES-3 S-PROMPT-3
def test_lists_are_the_same_for_every_2026_requester(daemon: Daemon) -> None:
    def listing(send: Callable[[str, dict[str, Any]], dict[str, Any]], kind: str) -> list[Any]:
        return _all_pages(lambda params: send(f"{kind}/list", params), kind)

    def over_http(method: str, params: dict[str, Any]) -> dict[str, Any]:
        with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
            [reply] = _modern(mcp, method, params)
        result: dict[str, Any] = reply["result"]
        return result

    with _serve(daemon) as peer:
        rids = iter(range(1, 1000))

        def over_stdio(method: str, params: dict[str, Any]) -> dict[str, Any]:
            reply = peer.request(next(rids), method, {**params, "_meta": META}, timeout=60)
            result: dict[str, Any] = reply["result"]
            return result

        for kind in ("resources", "prompts"):
            first = listing(over_http, kind)
            assert first, kind
            # Another connection, another transport, and after other requests' side
            # effects (a subscription, a log level on a legacy session): the same list.
            with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
                headers, _ = _session(mcp)
                _legacy(mcp, headers, "logging/setLevel", {"level": "debug"})
                _legacy(mcp, headers, "resources/subscribe", {"uri": README})
                assert listing(over_stdio, kind) == first
                assert listing(over_http, kind) == first
                mcp.delete("/mcp", headers=headers)


# S-RES-6 S-RES-8
def test_listed_uris_are_mcpx_uris_that_conform_to_rfc_3986(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = _session(mcp)

        def fetch(method: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
            def one(params: dict[str, Any]) -> dict[str, Any]:
                [reply] = _legacy(mcp, headers, method, params)
                sent_frames.sent(reply, LEGACY, answering=method)
                result: dict[str, Any] = reply["result"]
                return result

            return one

        resources = _all_pages(fetch("resources/list"), "resources")
        templates = _all_pages(fetch("resources/templates/list"), "resourceTemplates")
    uris = [r["uri"] for r in resources]
    # Every server's kind of URI is there: custom schemes, file-less paths, many items.
    assert WATCHED in uris and README in uris and len(uris) > 150
    # Expressions of a template (RFC 6570) are replaced by a value to check the rest.
    expanded = [re.sub(r"\{[^{}]*\}", "v", t["uriTemplate"]) for t in templates]
    assert expanded
    for uri in [*uris, *expanded]:
        # A custom scheme of mcpx's own: never https (a host cannot fetch these itself).
        assert urlsplit(uri).scheme == "mcpx", uri
        assert RFC3986_URI.fullmatch(uri), f"not an RFC 3986 URI: {uri!r}"
        assert urlsplit(uri).netloc in {"demo", "everything", "conformance", "legacy", "rich"}


_TRAVERSALS = [
    "../../etc/passwd",
    "mcpx://../etc/passwd",
    "mcpx://demo/..%2F..%2Fetc%2Fpasswd",
    "mcpx://demo/" + quote("file:///root/../../etc/shadow", safe=""),
    "file:///root/../../etc/shadow",
    "file:///etc/passwd",
]


# S-RES-12 S-RES-14 S-RES-15
def test_resource_uris_are_checked_and_contents_are_well_formed(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    binary = "mcpx://conformance/" + quote("test://static-binary", safe="")
    blob = "mcpx://rich/" + quote("rich://blob", safe="")
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = _session(mcp)
        reads: dict[str, Callable[[str], dict[str, Any]]] = {
            LEGACY: lambda uri: _legacy(mcp, headers, "resources/read", {"uri": uri})[-1],
            MODERN: lambda uri: _modern(mcp, "resources/read", {"uri": uri}, name=uri)[-1],
        }
        for rev, read in reads.items():
            for uri in _TRAVERSALS:
                reply = read(uri)
                sent_frames.sent(reply, rev, answering="resources/read")
                assert "error" in reply and "result" not in reply, (rev, uri, reply)
                assert "root:" not in json.dumps(reply)
            # Binary contents: the URI read back, and a blob that is valid base64.
            for uri, starts in ((binary, b"\x89PNG\r\n\x1a\n"), (blob, bytes(range(256)))):
                reply = read(uri)
                sent_frames.sent(reply, rev, answering="resources/read")
                [content] = reply["result"]["contents"]
                assert content["uri"] == uri and "text" not in content
                assert _b64(content["blob"]).startswith(starts)
            reply = read(README)
            sent_frames.sent(reply, rev, answering="resources/read")
            [content] = reply["result"]["contents"]
            assert content["uri"] == README and content["text"] and "blob" not in content
        [listed] = _legacy(mcp, headers, "resources/list", {})
        sent_frames.sent(listed, LEGACY, answering="resources/list")
    for resource in listed["result"]["resources"]:
        assert isinstance(resource["uri"], str) and isinstance(resource["name"], str)


_MISSING = [
    "mcpx://nope/x",
    "mcpx://demo/" + quote("demo://missing", safe=""),
    "mcpx://conformance/" + quote("test://missing", safe=""),
    "mcpx://legacy/" + quote("fixture://missing", safe=""),
    "mcpx://rich/" + quote("rich://missing", safe=""),
    "file:///nope",
]


# S-RES-11
def test_a_missing_resource_is_an_error_never_empty_contents(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        for uri in _MISSING:
            [reply] = _modern(mcp, "resources/read", {"uri": uri}, name=uri)
            sent_frames.sent(reply, MODERN, answering="resources/read")
            assert "error" in reply and "result" not in reply, (uri, reply)


# --- prompts --------------------------------------------------------------------------


def _check_block(block: dict[str, Any]) -> str:
    """A prompt content block's kind, once its data is checked."""
    kind: str = block["type"]
    if kind in ("image", "audio"):
        assert MIME.fullmatch(block["mimeType"]) and block["mimeType"].startswith(kind + "/")
        assert _b64(block["data"])
    elif kind == "resource":
        resource = block["resource"]
        assert RFC3986_URI.fullmatch(resource["uri"]), resource
        assert MIME.fullmatch(resource["mimeType"]), resource
        assert ("text" in resource) != ("blob" in resource), resource
        if "blob" in resource:
            assert _b64(resource["blob"])
    return kind


# S-PROMPT-4 S-PROMPT-5
@pytest.mark.parametrize("rev", ["2025-03-26", LEGACY, MODERN])
def test_prompt_media_and_embedded_resources_arrive_intact(
    daemon: Daemon, sent_frames: FrameLog, rev: str
) -> None:
    prompts = {
        "rich_media": ({}, ["image", "audio", "resource"]),
        "conformance_test_prompt_with_image": ({}, ["image", "text"]),
        "conformance_test_prompt_with_embedded_resource": (
            {"resourceUri": "test://embedded"},
            ["resource", "text"],
        ),
        "everything_resource-prompt": (
            {"resourceType": "Blob", "resourceId": "1"},
            ["text", "resource"],
        ),
    }
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = ({}, None) if rev == MODERN else _session(mcp, rev)
        for name, (arguments, kinds) in prompts.items():
            params = {"name": name, "arguments": arguments}
            if rev == MODERN:
                [reply] = _modern(mcp, "prompts/get", params, name=name)
            else:
                [reply] = _legacy(mcp, headers, "prompts/get", params)
            sent_frames.sent(reply, rev, answering="prompts/get")
            blocks = [m["content"] for m in reply["result"]["messages"]]
            assert [_check_block(b) for b in blocks] == kinds, name
    media = [m["content"] for m in reply["result"]["messages"]]  # the last: everything's
    assert _b64(media[1]["resource"]["blob"]).startswith(b"Resource 1")


# S-COMP-3
@pytest.mark.parametrize("rev", [LEGACY, MODERN])
def test_unknown_prompts_and_refs_are_invalid_params(
    daemon: Daemon, sent_frames: FrameLog, rev: str
) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = ({}, None) if rev == MODERN else _session(mcp, rev)

        def ask(method: str, params: dict[str, Any], name: str | None) -> dict[str, Any]:
            if rev == MODERN:
                return _modern(mcp, method, params, name=name)[-1]
            return _legacy(mcp, headers, method, params)[-1]

        for name in ("nope_greet", "demo_nothing", "no-such-prompt"):
            reply = ask("prompts/get", {"name": name}, name)
            sent_frames.sent(reply, rev)
            assert reply["error"]["code"] == -32602, reply
            ref = {"type": "ref/prompt", "name": name}
            reply = ask(
                "completion/complete", {"ref": ref, "argument": {"name": "x", "value": ""}}, None
            )
            sent_frames.sent(reply, rev)
            assert reply["error"]["code"] == -32602, reply
        # A prompt's missing required argument, checked by the demo upstream: -32602.
        reply = ask("prompts/get", {"name": "demo_hello"}, "demo_hello")
        sent_frames.sent(reply, rev)
        assert reply["error"]["code"] == -32602 and "name" in reply["error"]["message"]
        ref = {"type": "ref/nothing"}
        reply = ask(
            "completion/complete", {"ref": ref, "argument": {"name": "x", "value": ""}}, None
        )
        sent_frames.sent(reply, rev)
        assert reply["error"]["code"] == -32602, reply


# S-PROMPT-6, S-PROMPT-7
@pytest.mark.parametrize("rev", [LEGACY, MODERN])
def test_a_missing_required_prompt_argument_is_invalid_params(
    daemon: Daemon, sent_frames: FrameLog, rev: str
) -> None:
    # The SDK 1.x upstreams answer it with an error code 0: mcpx checks the catalogued
    # prompt's required arguments itself, so every host gets -32602 naming the argument.
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = ({}, None) if rev == MODERN else _session(mcp, rev)
        for name, arg in (("rich_pick", "word"), ("legacy_greet", "name")):
            if rev == MODERN:
                reply = _modern(mcp, "prompts/get", {"name": name}, name=name)[-1]
            else:
                reply = _legacy(mcp, headers, "prompts/get", {"name": name})[-1]
            sent_frames.sent(reply, rev, answering="prompts/get")
            assert reply["error"]["code"] == -32602, reply
            assert arg in reply["error"]["message"], reply


# S-PROMPT-8
def test_prompt_arguments_are_passed_as_data_never_interpreted(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    sneaky = "{{name}} {name} ${HOME} $(id) `id` %s " + README + " @file:/etc/passwd"
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = _session(mcp)
        for name, arg in (("demo_hello", "name"), ("rich_pick", "word"), ("legacy_greet", "name")):
            [reply] = _legacy(
                mcp, headers, "prompts/get", {"name": name, "arguments": {arg: sneaky}}
            )
            sent_frames.sent(reply, LEGACY, answering="prompts/get")
            [message] = reply["result"]["messages"]
            text = message["content"]["text"]
            assert sneaky in text, text  # the argument as given, nothing expanded
            # The URI named in it was not resolved: no resource content came with it.
            assert message["content"]["type"] == "text"
            assert "root:" not in text and "mcpx is a gateway" not in text.lower()


# --- completion -----------------------------------------------------------------------


# S-COMP-1
def test_completions_is_declared_and_completion_works(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    params = {
        "ref": {"type": "ref/prompt", "name": "conformance_test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "par"},
    }
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        for rev in ("2025-03-26", "2025-06-18", LEGACY):
            headers, result = _session(mcp, rev)
            assert result["capabilities"]["completions"] == {}
            [reply] = _legacy(mcp, headers, "completion/complete", params)
            sent_frames.sent(reply, rev, answering="completion/complete")
            assert reply["result"]["completion"]["values"] == ["paris", "park", "party"]
        [discovered] = _modern(mcp, "server/discover", {})
        sent_frames.sent(discovered, MODERN, answering="server/discover")
        assert discovered["result"]["capabilities"]["completions"] == {}
        [reply] = _modern(mcp, "completion/complete", params)
        sent_frames.sent(reply, MODERN, answering="completion/complete")
        assert reply["result"]["completion"]["values"] == ["paris", "park", "party"]


# At most 100 values from the catalogue (a forwarded answer is not capped: a reported gap).
@pytest.mark.parametrize("rev", [LEGACY, MODERN])
def test_completion_from_the_catalogue_gives_at_most_100_values(
    daemon: Daemon, sent_frames: FrameLog, rev: str
) -> None:
    # `rich` lists 150 resources under one template and declares no completions: mcpx
    # answers from its catalogue, and caps the answer.
    ref = {"type": "ref/resource", "uri": "mcpx://rich/" + quote("rich://item/", safe="") + "{n}"}
    params = {"ref": ref, "argument": {"name": "n", "value": ""}}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        if rev == MODERN:
            [reply] = _modern(mcp, "completion/complete", params)
        else:
            headers, _ = _session(mcp, rev)
            [reply] = _legacy(mcp, headers, "completion/complete", params)
    sent_frames.sent(reply, rev, answering="completion/complete")
    completion = reply["result"]["completion"]
    assert len(completion["values"]) == 100
    assert completion["values"][:2] == ["000", "001"]
    assert completion["hasMore"] is True and completion["total"] == 150


# --- logging --------------------------------------------------------------------------


def _slow_call(meta: dict[str, Any]) -> dict[str, Any]:
    return _call("demo", "slow", {"seconds": 0.6, "steps": 4}, meta)


# S-LOG-5 S-PROG-9 S-SUB-7 S-PROG-3
def test_progress_and_log_lines_go_on_the_call_stream_never_on_a_listen_stream(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    meta = {**META, "io.modelcontextprotocol/logLevel": "debug", "progressToken": "p-1"}
    url = daemon.info["url"]
    with _listening(url, "listen-9", {"resourcesListChanged": True}) as listened:
        with httpx.Client(base_url=url, timeout=60) as mcp:
            frames = _modern(mcp, "tools/call", _slow_call(meta), name="mcpx_call", rid=4)
        time.sleep(0.5)  # anything misrouted would be on the listen stream by now
        seen = list(listened)
    for frame in frames[:-1]:
        sent_frames.sent(frame, MODERN)
    sent_frames.sent(frames[-1], MODERN, answering="tools/call")
    progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
    logs = [f for f in frames if f.get("method") == "notifications/message"]
    assert progress and logs, frames  # on the call's own stream, before its response
    assert frames[-1]["id"] == 4 and "result" in frames[-1]
    # Human-readable progress text, relayed with the values.
    assert all(isinstance(p.get("message"), str) and p["message"].strip() for p in progress)
    # The listen stream carried its acknowledgement and nothing else.
    assert [f["method"] for f in seen] == ["notifications/subscriptions/acknowledged"], seen
    # Nor on stdio: request-scoped notifications carry no subscription id.
    with _serve(daemon) as peer:
        peer.send(_listen_frame("L", {"resourcesListChanged": True}))
        assert _until(peer, lambda got: bool(got))[0]["params"]["_meta"][SUB_ID] == "L"
        reply = peer.request(5, "tools/call", _slow_call(meta), timeout=60)
        assert reply["result"]["content"][0]["text"].startswith("slept")
        noted = peer.notifications
        assert {n["method"] for n in noted} == {"notifications/progress", "notifications/message"}
        assert not [n for n in noted if SUB_ID in (n["params"].get("_meta") or {})]


# S-LOG-7
def test_what_hosts_are_told_never_carries_configured_secrets(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    told: list[dict[str, Any]] = []
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        assert peer.request(1, "logging/setLevel", {"level": "debug"})["result"] == {}
        for rid, server in enumerate(("remote", "broken"), start=2):
            reply = peer.request(
                rid, "tools/call", _call(server, "echo", {"text": "x"}), timeout=60
            )
            assert reply["result"]["isError"] is True  # it failed, and said so
            assert server in json.dumps(reply)
            told.append(reply)
        servers = peer.request(
            4, "tools/call", {"name": "mcpx_servers", "arguments": {}}, timeout=60
        )
        told += [servers, *peer.notifications]
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        meta = {**META, "io.modelcontextprotocol/logLevel": "debug"}
        told += _modern(
            mcp, "tools/call", _call("remote", "echo", {"text": "x"}, meta), name="mcpx_call"
        )
        told += _modern(
            mcp,
            "resources/read",
            {"uri": "mcpx://remote/x%3A%2F%2Fy"},
            name="mcpx://remote/x%3A%2F%2Fy",
        )
    assert "remote" in json.dumps(servers)
    assert SECRET not in json.dumps(told)
    # Nor anything else the daemon sent any host in this module so far.
    assert SECRET not in json.dumps(daemon.sent_frames())
    sent_frames.sent(told[0], LEGACY, answering="tools/call")


# S-LOG-9 (reading: mcpx sends no log notifications of its own)
def test_mcpx_itself_emits_no_log_notifications(daemon: Daemon, sent_frames: FrameLog) -> None:
    meta = {**META, "io.modelcontextprotocol/logLevel": "debug"}
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        # A call whose upstream logs nothing, one that fails in mcpx, a listing, a bad read.
        asked = [
            _modern(
                mcp, "tools/call", _call("demo", "echo", {"text": "x"}, meta), name="mcpx_call"
            ),
            _modern(mcp, "tools/call", _call("nope", "echo", {}, meta), name="mcpx_call"),
            _modern(mcp, "tools/list", {}, meta=meta),
            _modern(
                mcp, "resources/read", {"uri": "mcpx://nope/x"}, name="mcpx://nope/x", meta=meta
            ),
        ]
    methods = ("tools/call", "tools/call", "tools/list", "resources/read")
    for frames, method in zip(asked, methods, strict=True):
        assert len(frames) == 1, frames  # the answer alone: no notifications/message
        sent_frames.sent(frames[0], MODERN, answering=method)
    assert asked[1][0]["result"]["isError"] is True


# --- progress -------------------------------------------------------------------------


# S-PROG-7 (nothing to check: mcpx puts no progressToken on the requests it sends hosts)
def test_questions_mcpx_puts_to_a_host_carry_no_progress_token(daemon: Daemon) -> None:
    with _serve(daemon) as peer:
        peer.initialize(LEGACY, {"elicitation": {}})

        def answer(request: dict[str, Any]) -> dict[str, Any]:
            return {"action": "accept", "content": {"answer": "Ada"}}

        reply = peer.request(
            3,
            "tools/call",
            _call("legacy", "ask", {"question": "name?"}),
            timeout=60,
            on_request=answer,
        )
        assert reply["result"]["content"][0]["text"] == "Ada"
    [question] = peer.server_requests
    assert question["method"] == "elicitation/create"
    assert "progressToken" not in (question["params"].get("_meta") or {})


# S-PROG-8 S-CANC-6 (not offered: mcpx runs no task-augmented requests)
@pytest.mark.parametrize("rev", [LEGACY, MODERN])
def test_tasks_are_not_offered(daemon: Daemon, rev: str) -> None:
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        if rev == MODERN:
            caps = _modern(mcp, "server/discover", {})[0]["result"]["capabilities"]
        else:
            caps = _session(mcp, rev)[1]["capabilities"]
    assert "tasks" not in caps
    assert "io.modelcontextprotocol/tasks" not in (caps.get("extensions") or {})


# S-PROMPT-2 (not declared: prompts.listChanged is false, so no prompt change is sent)
def test_prompt_list_changes_are_neither_promised_nor_sent(daemon: Daemon) -> None:
    with _serve(daemon) as peer:
        caps = peer.initialize(LEGACY)["capabilities"]
        assert caps["prompts"]["listChanged"] is False
        reply = peer.request(
            1, "tools/call", _call("conformance", "test_trigger_prompt_change", {}), timeout=60
        )
        assert "result" in reply, reply
        seen = peer.notifications + _drain(peer, 2)
    assert not [m for m in seen if m.get("method") == "notifications/prompts/list_changed"]


# --- cancellation ---------------------------------------------------------------------


def _handshake(peer: StdioPeer, rev: str) -> dict[str, Any] | None:
    """Legacy: the handshake; 2026-07-28: the ``_meta`` each request carries."""
    if rev == MODERN:
        return META
    peer.initialize(rev)
    return None


def _with_meta(params: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    return params if meta is None else {**params, "_meta": meta}


# S-CANC-1
@pytest.mark.parametrize("rev", ["2024-11-05", LEGACY, MODERN])
def test_a_cancelled_call_stops_and_gets_no_answer(daemon: Daemon, rev: str) -> None:
    with _serve(daemon) as peer:
        meta = _handshake(peer, rev)
        slow = _with_meta(_call("demo", "slow", {"seconds": 60, "steps": 60}), meta)
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow})
        assert _wait(lambda: _in_flight(daemon) == 1)
        peer.notify("notifications/cancelled", {"requestId": 2, "reason": "no longer needed"})
        # Stopped, upstream too, long before its 60 s.
        assert _wait(lambda: _in_flight(daemon) == 0)
        # The connection goes on (tools/list: 2026-07-28 has no ping).
        listed = peer.request(3, "tools/list", _with_meta({}, meta))
        assert "mcpx_call" in [t["name"] for t in listed["result"]["tools"]], listed
        late = _drain(peer, 1.5)
        assert not [m for m in late if m.get("id") == 2], late


# Cancellations of ids mcpx does not know are ignored (malformed ids: a reported gap).
def test_unknown_and_malformed_cancellations_are_ignored(daemon: Daemon) -> None:
    junk: list[dict[str, Any] | None] = [
        {"requestId": 999},
        {"requestId": "never-sent"},
        {"requestId": 1},  # already answered
        {"reason": "no id"},
        {},
        None,
    ]
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        assert peer.request(1, "ping")["result"] == {}
        for params in junk:
            peer.notify("notifications/cancelled", params)
        assert _drain(peer, 1.0) == []  # nothing answered, no error
        reply = peer.request(
            2, "tools/call", _call("demo", "echo", {"text": "still here"}), timeout=60
        )
        assert reply["result"]["content"][0]["text"] == "still here"
    with httpx.Client(base_url=daemon.info["url"], timeout=60) as mcp:
        headers, _ = _session(mcp)
        for params in junk:
            note: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            if params is not None:
                note["params"] = params
            assert mcp.post("/mcp", json=note, headers=headers).status_code == 202
        assert _legacy(mcp, headers, "ping", {}, rid=5) == [
            {"jsonrpc": "2.0", "id": 5, "result": {}}
        ]


# S-CANC-3
def test_cancellations_racing_answers_are_harmless(daemon: Daemon, sent_frames: FrameLog) -> None:
    rounds = 40
    with _serve(daemon) as peer:
        peer.initialize(LEGACY)
        for rid in range(1, rounds + 1):
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
            call["params"] = _call("demo", "echo", {"text": str(rid)})
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            cancel["params"] = {"requestId": rid}
            before = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            before["params"] = {"requestId": rid - 1}  # likely answered already
            # The call and its cancellation in one write: they race inside the daemon.
            peer.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in (before, call, cancel)))
        end = {"jsonrpc": "2.0", "id": "end", "method": "tools/call"}
        peer.send({**end, "params": _call("demo", "echo", {"text": "end"})})
        got = _until(peer, lambda got: any(m.get("id") == "end" for m in got), limit=60)
        got += _drain(peer, 1.0)
    [final] = [m for m in got if m.get("id") == "end"]
    assert final["result"]["content"][0]["text"] == "end"
    answers = [m for m in got if "id" in m and m["id"] != "end"]
    ids = [m["id"] for m in answers]
    assert len(ids) == len(set(ids))  # none answered twice
    assert set(ids) <= set(range(1, rounds + 1))
    for answer in answers:  # whatever was answered is a whole, valid answer
        assert answer["result"]["content"][0]["text"] == str(answer["id"])
        sent_frames.sent(answer, LEGACY, answering="tools/call")
    assert _wait(lambda: _in_flight(daemon) == 0)


# S-SUB-9
def test_closing_a_listen_stream_ends_its_subscription(
    daemon: Daemon, sent_frames: FrameLog
) -> None:
    assert _wait(lambda: _watched(daemon) == [])
    with _listening(daemon.info["url"], 31, {"resourceSubscriptions": [WATCHED]}) as got:
        assert got[0]["params"]["notifications"] == {"resourceSubscriptions": [WATCHED]}
        sent_frames.sent(got[0], MODERN)
        assert _watched(daemon) == [DOC]  # held upstream while the stream is open
    assert _wait(lambda: _watched(daemon) == [])  # the request ended, and so did its state


# S-SUB-8
def test_no_subscription_outlives_the_host_that_made_it(daemon: Daemon) -> None:
    assert _wait(lambda: _watched(daemon) == [])
    with _serve(daemon) as first:
        first.send(
            _listen_frame("old", {"resourcesListChanged": True, "resourceSubscriptions": [WATCHED]})
        )
        ack = _until(first, lambda got: bool(got))[0]
        assert ack["params"]["_meta"][SUB_ID] == "old"
        assert _watched(daemon) == [DOC]
        # The host goes away (its stdin ends; the shim exits). The daemon gives requests in
        # flight transport.stdioDrain (30 s) before it ends them, a listen among them.
        assert first.proc.stdin is not None
        first.proc.stdin.close()
        assert _wait(lambda: _watched(daemon) == [], limit=60)  # released with its connection
        assert first.wait(timeout=30) == 0
    with _serve(daemon) as second:
        # A new connection (the host restarted mcpx serve) that has not listened yet:
        # a change on the old filter's kind reaches nobody under the old id.
        reply = second.request(
            1, "tools/call", _with_meta(_gzip_resource("c2-b.txt.gz"), META), timeout=60
        )
        assert "result" in reply, reply
        assert _drain(second, 2.0) == []
        assert second.notifications == []


# --- the end of a listen stream -------------------------------------------------------


@pytest.fixture
def stoppable(tmp_path: Path) -> Iterator[Daemon]:
    servers = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
    with running_daemon(tmp_path, servers) as d:
        yield d


# S-SUB-6
def test_a_stopping_daemon_ends_each_listen_with_its_response(
    stoppable: Daemon, sent_frames: FrameLog
) -> None:
    with _listening(stoppable.info["url"], "bye-1", {"resourcesListChanged": True}) as got:
        stoppable.proc.send_signal(signal.SIGTERM)  # the daemon this test started
        assert _wait(lambda: len(got) >= 2)
        stoppable.proc.wait(timeout=30)
    ack, final = got[0], got[-1]
    sent_frames.sent(ack, MODERN)
    sent_frames.sent(final, MODERN, answering="subscriptions/listen")
    assert final["id"] == "bye-1"
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][SUB_ID] == "bye-1"
