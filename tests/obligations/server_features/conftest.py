"""Fixtures shared by the server-features obligation tests (``test_*.py`` in this directory).

One real daemon for the package (``daemon``, package-scoped: started once for all the
files here), with real upstreams: the demo server, server-everything
(its ``gzip-file-as-resource`` tool registers a resource, so it announces a resource list
change; ``toggle-subscriber-updates`` sends ``notifications/resources/updated`` every 5 s),
the conformance fixture on SDK 2.3.0 (image/embedded prompts, a binary resource, a prompt
list change), the SDK 1.23.3 fixture (a legacy upstream that asks questions), and a small
FastMCP 1.23.3 server written here (image and audio prompt content, a blob
resource, 150 listed resources and no ``completions``). Two configured servers fail on
purpose while holding a secret (a header, an environment variable).

Every frame the daemon sends is traced and checked strictly against the host's revision
when the daemon stops.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from obligations.server_features.helpers import SECRET
from support.daemon import Daemon, running_daemon, sdk_entry
from support.peers import FIXTURES, everything_server_command, free_port, peer_python

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(16))

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


@pytest.fixture(scope="package")
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
