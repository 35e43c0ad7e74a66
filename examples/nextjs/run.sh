#!/usr/bin/env bash
# CI for the example: builds the client and this app exactly as README.md
# says, then drives it in headless Chromium against `harness serve --demo`
# (test/page.test.mjs). Installs are skipped while their lock files are
# unchanged; the client and the app are built every time.
#
#   HARNESS_BIN   the harness binary (built into ../../bin/harness when unset)
#   CHROMIUM      the browser (default /usr/bin/chromium; installed from
#                 Debian when missing, never downloaded by playwright)
set -euo pipefail
cd "$(dirname "$0")"
export NEXT_TELEMETRY_DISABLED=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
if [[ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]]; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
fi
if [[ -z "${HARNESS_BIN:-}" ]]; then
  (cd ../.. && go build -o bin/harness ./cmd/harness)
  export HARNESS_BIN="$PWD/../../bin/harness"
fi

# stale STAMP FILE...: true when STAMP is missing or older than a FILE.
stale() {
  local stamp=$1; shift
  [[ -f $stamp ]] || return 0
  local f; for f in "$@"; do [[ $f -nt $stamp ]] && return 0; done
  return 1
}

echo "== the client (clients/typescript)"
client=../../clients/typescript
# npm ci writes node_modules/.package-lock.json: it is the stamp.
if stale $client/node_modules/.package-lock.json $client/package.json $client/package-lock.json; then
  (cd $client && npm ci --no-audit --no-fund)
fi
(cd $client && npm run build --silent)

echo "== the example: npm install, next build"
# npm install, not npm ci: the lock lacks next's and sharp's packages for
# other platforms (the registry here does not serve them), which npm ci
# takes for a stale lock. See README.md.
if stale node_modules/.harness-installed package.json package-lock.json $client/package.json; then
  npm install --no-audit --no-fund
  touch node_modules/.harness-installed
fi
# Rewrites are fixed at build time, so the gateway's port is chosen now.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
HARNESS_URL=http://127.0.0.1:$port npm run build

echo "== the page in Chromium"
HARNESS_GATEWAY_PORT=$port npm test
