"""Real clients against the demo server: every official Python SDK release, and mcpx's own.

The SDK releases parse every result into their typed models, so a shape they reject fails
here even where the schema sweep would not look (``sdk_client.py`` runs under each
release's python). mcpx's upstream client is what the daemon uses to talk to the demo, in
both eras: its default probe lands on 2026-07-28, ``force-initialize`` on the handshake.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from demo.peer import SERVER_ARGV
from mcpx import spec
from mcpx.config import Settings
from support.peers import peer_python
from support.schemas import FrameLog
from support.upstream import Recorder, connected, settings, stdio_server

SDK_CLIENT = Path(__file__).with_name("sdk_client.py")

# (release, --mode, the revision it ends up speaking with the demo)
SDK_CASES = [
    ("1.2.1", "legacy", "2024-11-05"),
    ("1.9.4", "legacy", "2025-03-26"),
    ("1.12.4", "legacy", "2025-06-18"),
    ("1.23.3", "legacy", "2025-11-25"),
    ("2.3.0", "legacy", "2025-11-25"),
    ("2.3.0", "auto", "2026-07-28"),  # probes server/discover first: modern
]


@pytest.mark.parametrize(("release", "mode", "revision"), SDK_CASES)
def test_official_sdk_clients(release: str, mode: str, revision: str) -> None:
    argv = [str(peer_python(release)), str(SDK_CLIENT), "--mode", mode, "--", *SERVER_ARGV]
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    got: dict[str, Any] = json.loads(done.stdout)
    assert got["protocolVersion"] == revision
    assert got["serverName"] == "mcpx-demo"
    assert got["tools"] == ["echo", "add", "slow", "readme", "now"]
    assert got["add"] == "5"
    structured = spec.defined("field", "CallToolResult.structuredContent", revision)
    assert got["structured"] == ({"sum": 5} if structured else None)
    assert got["bad_is_error"] is True
    assert got["progress"] in ([], [1.0, 2.0])  # 1.2.1 cannot ask for progress
    assert "Ada" in got["prompt"]
    assert got["greeting"] == "Hello, Ada!"
    assert got.get("templates", ["demo://greeting/{name}"]) == ["demo://greeting/{name}"]
    assert got["completion"] == ["Ada", "Alan"]


def _text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("config", "era", "revision"),
    [
        (None, "modern", "2026-07-28"),
        (settings(upstream__protocol="force-initialize"), "legacy", "2025-11-25"),
    ],
)
async def test_mcpx_client(
    config: Settings | None, era: str, revision: str, sent_frames: FrameLog
) -> None:
    recorder = Recorder()
    server = stdio_server("demo", SERVER_ARGV)
    async with connected(server, recorder, sent_frames, config=config) as session:
        assert session.negotiated is not None
        negotiated = session.negotiated
        assert (negotiated.era.value, negotiated.revision) == (era, revision)
        assert negotiated.server_info["name"] == "mcpx-demo"
        assert [t["name"] for t in await session.list_tools()] == [
            "echo",
            "add",
            "slow",
            "readme",
            "now",
        ]
        assert _text(await session.call_tool("add", {"a": 20, "b": 22})) == "42"
        assert "Ada" in json.dumps(await session.get_prompt("hello", {"name": "Ada"}))
        read = await session.read_resource("demo://greeting/Grace")
        assert read["contents"][0]["text"] == "Hello, Grace!"
        templates = await session.list_resource_templates()
        assert templates[0]["uriTemplate"] == "demo://greeting/{name}"
        done = await session.complete({"type": "ref/prompt", "name": "hello"}, _name("m"))
        assert done["completion"]["values"] == ["Margaret"]


def _name(value: str) -> dict[str, str]:
    return {"name": "name", "value": value}
