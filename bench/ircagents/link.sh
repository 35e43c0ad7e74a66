#!/usr/bin/env bash
# Mention → prompt latency on one IRC server and across two linked ngircd
# servers, and how many mentions per second one daemon takes without
# loss (issue 22). Real ngircd processes on loopback, a fake runner (the
# figures are IRC's and the daemon's, not a model's).
#
#   bench/ircagents/link.sh            # 100 mentions each, a burst of 2000
#   N=500 BURST=5000 bench/ircagents/link.sh
#
# Needs /usr/sbin/ngircd (Debian package ngircd) and Go.
set -euo pipefail
N=${N:-100}
BURST=${BURST:-2000}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
go test -run '^$' -bench '^BenchmarkMentionToPrompt$|^BenchmarkMentionToPromptAcrossLink$' -benchtime "${N}x" ./daemon/ | grep -E '^Benchmark'
go test -run '^$' -bench '^BenchmarkMentionBurst$' -benchtime "${BURST}x" ./daemon/ | grep -E '^Benchmark'
