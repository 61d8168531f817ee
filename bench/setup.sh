#!/usr/bin/env bash
# What the benchmarks need beyond the test peers, each in its own virtualenv under
# .tooling/bench: fastmcp 4.1.x, and mcp-proxy 0.13 (which needs the SDK 1.x: mcp<2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/peers.sh"

# venv NAME MODULE PIP-SPEC...: .tooling/bench/NAME with SPECs, unless MODULE imports there.
venv() {
  local name="$1" dir="$ROOT/.tooling/bench/$1" module="$2"
  shift 2
  if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import $module" 2>/dev/null; then
    "${PYTHON:-python3}" -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "$@" 2>&1 | grep -v "WARNING: Location" || true
    "$dir/bin/python" -c "import importlib.metadata as m; print('$module', m.version('$name'))"
  fi
}
venv fastmcp fastmcp "fastmcp>=4.1,<4.2"
venv mcp-proxy mcp_proxy "mcp-proxy>=0.13,<0.14" "mcp<2"
