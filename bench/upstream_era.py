"""Which era each gateway speaks to the upstream, read from what the upstream was sent.

The upstream (the official SDK 2.3.0) is dual-era and costs more per call in 2026-07-28
than in 2025-11-25, so a ratio of two gateways compares their own costs only when both
make it do the same work. Each gateway makes a few calls to an upstream behind ``tee``,
and the frames it received name the era: ``tools/call`` with the 2026-07-28
``_meta`` version key, or else the revision its ``initialize`` negotiated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import (
    FASTMCP_PY,
    PY,
    SERVER,
    WORKERS,
    mcp_proxy,
    mcpx_daemon,
    run_json,
)

META_VERSION = "io.modelcontextprotocol/protocolVersion"


def recorded(log: Path) -> list[str]:
    """The upstream's argv, behind a ``tee`` that appends what it reads to ``log``."""
    return ["sh", "-c", f'tee -a "{log}" | exec "$@"', "sh", *SERVER]


def era_of(log: Path) -> str:
    """The era of the ``tools/call`` requests the upstream read, as ``rev (how)``."""
    negotiated = "none"
    for line in log.read_text().splitlines():
        frame: dict[str, Any] = json.loads(line)
        params = frame.get("params") or {}
        if frame.get("method") == "initialize":
            negotiated = str(params.get("protocolVersion"))
        elif frame.get("method") == "tools/call":
            modern = (params.get("_meta") or {}).get(META_VERSION)
            return f"{modern} (_meta)" if modern else f"{negotiated} (initialize)"
    return "no tools/call seen"


def eras_spoken(work: Path) -> dict[str, str]:
    """Row label -> the era that row's gateway spoke to the upstream (3 calls each)."""
    work.mkdir(parents=True, exist_ok=True)
    eras: dict[str, str] = {}
    few = ["3", "1"]
    for key, protocol in (("d", None), ("dL", "prefer-initialize")):
        log = work / f"{key}.log"
        up = recorded(log)
        entry: dict[str, Any] = {"command": up[0], "args": up[1:]}
        if protocol:
            entry["protocol"] = protocol
        with mcpx_daemon({"echo": entry}, work / key) as d:
            serve = [PY, "-m", "mcpx", "serve"]
            host = [PY, WORKERS, "stdio", *few, "2025-11-25", "mcpx:echo", "--", *serve]
            run_json(host, d["env"])
        eras[key] = era_of(log)
    log = work / "f.log"
    fastmcp = [str(FASTMCP_PY), WORKERS, "fastmcp-stdio", "--", *recorded(log)]
    run_json([PY, WORKERS, "stdio", *few, "2025-11-25", "echo", "--", *fastmcp])
    eras["f"] = era_of(log)
    log = work / "h.log"
    with mcp_proxy(recorded(log)) as url:
        run_json([PY, WORKERS, "raw-http", *few, "legacy", url])
    eras["h"] = era_of(log)
    return eras


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mcpx-eras-") as tmp:
        for row, era in eras_spoken(Path(tmp)).items():
            print(f"({row}) speaks {era} to the upstream")
