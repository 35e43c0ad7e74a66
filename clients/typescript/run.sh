#!/usr/bin/env bash
# Installs, builds and tests the TypeScript client. The integration tests
# start `harness serve --demo` from $HARNESS_BIN (default ../../bin/harness,
# built here when missing) unless HARNESS_URL points at a running gateway.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -z "${HARNESS_URL:-}" && -z "${HARNESS_BIN:-}" ]]; then
  (cd ../.. && go build -o bin/harness ./cmd/harness)
fi
npm ci --no-audit --no-fund
# The gateway runs with bearer-token auth on, so the auth paths (every call
# with the token, and the 401 without it) are tested rather than skipped;
# the browser test covers the console without a token.
export HARNESS_TOKEN="${HARNESS_TOKEN:-ci-token-$$-$RANDOM}"
npm test
