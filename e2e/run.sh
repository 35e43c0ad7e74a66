#!/usr/bin/env bash
# Runs the browser test of the web console. Installs Debian's chromium when
# it is missing, builds the harness binary unless HARNESS_BIN or HARNESS_URL
# says otherwise, installs playwright-core (no browser download) and runs
# console.test.mjs. Screenshots land in e2e/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]]; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
fi
if [[ -z "${HARNESS_URL:-}" && -z "${HARNESS_BIN:-}" ]]; then
  (cd .. && go build -o bin/harness ./cmd/harness)
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm ci --no-audit --no-fund
npm test
