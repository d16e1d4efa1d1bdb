#!/usr/bin/env bash
# make instructions: what tracing and the leak sampling cost, counted by the CPU rather than timed on a noisy
# host. For each variant, a fresh stack (3 threads) serves the uncached home page to hey (4
# connections, 22 s, as fast as it goes); `perf stat` counts the user-space instructions of
# the edge and of the renderer (all its threads) over 20 s of it, divided by the requests
# served meanwhile. Variants: tracing off (the defaults); tracing off and no leak sampling
# (renderer.heap_growth_sample_every 0); tracing on in both processes, every request traced,
# spans sent to bench/otlp-sink.mjs. ROUNDS (2) rounds, the variants taking turns.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh

# measure NAME [VAR=VALUE...]: one variant, its settings exported for the stack it starts.
measure() {
  local name=$1; shift
  stop_all
  for kv in "$@"; do export "${kv?}"; done
  case $name in traced) "$node" bench/otlp-sink.mjs --port 14317 > "$work/sink.log" 2>&1 & pids+=($!) ;; esac
  THREADS=3 start_stack
  bin/hey -n 1500 -c 4 -disable-compression -H "Authorization: Bearer bench" "http://$EDGE/" > /dev/null # JIT warm
  bin/hey -z 22s -c 4 -disable-compression -H "Authorization: Bearer bench" "http://$EDGE/" > "$work/hey.txt" & local hey=$!
  sleep 1
  perf stat -x, -e instructions:u -p "$edge_pid" -o "$work/edge.perf" --timeout 20000 &
  perf stat -x, -e instructions:u -p "$renderer_pid" -o "$work/renderer.perf" --timeout 20000
  wait "$hey"
  local served edge renderer
  served=$(grep -o '\[200\][^0-9]*[0-9]*' "$work/hey.txt" | grep -o '[0-9]*$')
  edge=$(grep instructions "$work/edge.perf" | cut -d, -f1)
  renderer=$(grep instructions "$work/renderer.perf" | cut -d, -f1)
  # hey's requests over its 22 s, scaled to the 20 counted ones.
  "$node" -e "const [n, ...counts] = process.argv.slice(1); const [e, r, s] = counts.map(Number);
    const per = (x) => (x / (s * 20 / 22) / 1e6).toFixed(3);
    console.log(JSON.stringify({ variant: n, served: s, edge_minstr_per_request: +per(e), renderer_minstr_per_request: +per(r) }))" \
    "$name" "$edge" "$renderer" "$served"
  for kv in "$@"; do unset "${kv%%=*}"; done
}

for _ in $(seq "${ROUNDS:-2}"); do
  measure off
  measure unsampled SSR_RENDERER_HEAP_GROWTH_SAMPLE_EVERY=0
  measure traced SSR_EDGE_OTLP_ENDPOINT=http://127.0.0.1:14317 SSR_RENDERER_OTLP_ENDPOINT=http://127.0.0.1:14317
done
stop_all
