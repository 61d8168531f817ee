#!/usr/bin/env bash
# What the benchmarks need beyond the test peers: fastmcp 4.1.x in its own virtualenv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/peers.sh"
VENV="$ROOT/.tooling/bench/fastmcp"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import fastmcp" 2>/dev/null; then
  "${PYTHON:-python3}" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "fastmcp>=4.1,<4.2" 2>&1 | grep -v "WARNING: Location" || true
  "$VENV/bin/python" -c "import fastmcp; print('fastmcp', fastmcp.__version__)"
fi
