#!/usr/bin/env bash
# run.sh — end-to-end test of the PyPTO LSP extension in real VS Code.
#
#   bash test/e2e/run.sh [--stub] [--no-build] [--scenarios no-server,softmax,untrusted,broken,ontype,pictures,debug] [--fixtures] [--keep]
#
# 1. installs code-server 4.100.3, Debian's chromium and playwright-core (setup.sh, idempotent,
#    cached under $PYPTO_E2E_PREFIX, default /tmp/pypto-lsp-e2e);
# 2. builds the .vsix from this checkout (npm ci when node_modules is missing, npm run package);
# 3. checks that `$PYPTO_LSP_PYTHON -m pypto_lsp serve` (default: <repo>/.venv/bin/python, with
#    the checkout on PYTHONPATH) answers `initialize`; if not, the scenarios that need the
#    server are SKIPPED with the reason, the others still run;
#    --stub uses test/e2e/stub_server instead (a contract stand-in, to test the extension alone);
# 4. runs e2e.js: code-server + headless Chromium, the freshly built .vsix installed. The
#    workspaces are copies of the repository's examples/ (softmax, broken_softmax); --fixtures
#    runs the same scenarios on the shared compiler fixtures instead ($PYPTO_E2E_FIXTURES,
#    default <repo>/../shared/fixtures), as extra coverage.
# Screenshots, result.json and VS Code's logs land in $PYPTO_E2E_OUT (default test/e2e/artifacts).
# Closing line: "N passed, N failed, N skipped"; exit 0 when nothing failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXT="$(cd "$HERE/../.." && pwd)"
REPO="$(cd "$EXT/.." && pwd)"
P="${PYPTO_E2E_PREFIX:-/tmp/pypto-lsp-e2e}"
PY="${PYPTO_LSP_PYTHON:-$REPO/.venv/bin/python}"
OUT="${PYPTO_E2E_OUT:-$HERE/artifacts}"
FIXTURES="${PYPTO_E2E_FIXTURES:-$REPO/../shared/fixtures}"
STUB=false; BUILD=true; SCENARIOS="no-server,softmax,untrusted,broken,ontype,pictures,debug"; KEEP=""; SOURCE=(--examples "$REPO/examples")
while [ $# -gt 0 ]; do
  case "$1" in
    --stub) STUB=true;;
    --no-build) BUILD=false;;
    --scenarios) SCENARIOS="$2"; shift;;
    --keep) KEEP="--keep";;
    --fixtures) SOURCE=(--fixtures "$FIXTURES");;
    *) echo "unknown option $1" >&2; exit 64;;
  esac
  shift
done
log() { echo "[e2e $(date +%T)] $*" >&2; }

# with --fixtures every scenario opens a copy of a real compiler dump from the shared fixtures
if [ "${SOURCE[0]}" = --fixtures ] && [ ! -f "$FIXTURES/verdicts.json" ]; then
  echo "SKIP all scenarios: the shared fixtures are not at $FIXTURES (set PYPTO_E2E_FIXTURES)"
  echo "0 passed, 0 failed, 5 skipped"
  exit 0
fi

PYTHONPATH_ORIG="${PYTHONPATH:-}"
unset PYTHONPATH
bash "$HERE/setup.sh" >&2 || { echo "e2e setup failed"; echo "0 passed, 1 failed"; exit 1; }

if $BUILD; then
  log "building the .vsix"
  ( cd "$EXT" && { [ -d node_modules ] || npm ci --no-audit --no-fund >&2; } && npm run package >&2 ) \
    || { echo "FAIL build — npm run package failed"; echo "0 passed, 1 failed"; exit 1; }
fi
VSIX="$EXT/pypto-lsp.vsix"
[ -f "$VSIX" ] || { echo "FAIL build — $VSIX missing (run without --no-build)"; echo "0 passed, 1 failed"; exit 1; }
log "vsix: $VSIX ($(stat -c %s "$VSIX") bytes)"

# an interpreter that certainly cannot import pypto_lsp, for the "not installed" path
NOIMPORT="$P/venv-without-pypto-lsp/bin/python"
[ -x "$NOIMPORT" ] || python3 -m venv "$P/venv-without-pypto-lsp" >&2

# where the server comes from
if $STUB; then
  SERVER_PYTHONPATH="$HERE/stub_server"
  MODE="stub server (test/e2e/stub_server)"
else
  SERVER_PYTHONPATH="$REPO${PYTHONPATH_ORIG:+:$PYTHONPATH_ORIG}"
  MODE="server from the checkout ($REPO)"
fi
SKIP=""
if [ ! -x "$PY" ]; then
  SKIP="no Python interpreter at $PY (set PYPTO_LSP_PYTHON)"
else
  READY="$(cd /tmp && PYTHONPATH="$SERVER_PYTHONPATH" node "$HERE/lsp_ready.js" "$PY" 60)"
  log "server check: $READY"
  if ! printf '%s' "$READY" | grep -q '"ok":true'; then
    REASON="$(printf '%s' "$READY" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const j=JSON.parse(s);console.log(j.reason+(j.stderr?": "+j.stderr.trim().split("\n").pop():""))}catch(e){console.log(s)}})')"
    SKIP="the server does not start yet ($PY -m pypto_lsp serve: $REASON)"
  fi
fi
log "mode: $MODE${SKIP:+ — SKIPPING server scenarios: $SKIP}"

mkdir -p "$OUT"
node "$HERE/e2e.js" --vsix "$VSIX" --out "$OUT" \
  --code-server "$P/cs/node_modules/.bin/code-server" --playwright "$P/tools" \
  --python "$PY" --no-import-python "$NOIMPORT" "${SOURCE[@]}" \
  --server-env "{\"PYTHONPATH\": \"$SERVER_PYTHONPATH\"}" --scenarios "$SCENARIOS" \
  ${SKIP:+--skip-server "$SKIP"} $KEEP
