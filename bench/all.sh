#!/bin/sh
# bench/all.sh: every benchmark the issues name, in one run, each beside its
# floor or peer where it has one (make bench). Prints the machine, the load
# before each step and the date, so a figure can be recorded in
# BENCHMARKS.md with them. Takes ~15 minutes on 2 cores; QUICK=1 skips the
# long ones (the TypeScript SDK side by side, the cluster of 500 sessions).
set -eu
cd "$(dirname "$0")/.."
step() { printf '\n## %s — %s, load %s\n' "$1" "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
printf '# harness benchmarks on %s (%s cores, %s), %s\n' "$(uname -n)" "$(nproc)" "$(uname -r)" "$(git rev-parse --short HEAD)"
[ -x bin/harness ] || go build -o bin/harness ./cmd/harness

step "driver: decoder and event path (claudecode), event log (session)"
go test -run '^$' -bench . -benchmem ./claudecode ./session
step "approval round trip; first delta (native)"
go test -run '^$' -bench 'ApprovalRoundTrip' -benchmem .
go test -run '^$' -bench 'FirstDelta' -benchtime 15x ./native
step "checkpoints: snapshots beside the WalkDir+lstat floor (issue 35)"
go test -run '^$' -bench 'Snapshot|WalkFloor' -benchtime 20x ./checkpoint
step "a turn start's allocations, CPU, lock wait and GC, alone and 50 at once (issue 35)"
go test -run '^$' -bench 'TurnStart' -benchtime 20x .
step "worktree session beside a bare git worktree add (issue 31)"
go test -run '^$' -bench 'WorktreeSession' -benchtime 20x .
step "sandbox entry and grants beside a direct start (issue 31)"
go test -run '^$' -bench 'BenchmarkStart' -benchtime 50x ./sandbox
step "notifications: event to webhook (issue 32)"
go test -run '^$' -bench 'EventToWebhook|TurnEndToWebhook' ./notify
step "usage report (issue 33)"
go test -run '^$' -bench 'Report2000x50' ./usage
step "gateway fan-out: 50 sessions x 4 readers, and 1 x 64 (issue 35)"
go run ./bench/gatewayload -readers 4 -list 10 -runs 3
go run ./bench/gatewayload -sessions 1 -per-session 64 -readers 64 -runs 3
step "idle RSS and 10 demo sessions at once (issues 31, 35)"
go run ./bench/demomem -bin bin/harness -n 10
if [ "${QUICK:-}" = "" ]; then
	step "the driver beside the TypeScript SDK and a bare reader (issue 35)"
	bench/compare.sh
	step "a cluster of three nodes with 500 sessions (issue 36)"
	go run ./bench/cluster -bin bin/harness -sessions 500
fi
step "done"
