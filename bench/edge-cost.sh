#!/usr/bin/env bash
# make edge-cost: what the edge itself costs per uncached request, and where. For each
# LABEL=BINARY argument (default: current=bin/edge), in ROUNDS (2) rounds taking turns, a
# fresh stack (THREADS=3 render workers, the edge with EDGE_GOMAXPROCS Ps: scripts/stack.sh)
# serves the uncached home page to hey at RATE (150) req/s; over 20 s of it, `perf stat`
# counts the edge's CPU time (task-clock), context switches and system calls, and
# /proc/<pid>/stat splits the time into user and system, each per request served. Counts of
# events are steadier than timings on a shared host: quote them beside the milliseconds.
# PPROF=DIR keeps a 20 s CPU profile of each run (go tool pprof -top BINARY DIR/LABEL-N.pprof);
# SYSCALLS=1 adds strace's count of each system call (strace slows the edge: counts only).
# SHOP=1 measures the demo shop instead (its listing, props from its Go loader; LABEL=BINARY
# names shop binaries, default current=bin/shop): the Go process, loader included.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh

rate=${RATE:-150}
hey_load() { # SECONDS: the uncached page at $rate req/s
  bin/hey -z "$1s" -c 4 -q $((rate / 4)) -disable-compression -H "Authorization: Bearer bench" "http://$EDGE/"
}

# measure LABEL BINARY ROUND
measure() {
  local label=$1 binary=$2 round=$3
  stop_all
  if [ -n "${SHOP:-}" ]; then
    THREADS=${THREADS:-3} SHOP_BIN=$binary start_shop
    edge_pid=$shop_pid
  else
    THREADS=${THREADS:-3} EDGE_BIN=$binary start_stack
  fi
  bin/hey -n 1500 -c 4 -disable-compression -H "Authorization: Bearer bench" "http://$EDGE/" > /dev/null # JIT and pools warm
  hey_load 22 > "$work/hey.txt" & local hey=$!
  sleep 1
  local ticks_before ticks_after
  ticks_before=$(awk '{print $14, $15}' "/proc/$edge_pid/stat")
  perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -p "$edge_pid" -o "$work/edge.perf" --timeout 20000
  ticks_after=$(awk '{print $14, $15}' "/proc/$edge_pid/stat")
  wait "$hey"
  local served
  served=$(grep -o '\[200\][^0-9]*[0-9]*' "$work/hey.txt" | grep -o '[0-9]*$')
  # hey's requests over its 22 s, scaled to the 20 counted ones.
  "$node" -e "
    const [label, served, before, after, perf] = process.argv.slice(1);
    const n = Number(served) * 20 / 22;
    const count = (event) => Number(perf.split('\n').find((l) => l.includes(event))?.split(',')[0]);
    const [u0, s0] = before.split(' ').map(Number), [u1, s1] = after.split(' ').map(Number);
    const per = (x, digits = 3) => +(x / n).toFixed(digits);
    console.log(JSON.stringify({ edge: label, gomaxprocs: process.env.EDGE_GOMAXPROCS, served: Number(served),
      cpu_ms: per(count('task-clock')), user_ms: per((u1 - u0) * 10), system_ms: per((s1 - s0) * 10),
      context_switches: per(count('context-switches'), 2), syscalls: per(count('sys_enter'), 2) }));
  " "$label" "$served" "$ticks_before" "$ticks_after" "$(cat "$work/edge.perf")"
  if [ -n "${PPROF:-}" ]; then
    mkdir -p "$PPROF"
    hey_load 22 > /dev/null & hey=$!
    sleep 1
    fetch_binary "http://$ADMIN/debug/pprof/profile?seconds=20" "$PPROF/$label-$round.pprof"
    wait "$hey"
  fi
  if [ -n "${SYSCALLS:-}" ]; then
    hey_load 12 > "$work/hey.txt" & hey=$!
    sleep 1
    timeout -s INT 10 strace -f -c -p "$edge_pid" -o "$work/strace.txt" 2> /dev/null || true
    wait "$hey"
    echo "strace over ~10 s of $(grep -o '\[200\][^0-9]*[0-9]*' "$work/hey.txt" | grep -o '[0-9]*$') requests in 12 s:"
    head -12 "$work/strace.txt"
  fi
}

fetch_binary() { "$node" -e "fetch(process.argv[1], { headers: { Authorization: 'Bearer ' + process.env.SSR_EDGE_ADMIN_TOKEN } }).then(async (r) => require('fs').writeFileSync(process.argv[2], Buffer.from(await r.arrayBuffer())))" "$1" "$2"; }

default=current=bin/edge
[ -n "${SHOP:-}" ] && default=current=bin/shop
variants=("${@:-$default}")
for round in $(seq "${ROUNDS:-2}"); do
  for v in "${variants[@]}"; do
    measure "${v%%=*}" "${v#*=}" "$round"
  done
done
stop_all
