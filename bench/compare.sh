#!/usr/bin/env bash
# bench/compare.sh — harness vs the official TypeScript Agent SDK on one big
# replayed turn (issue 35's goals: harness at least 5x faster, with at most
# a sixth of the SDK's peak memory, and within 1.5x of the wall time of a
# bare reader of the same stream — the floor).
#
# Usage (from anywhere; paths are relative to the repo root):
#   bench/compare.sh            # 5 runs per side
#   RUNS=9 bench/compare.sh     # more runs
#   SIDES="harness sdk bare naive" bench/compare.sh   # also the naive Go baseline
#   ROUNDS=20 DELTAS=1000 bench/compare.sh       # a smaller transcript
#   HARNESS=/tmp/harness-old bench/compare.sh    # benchmark a given binary, no build
#   BASE=/tmp/harness-old bench/compare.sh       # also side "base": that binary, run
#                                                # interleaved with this tree's build
#
# What it does:
#   1. builds bench/out/{harness,claude-replay,gentranscript,rusage,noreap,naivejson};
#   2. generates bench/out/transcript.ndjson once (200 rounds x 1000
#      text_delta events + a tool use each: ~203k lines, ~58 MB / 55 MiB);
#   3. installs the SDK (npm ci in bench/ts-sdk) if node_modules is missing;
#   4. one untimed warm-up run per side, checked for success (its output is
#      kept in bench/out/results/), then RUNS timed runs, sides interleaved:
#        harness: harness turn --json --claude-bin CLAUDE --cwd TMP "go" >/dev/null
#        sdk:     node bench/ts-sdk/query.mjs --claude-bin CLAUDE --cwd TMP go
#        bare:    bench/out/naivejson -bare -claude-bin CLAUDE   (the floor:
#                 reads the lines from the pipe into nothing)
#        naive:   bench/out/naivejson -claude-bin CLAUDE   (encoding/json into map[string]any)
#      CLAUDE is the same stand-in for every side: a /bin/sh script that sets
#      CLAUDETEST_REPLAY and execs bench/out/noreap, which runs claude-replay.
#   5. prints medians and the three ratios against the goals.
#
# How it measures (read this before quoting numbers):
#   * seconds = wall time of the consumer process, start to exit, as an
#     outside observer sees it: process start-up (Go runtime; Node + loading
#     the SDK) is included on both sides. query.mjs also self-reports the
#     time from query() to the end of the stream; it is printed for reference.
#   * consumer peak MB = ru_maxrss of the consumer process alone. Linux folds
#     the peak RSS of every child a process reaps into what wait4 reports, so
#     GNU time's %M is max(consumer, claude stand-in) — and the replayer alone
#     is ~11-13 MB, more than a lean Go consumer. To keep the stand-in out of
#     the consumer's figure both sides spawn it through bench/noreap, which
#     waits for it with waitid(WNOWAIT) and never reaps it; bench/rusage, a
#     child subreaper, runs the consumer, reaps the orphaned stand-in itself
#     and reports its peak separately ("replayer MB"). noreap's own ~2 MB is
#     still folded into the consumer's figure (on both sides).
#   * tree peak MB = /usr/bin/time -f %M around all of it (max over the
#     consumer, noreap and the replayer), printed as a cross-check.
#   * user+sys = CPU seconds of the consumer (and noreap), not the replayer.
#   * the harness binaries (HARNESS, BASE) are dropped from the page cache
#     before the runs, as after an install: a freshly linked file is cached
#     in large folios that a fault maps whole, ~1.6x the consumer's RSS.
#   The machine has 2 cores: the replayer and the consumer each get one.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
RES=$OUT/results
RUNS=${RUNS:-5}
SIDES=${SIDES:-harness sdk bare}
if [ -n "${BASE:-}" ]; then
	case " $SIDES " in *" base "*) ;; *) SIDES="$SIDES base" ;; esac
fi
ROUNDS=${ROUNDS:-200}
DELTAS=${DELTAS:-1000}
MESSAGE=${MESSAGE:-go}

mkdir -p "$OUT" "$RES"
log() { printf '%s\n' "$*" >&2; }

# --- tools -----------------------------------------------------------------
if [ ! -x /usr/bin/time ]; then
	log "installing GNU time (apt-get install -y time)"
	apt-get install -y time >/dev/null || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi

log "building"
go build -o "$OUT/claude-replay" ./claudecode/claudetest/cmd/claude-replay
go build -o "$OUT/gentranscript" ./bench/gentranscript
go build -o "$OUT/rusage" ./bench/rusage
go build -o "$OUT/noreap" ./bench/noreap
go build -o "$OUT/naivejson" ./bench/naivejson
# HARNESS=/path/to/binary skips the build and benchmarks that binary instead.
case " $SIDES " in *" harness "*)
	if [ -z "${HARNESS:-}" ]; then
		CGO_ENABLED=0 go build -o "$OUT/harness" ./cmd/harness # as the Makefile builds it
		HARNESS=$OUT/harness
	fi ;;
esac
# Every side's binary as after an install or a reboot: a file the linker
# has just written sits in the page cache in large folios (up to 2 MB on
# this kernel's ext4) and a fault maps the whole folio, so a fresh build's
# first runs show ~1.6x the RSS of the same bytes read back from disk
# (BENCHMARKS.md, "A lean process"). Dropping the files' clean cached pages
# (posix_fadvise DONTNEED) makes every side start from the same state. A
# file just written has dirty pages, which DONTNEED leaves cached: they are
# written back first (sync FILE), or a fresh build keeps its large folios.
for b in "${HARNESS:-}" "${BASE:-}"; do
	if [ -n "$b" ]; then
		sync "$b" || true
		dd if="$b" iflag=nocache count=0 status=none || true
	fi
done

# --- transcript ------------------------------------------------------------
if [ "$ROUNDS" = 200 ] && [ "$DELTAS" = 1000 ]; then
	T=$OUT/transcript.ndjson
else
	T=$OUT/transcript-$ROUNDS-$DELTAS.ndjson
fi
if [ ! -s "$T" ]; then
	"$OUT/gentranscript" -out "$T" -rounds "$ROUNDS" -deltas "$DELTAS"
fi
LINES=$(wc -l <"$T")
log "transcript: $T ($(du -m "$T" | cut -f1) MiB, $LINES lines)"

# --- SDK -------------------------------------------------------------------
case " $SIDES " in *" sdk "*)
	if [ ! -d bench/ts-sdk/node_modules/@anthropic-ai/claude-agent-sdk ]; then
		log "installing the TypeScript SDK (npm ci)"
		(cd bench/ts-sdk && npm ci --no-audit --no-fund >/dev/null)
	fi ;;
esac

# --- the stand-in claude every side runs -----------------------------------
WORK=$(mktemp -d /tmp/harness-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CLAUDE=$WORK/claude
cat >"$CLAUDE" <<EOF
#!/bin/sh
export CLAUDETEST_REPLAY='$T'
export NOREAP_EXEC='$OUT/claude-replay'
exec '$OUT/noreap' "\$@"
EOF
chmod +x "$CLAUDE"
CWD=$WORK/cwd
mkdir -p "$CWD"

# run SIDE STDOUT: one measured run of SIDE, its stdout to STDOUT.
run() {
	local side=$1 stdout=$2
	local -a cmd
	case $side in
	harness) cmd=("$HARNESS" turn --json --claude-bin "$CLAUDE" --cwd "$CWD" "$MESSAGE") ;;
	base) cmd=("$BASE" turn --json --claude-bin "$CLAUDE" --cwd "$CWD" "$MESSAGE") ;;
	sdk) cmd=(node "$ROOT/bench/ts-sdk/query.mjs" --claude-bin "$CLAUDE" --cwd "$CWD" "$MESSAGE") ;;
	bare) cmd=("$OUT/naivejson" -bare -claude-bin "$CLAUDE") ;;
	naive) cmd=("$OUT/naivejson" -claude-bin "$CLAUDE") ;;
	*) log "unknown side $side"; return 2 ;;
	esac
	CLAUDETEST_REPLAY=$T /usr/bin/time -f "$side %e %M" -a -o "$RES/time.txt" \
		"$OUT/rusage" -label "$side" -o "$RES/rusage.txt" -- "${cmd[@]}" >"$stdout" 2>>"$RES/stderr-$side.txt"
}

rm -f "$RES"/time.txt "$RES"/rusage.txt "$RES"/stderr-*.txt "$RES"/sdk-self.txt

# --- warm-up and sanity checks (not counted) -------------------------------
for side in $SIDES; do
	log "warm-up: $side"
	if ! run "$side" "$RES/warmup-$side.out"; then
		log "FAIL: $side exited non-zero on the warm-up run; see $RES/stderr-$side.txt"
		tail -5 "$RES/stderr-$side.txt" >&2 || true
		exit 1
	fi
	case $side in
	harness | base) log "  $side printed $(wc -l <"$RES/warmup-$side.out") events (kept in $RES/warmup-$side.out)" ;;
	sdk)
		n=$(grep -o '"messages":[0-9]*' "$RES/warmup-sdk.out" | cut -d: -f2)
		log "  sdk consumed $n messages (transcript: $LINES lines)"
		[ "$n" = "$LINES" ] || log "  WARNING: message count differs from the transcript's line count" ;;
	bare | naive) log "  $side: $(cat "$RES/warmup-$side.out")" ;;
	esac
done
rm -f "$RES"/time.txt "$RES"/rusage.txt

# --- timed runs ------------------------------------------------------------
log "load average before the timed runs: $(cut -d' ' -f1-3 /proc/loadavg) (nproc $(nproc)); other work on the machine skews wall times"
for i in $(seq 1 "$RUNS"); do
	for side in $SIDES; do
		if [ "$side" = sdk ]; then
			run sdk "$RES/sdk.out"
			cat "$RES/sdk.out" >>"$RES/sdk-self.txt"
		else
			run "$side" /dev/null
		fi
	done
	log "run $i/$RUNS done"
done

# --- report ----------------------------------------------------------------
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v s="$1" -v c="$2" '$1==s {print $c}' "$3"; }

declare -A SEC MB
printf '\n%-8s %5s %10s %12s %10s %12s %11s\n' side runs "median s" "consumer MB" "tree MB" "replayer MB" "user+sys s"
for side in $SIDES; do
	s=$(col "$side" 2 "$RES/rusage.txt" | median)
	m=$(col "$side" 3 "$RES/rusage.txt" | awk '{print $1/1024}' | median)
	r=$(col "$side" 4 "$RES/rusage.txt" | awk '{print $1/1024}' | median)
	cpu=$(awk -v s="$side" '$1==s {print $6+$7}' "$RES/rusage.txt" | median)
	t=$(col "$side" 3 "$RES/time.txt" | awk '{print $1/1024}' | median)
	SEC[$side]=$s MB[$side]=$m
	printf '%-8s %5d %10.3f %12.1f %10.1f %12.1f %11.3f\n' "$side" "$RUNS" "$s" "$m" "$t" "$r" "$cpu"
done
if [ -s "$RES/sdk-self.txt" ]; then
	ss=$(grep -o '"seconds":[0-9.]*' "$RES/sdk-self.txt" | cut -d: -f2 | median)
	sm=$(grep -o '"peakRssMB":[0-9.]*' "$RES/sdk-self.txt" | cut -d: -f2 | median)
	printf '\nsdk self-reported (query() to end of stream, in-process maxRSS): median %.3f s, %.1f MB\n' "$ss" "$sm"
fi
if [ -n "${SEC[harness]:-}" ] && [ -n "${SEC[sdk]:-}" ]; then
	awk -v hs="${SEC[harness]}" -v ss="${SEC[sdk]}" -v hm="${MB[harness]}" -v sm="${MB[sdk]}" 'BEGIN {
		sp = ss / hs; mr = hm / sm
		printf "\nspeed-up  sdk/harness wall time: %.2fx   (goal >= 5.00x: %s)\n", sp, (sp >= 5 ? "met" : "NOT met")
		printf "memory    harness/sdk peak RSS:   %.3f    (goal <= 0.167: %s)\n", mr, (mr <= 1 / 6 ? "met" : "NOT met")
	}'
fi
if [ -n "${SEC[harness]:-}" ] && [ -n "${SEC[bare]:-}" ]; then
	awk -v hs="${SEC[harness]}" -v bs="${SEC[bare]}" 'BEGIN {
		r = hs / bs
		printf "floor     harness/bare wall time: %.2fx   (goal <= 1.50x: %s)\n", r, (r <= 1.5 ? "met" : "NOT met")
	}'
fi
log ""
log "raw figures: $RES/rusage.txt (label wall_s maxrss_kb replayer_maxrss_kb exit user_s sys_s), $RES/time.txt (label %e %M)"
