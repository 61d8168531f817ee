"""Tokens of ``tools/list`` as an MCP host sees it, in each ``mcp.surface`` mode.

    .venv/bin/python bench/surface_tokens.py [--json]

One daemon per mode (``gateway``, ``lean``, ``full``) whose upstreams are the 28 servers of
``tests/data/tool_catalogue`` (303 tools; ``_descriptions.json`` is not a server), each a
``bench/catalogue_server.py`` serving one file's ``tools/list``. A 2025-11-25 session on
the daemon's ``/mcp`` lists the tools, following ``nextCursor`` to the last page; the
tools array, as compact JSON (``separators=(",", ":")``, UTF-8 unescaped), is counted:

- ``chars/4``: its characters divided by 4, rounded up (a common rule of thumb);
- ``tiktoken o200k``: its tokens under tiktoken's ``o200k_base``, when ``tiktoken`` is
  importable and the encoding loads (it is not a dependency of mcpx: put it on
  ``PYTHONPATH`` from a throwaway venv; without network, point ``TIKTOKEN_CACHE_DIR`` at a
  cache holding ``o200k_base.tiktoken``). Otherwise the column says why it is absent.

The ``initialize`` result's ``instructions`` (what the mode tells the model) are counted
the same way, apart. Every process is started in its own session and ended by its pid;
only the daemon's unix socket is used.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from harness import PY, ROOT, clean_env, stop, wait_socket

CATALOGUE = ROOT / "tests" / "data" / "tool_catalogue"
SERVER = Path(__file__).resolve().parent / "catalogue_server.py"
MODES = ("gateway", "lean", "full")
REVISION = "2025-11-25"
JSON = dict[str, Any]


def servers() -> dict[str, JSON]:
    files = sorted(p for p in CATALOGUE.glob("*.json") if not p.name.startswith("_"))
    return {p.stem: {"command": PY, "args": [str(SERVER), str(p)]} for p in files}


@contextmanager
def daemon(surface: str, work: Path) -> Iterator[str]:
    """A daemon with ``mcp.surface`` = ``surface``; its unix socket's path."""
    work.mkdir(parents=True, exist_ok=True)
    state, config = work / "state", work / ".mcpx.json"
    config.write_text(json.dumps({"mcpServers": servers(), "settings": {"mcp.surface": surface}}))
    argv = [PY, "-m", "mcpx", "daemon", "--state-dir", str(state), "--config", str(config)]
    proc = subprocess.Popen(argv, cwd=work, env=clean_env(), start_new_session=True)
    try:
        wait_socket(str(state / "mcpx.sock"), proc)
        yield str(state / "mcpx.sock")
    finally:
        stop(proc)


def _answer(r: httpx.Response) -> JSON:
    """The JSON-RPC answer of a POST, sent as JSON or as an event stream."""
    r.raise_for_status()
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        for line in r.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                frame: JSON = json.loads(line[5:])
                if "id" in frame:
                    return frame
        raise RuntimeError("an event stream with no answer")
    answer: JSON = r.json()
    return answer


def listed(socket: str) -> tuple[list[JSON], str, int]:
    """Every tool a 2025-11-25 host is offered, the session's instructions, and pages."""
    transport = httpx.HTTPTransport(uds=socket)
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(transport=transport, base_url="http://mcpx", timeout=120) as mcp:
        params = {"protocolVersion": REVISION, "capabilities": {}}
        params["clientInfo"] = {"name": "surface_tokens", "version": "1"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        r = mcp.post("/mcp", json=init, headers=accept)
        started = _answer(r)["result"]
        headers = {**accept, "Mcp-Session-Id": r.headers["mcp-session-id"]}
        headers["MCP-Protocol-Version"] = REVISION
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        mcp.post("/mcp", json=note, headers=headers).raise_for_status()
        tools: list[JSON] = []
        cursor: str | None = None
        pages = 0
        while True:
            page_params = {} if cursor is None else {"cursor": cursor}
            request = {"jsonrpc": "2.0", "id": 2 + pages, "method": "tools/list"}
            answer = _answer(
                mcp.post("/mcp", json={**request, "params": page_params}, headers=headers)
            )
            if "error" in answer:
                raise RuntimeError(f"tools/list: {answer['error']}")
            tools += answer["result"]["tools"]
            pages += 1
            cursor = answer["result"].get("nextCursor")
            if not cursor:
                return tools, str(started.get("instructions") or ""), pages


def tokenizer() -> tuple[Callable[[str], int] | None, str]:
    """tiktoken's o200k_base counter if it can be had, else None and why not."""
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        return None, "tiktoken not importable"
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception as e:  # no network and no cache: say so, count the rest
        return None, f"o200k_base did not load ({type(e).__name__})"
    return (lambda text: len(encoding.encode(text))), "tiktoken o200k"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def measure(surface: str, count: Callable[[str], int] | None) -> JSON:
    prefix = f"mcpx-surface-{surface}-"
    with tempfile.TemporaryDirectory(prefix=prefix) as work, daemon(surface, Path(work)) as socket:
        tools, instructions, pages = listed(socket)
    text = compact(tools)
    row: JSON = {"mode": surface, "tools": len(tools), "pages": pages, "chars": len(text)}
    row["chars/4"] = math.ceil(len(text) / 4)
    row["instructions chars/4"] = math.ceil(len(instructions) / 4)
    if count is not None:
        row["tiktoken o200k"] = count(text)
        row["instructions tiktoken o200k"] = count(instructions)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    count, counted_by = tokenizer()
    rows = [measure(surface, count) for surface in MODES]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    files = len(servers())
    print(f"tools/list of {files} catalogue servers, 2025-11-25 session, compact JSON")
    tik = "tiktoken o200k" if count else f"tiktoken o200k: {counted_by}"
    print(f"| mode | tools | chars | chars/4 | {tik} | instructions chars/4 / o200k |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        t = row.get("tiktoken o200k", "-")
        ti = row.get("instructions tiktoken o200k", "-")
        print(
            f"| {row['mode']} | {row['tools']} | {row['chars']:,} | {row['chars/4']:,} | "
            f"{t if isinstance(t, str) else f'{t:,}'} | {row['instructions chars/4']} / {ti} |"
        )


if __name__ == "__main__":
    main()
