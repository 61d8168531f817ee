"""Server obligations on features: resources (list changes, updates, listings, URIs and
contents), prompts and completion.

The real daemon (fixture ``daemon``, one for the package) and its upstreams are described in
``conftest.py`` of this directory; shared helpers are in ``helpers.py``.

Hosts: ``mcpx serve`` over stdio (raw lines) and ``/mcp`` over HTTP (raw requests). Every
frame the daemon sends is traced and checked strictly against the host's revision when the
daemon stops; the frames a test reads are also checked with ``sent_frames``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from obligations.server_features.helpers import (
    LEGACY,
    META,
    SUB_ID,
    WATCHED,
    _drain,
    _gzip_resource,
    _legacy,
    _listen_frame,
    _modern,
    _serve,
    _session,
    _until,
)
from support.daemon import Daemon
from support.modern import MODERN
from support.schemas import FrameLog

OTHER_DOC = "demo://resource/static/document/features.md"
OTHER = "mcpx://everything/" + quote(OTHER_DOC, safe="")
README = "mcpx://demo/" + quote("demo://readme", safe="")
MIME = re.compile(r"[a-z]+/[A-Za-z0-9.+-]+")

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


@pytest.mark.obligation("S-RES-2", "S-SUB-1", "S-SUB-2", "S-SUB-3", "S-SUB-4", "S-SUB-5")
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


@pytest.mark.obligation("S-RES-4")
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


@pytest.mark.obligation("S-RES-3", "S-PROMPT-3")
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


@pytest.mark.obligation("S-RES-6", "S-RES-8")
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


@pytest.mark.obligation("S-RES-12", "S-RES-14", "S-RES-15")
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


@pytest.mark.obligation("S-RES-11")
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


@pytest.mark.obligation("S-PROMPT-4", "S-PROMPT-5")
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

        def ask(method: str, params: dict[str, Any], name: str | None) -> dict[str, Any]:
            if rev == MODERN:
                [reply] = _modern(mcp, method, params, name=name)
            else:
                [reply] = _legacy(mcp, headers, method, params)
            sent_frames.sent(reply, rev, answering=method)
            return reply

        for name, (arguments, kinds) in prompts.items():
            reply = ask("prompts/get", {"name": name, "arguments": arguments}, name)
            blocks = [m["content"] for m in reply["result"]["messages"]]
            assert [_check_block(b) for b in blocks] == kinds, name
            # A prefixed prompt's embedded resource is named as /mcp serves it.
            server = name.split("_")[0] if name.startswith(("conformance_", "everything_")) else ""
            for block in blocks:
                if server and block["type"] == "resource":
                    assert block["resource"]["uri"].startswith(f"mcpx://{server}/"), block
        media = [m["content"] for m in reply["result"]["messages"]]  # the last: everything's
        assert _b64(media[1]["resource"]["blob"]).startswith(b"Resource 1")
        # ... and reads back through /mcp as the same resource.
        uri = media[1]["resource"]["uri"]
        read = ask("resources/read", {"uri": uri}, uri)["result"]["contents"]
        # (server-everything stamps the blob with the time it was made: only its start is fixed.)
        assert [c["uri"] for c in read] == [uri]
        assert _b64(read[0]["blob"]).startswith(b"Resource 1")


@pytest.mark.obligation("S-COMP-3")
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


@pytest.mark.obligation("S-PROMPT-6", "S-PROMPT-7")
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


@pytest.mark.obligation("S-PROMPT-8")
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


@pytest.mark.obligation("S-COMP-1")
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
