#!/usr/bin/env bash
# make profile: CPU milliseconds per request, by component, for the uncached stack and for
# bare fastify + Piscina, at the same fixed arrival rate (k6, RATE default 150 req/s, 20 s):
# the edge, the renderer's main thread, the render workers, V8's helper threads, the rest.
# Per-thread CPU comes from /proc/<pid>/task/*/stat (bench/thread-cpu.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
rate=${RATE:-150}
out=bench/results/profile-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

measure() { # NAME URL PID-SPECS...
  local name=$1 url=$2; shift 2
  bin/hey -z 5s -c 4 "$url/" > /dev/null # warm-up
  "$node" bench/thread-cpu.mjs snapshot "$@" > "$work/before.json"
  mkdir -p "$out/$name"
  K6_NO_USAGE_REPORT=true bin/k6 run --quiet -e "BASE_URL=$url" -e "RATE=$rate" -e DURATION=20s \
    -e "RESULTS_DIR=$out/$name" loadtest/03-load.js > /dev/null 2>&1 || true
  "$node" bench/thread-cpu.mjs snapshot "$@" > "$work/after.json"
  local requests
  requests=$("$node" -p "require('./$out/$name/summary.json').requests")
  "$node" bench/thread-cpu.mjs diff "$work/before.json" "$work/after.json" "$requests" > "$out/$name.json"
}

SSR_CONFIG=$(uncached_config) start_stack
measure stack "http://$EDGE" "edge=$edge_pid" "renderer=$renderer_pid"
stop_all
"$node" bench/node-baseline/server.mjs --port 18083 --threads "${THREADS:-2}" > "$work/baseline.log" 2>&1 & pids+=($!)
wait_for "node-baseline" http_ok http://127.0.0.1:18083/
measure node-baseline http://127.0.0.1:18083 "node=${pids[-1]}"
stop_all

"$node" -e "
  const [dir, rate] = process.argv.slice(1);
  const s = require('./' + dir + '/stack.json'), b = require('./' + dir + '/node-baseline.json');
  const rows = ['main thread', 'render workers', 'V8 helper threads (GC, compile)', 'libuv threads', 'other', 'total'];
  const f = (v) => (v == null ? '-' : v.toFixed(2));
  console.log('# CPU ms per request, uncached home page at ' + rate + ' req/s, ' + new Date().toISOString().slice(0, 16) + 'Z\n');
  console.log('| component | this stack | bare fastify + Piscina |');
  console.log('| --- | --- | --- |');
  console.log('| edge (Go process) | ' + f(s.edge.total) + ' | - |');
  for (const r of rows) console.log('| ' + (r === 'total' ? 'Node process total' : 'Node ' + r) + ' | ' + f(s.renderer[r]) + ' | ' + f(b.node[r]) + ' |');
  console.log('| **all processes** | **' + f(s.edge.total + s.renderer.total) + '** | **' + f(b.node.total) + '** |');
" "$out" "$rate" | tee "$out/table.md"
