"""Schemathesis against a real daemon's /openapi.json over loopback TCP, bounded.

Every operation (the /v1/events stream too, read to its first event) is generated from
the document, through the front door with the Host a client sends (127.0.0.1:PORT):
0 server errors and 0 check failures (all of schemathesis's checks). Server and tool
names are drawn from the daemon's own (``demo``, its tools) most of the time, so
requests reach the handlers and the upstream, not only the 404s of unknown names.

Allowed outcomes beyond the document's, each with its reason (this list may only shrink):

- ``POST /v1/call``: a tool's arguments are checked against that tool's own input schema,
  which the document cannot state (it says "an object"): 400 for schema-valid input is
  the daemon doing its job. 502 is what the upstream answered, and 504 what a call's
  own ``timeout`` asked for (``1e-308`` seconds is schema-valid and times out).
- ``POST /v1/complete``, ``/v1/prompts/get``, ``/v1/resources/read``: schema-valid input
  the upstream refuses (no such prompt, no resource at "") is 400
  ``upstream_refused_input``: the document cannot list the upstream's names either.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from support.daemon import running_daemon
from support.waiting import wait_until

SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcpx", "demo-server"]}}
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
CONFIG = """
[checks]
enabled = true

[dictionaries]
servers = { values = ["demo"] }
tools = { values = ["echo", "add", "now"] }

[parameters]
"path.server" = { dictionary = "servers", probability = 0.8 }
"query.server" = { dictionary = "servers", probability = 0.8 }
"body.server" = { dictionary = "servers", probability = 0.8 }
"path.tool" = { dictionary = "tools", probability = 0.8 }
"body.tool" = { dictionary = "tools", probability = 0.8 }

[[operations]]
include-name = "GET /v1/events"
max-stream-events = 1
request-timeout = 5

[[operations]]
include-name = "POST /v1/call"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "502", "504"]
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "502", "504"]

[[operations]]
include-name = ["POST /v1/complete", "POST /v1/prompts/get", "POST /v1/resources/read"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404"]
"""
BUDGET = 60  # seconds of generating and sending; the whole test stays under ~90 s


def _demo_calls(url_socket: Path) -> int:
    # The call log's, not the instances' own counts: a fuzzed stop or restart resets those.
    transport = httpx.HTTPTransport(uds=str(url_socket))
    with httpx.Client(transport=transport, base_url="http://mcpx", timeout=30) as api:
        logged = api.get("/v1/log", params={"server": "demo", "limit": 10000}).json()["calls"]
    return len(logged)


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    settings = {"pool.callTimeout": "5s", "transport.sseKeepAlive": "1s"}
    with running_daemon(tmp_path, SERVERS, settings) as d:
        argv = [str(SCHEMATHESIS), "--config-file", str(config), "run"]
        argv += [d.info["url"] + "/openapi.json", "--max-examples", "20"]
        argv += ["--max-time", str(BUDGET), "--request-timeout", "20", "--workers", "1"]
        argv += ["--seed", "18", "--no-color"]
        done = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, timeout=BUDGET + 90, check=False
        )
        report = done.stdout[-20000:] + done.stderr[-3000:]
        assert done.returncode == 0, report
        assert " passed" in done.stdout and "failures" not in done.stdout, report
        # Through the front door to the upstream: the run was not all refusals.
        wait_until(lambda: _demo_calls(Path(d.info["socket"])) > 0, message="a call logged")
