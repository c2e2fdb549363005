#!/usr/bin/env bash
# setup.sh — install what the end-to-end test needs, idempotently, under
# $PYPTO_E2E_PREFIX (default /tmp/pypto-lsp-e2e):
#   cs/     code-server 4.100.3 (VS Code 1.100.3; the newest release whose engines.node is 20)
#   tools/  playwright-core (drives Debian's /usr/bin/chromium; no browser download)
# plus the Debian packages chromium, ripgrep and code-server's native build deps.
# Only the npm / Debian registries are used. Every step is skipped when already done.
# Usage: bash setup.sh [--no-apt]
set -euo pipefail
P="${PYPTO_E2E_PREFIX:-/tmp/pypto-lsp-e2e}"
CODE_SERVER_VERSION=4.100.3
PLAYWRIGHT_VERSION=1.65.1
DO_APT=true
for a in "$@"; do case "$a" in --no-apt) DO_APT=false;; *) echo "unknown option $a" >&2; exit 64;; esac; done
log() { echo "[e2e-setup $(date +%T)] $*"; }
# registries can hiccup on a fresh CI machine: try a download step up to three times
retry() { local n; for n in 1 2 3; do "$@" && return 0; log "attempt $n failed: $*"; sleep $((n * 5)); done; return 1; }
mkdir -p "$P"

need_apt=false
for bin in chromium rg; do command -v "$bin" >/dev/null || need_apt=true; done
for pkg in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt=true
done
if $need_apt; then
  if ! $DO_APT; then echo "missing Debian packages and --no-apt given" >&2; exit 1; fi
  log "apt: chromium ripgrep + native build deps for code-server"
  retry apt-get update -qq
  retry env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ripgrep build-essential pkg-config \
    libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev >/dev/null
fi

if [ ! -d "$P/tools/node_modules/playwright-core" ]; then
  log "playwright-core@$PLAYWRIGHT_VERSION"
  mkdir -p "$P/tools"
  ( cd "$P/tools" && { [ -f package.json ] || npm init -y >/dev/null; } && \
    retry npm install --no-audit --no-fund "playwright-core@$PLAYWRIGHT_VERSION" >/dev/null )
fi

CS="$P/cs/node_modules/.bin/code-server"
if [ -x "$CS" ] && XDG_CONFIG_HOME="$P/xdg" "$CS" --config /dev/null --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION "; then
  log "code-server $CODE_SERVER_VERSION already installed"
else
  log "code-server $CODE_SERVER_VERSION (npm + native builds, 1.5-5 min)"
  # @vscode/ripgrep's postinstall downloads rg from GitHub, which is unreachable here; it
  # first looks for the release tarball in $TMPDIR/vscode-ripgrep-cache-<pkg version>/,
  # so seed that with Debian's rg (the same 13.0.0 release).
  cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$cache" "$P/rgpack"
  cp /usr/bin/rg "$P/rgpack/rg"
  tar czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$P/rgpack" rg
  mkdir -p "$P/cs"
  ( cd "$P/cs" && { [ -f package.json ] || npm init -y >/dev/null; } )
  # unsafe_perm: postinstall.sh refuses root otherwise; nodedir: node-gyp uses the local
  # headers instead of downloading them; yes: node-pty's postinstall runs `npx node-gyp`.
  ( cd "$P/cs" && retry env npm_config_unsafe_perm=true npm_config_nodedir=/usr npm_config_yes=true \
      npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION" \
      > "$P/code-server-install.log" 2>&1 ) || { tail -40 "$P/code-server-install.log"; exit 1; }
  XDG_CONFIG_HOME="$P/xdg" "$CS" --config /dev/null --version | tail -1
fi
log "ready: $P"
