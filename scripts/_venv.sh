# Sourced by scripts/run and scripts/test: one virtualenv for the project, made
# and brought up to date on demand, so each command does its own set-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MCPX_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
# Re-install only when pyproject.toml changed since the last install.
stamp="$VENV/.mcpx-installed-$1"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT$2"
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
