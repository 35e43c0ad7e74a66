#!/usr/bin/env bash
# Idle cost of the IRC agents' daemons: N agents (default 20) started by
# one `harness agents start` on a local ngircd, left idle; prints the
# process's RSS and its CPU use over a window (default 30 s).
#
#   bench/ircagents/idle.sh                 # 20 anthropic agents, 30 s
#   N=20 KIND=claude WINDOW=60 bench/ircagents/idle.sh
#
# KIND=anthropic (native loop) or claude: neither starts an agent process
# before the first prompt, so the figures are the daemons' own. Needs
# /usr/sbin/ngircd (Debian package ngircd) and Go.
set -euo pipefail
N=${N:-20}
KIND=${KIND:-anthropic}
WINDOW=${WINDOW:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill $hpid $npid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/harness" "$root/cmd/harness"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/ngircd.conf" <<CONF
[Global]
Name = irc.bench
Info = bench
Listen = 127.0.0.1
Ports = $port
[Limits]
MaxNickLength = 30
MaxPenaltyTime = 0
MaxConnectionsIP = 0
[Options]
PAM = no
Ident = no
DNS = no
CONF
/usr/sbin/ngircd -n -f "$work/ngircd.conf" >"$work/ngircd.log" 2>&1 &
npid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done

{
  echo "server: {name: b, host: 127.0.0.1, port: $port}"
  echo "agents:"
  for i in $(seq "$N"); do
    mkdir -p "$work/a$i"
    echo "  - {nick: a$i, agent: $KIND, directory: $work/a$i, channels: [\"#bench\", \"#a$i\"]}"
  done
} >"$work/agents.yaml"

export XDG_RUNTIME_DIR="$work/run" HOME="$work/home"
mkdir -p "$XDG_RUNTIME_DIR" "$HOME"
"$work/harness" agents start --config "$work/agents.yaml" >"$work/agents.out" 2>"$work/agents.log" &
hpid=$!
for _ in $(seq 300); do
  [ "$(ls "$XDG_RUNTIME_DIR"/*.sock 2>/dev/null | wc -l)" -ge "$N" ] && break
  sleep 0.1
done
up=$(ls "$XDG_RUNTIME_DIR"/*.sock 2>/dev/null | wc -l)
sleep 5 # let start-up settle
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$hpid/stat"; }
c0=$(cpu); t0=$(date +%s.%N)
sleep "$WINDOW"
c1=$(cpu); t1=$(date +%s.%N)
rss=$(awk '/VmRSS/{print $2}' "/proc/$hpid/status")
hwm=$(awk '/VmHWM/{print $2}' "/proc/$hpid/status")
threads=$(awk '/Threads/{print $2}' "/proc/$hpid/status")
python3 - "$N" "$up" "$KIND" "$c0" "$c1" "$t0" "$t1" "$ticks" "$rss" "$hwm" "$threads" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import sys
n, up, kind, c0, c1, t0, t1, ticks, rss, hwm, threads, cores, load = sys.argv[1:]
cpu = (float(c1) - float(c0)) / float(ticks)
wall = float(t1) - float(t0)
print(f"{up}/{n} {kind} agents idle on ngircd, one harness process ({threads} threads), {cores} cores, load {load}")
print(f"RSS {int(rss)/1024:.1f} MiB (peak {int(hwm)/1024:.1f} MiB), {int(rss)/1024/int(n):.2f} MiB per agent")
print(f"CPU {cpu:.2f} s over {wall:.0f} s = {100*cpu/wall:.2f}% of one core")
PY
