"""A stdio upstream takes its credentials from its environment, never from an OAuth flow
(C-AUTH-1): the `env` auth block puts the secret in the variable the server reads."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pytest

from support.daemon import running_daemon


@pytest.mark.obligation("C-AUTH-1")
def test_a_stdio_upstream_gets_its_credential_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = secrets.token_urlsafe(24)
    seen = tmp_path / "seen-key"
    monkeypatch.setenv("DEMO_KEY_SOURCE", secret)  # the daemon's own environment
    # The upstream writes what it was given, then is the demo server.
    script = f'printf %s "$DEMO_KEY" > {seen}; exec {sys.executable} -m mcpx demo-server'
    entry = {
        "command": "sh",
        "args": ["-c", script],
        "auth": {"type": "env", "name": "DEMO_KEY", "valueEnv": "DEMO_KEY_SOURCE"},
    }
    with running_daemon(tmp_path, {"demo": entry}) as d:
        done = d.cli("call", "demo", "echo", "text=hi", "--json")
        assert done.returncode == 0, done.stderr
        assert "hi" in json.dumps(json.loads(done.stdout))
        assert seen.read_text() == secret
        listed = d.cli("servers", "--json")
        assert listed.returncode == 0 and secret not in listed.stdout
        assert all(secret not in json.dumps(line) for line in d.log_lines())
