#!/usr/bin/env bash
# make bench: the same demo page, the same machine, one run; contenders one after another
# under the same k6 arrival-rate settings:
#   ceiling         renderToString in a loop in one thread (× cores = the physical limit)
#   node-baseline   fastify + Piscina rendering directly (same Node, packages, threads)
#   v8go            in-process V8 in Go, a pool of isolates (if bin/v8go-ssr is built)
#   stack-uncached  edge + gRPC + renderer, cache bypassed
#   stack-cached    edge + gRPC + renderer, cache on (hits)
# For each server: the knee (stepped arrival rates, SLO p99 ≤ 150 ms and ≥ 99 % rendered;
# SKIP_KNEE=1 skips it) and a fixed rate (FIXED_RATE, default 200 req/s, 30 s) with
# p50/p90/p99/p99.9/max and the CPU milliseconds per request of each process and thread group
# (bench/thread-cpu.mjs: the edge, Node's main thread, render workers, V8 helper threads).
# Writes bench/results/<timestamp>/: table.md, latency.png, and every k6 summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
out=bench/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
threads=${THREADS:-$(($(nproc) + 1))} # the renderer's own default: cores + 1
fixed_rate=${FIXED_RATE:-200}
steps=${STEPS:-100,150,200,250,300,350,400,450,500,600,700,800}
cached_steps=${CACHED_STEPS:-500,1000,1500,2000,2500,3000,4000}
step_seconds=${STEP_SECONDS:-10}
contenders=(${CONTENDERS:-node-baseline v8go stack-uncached stack-cached})

start_contender() {
  case $1 in
    node-baseline)
      "$node" bench/node-baseline/server.mjs --port 18083 --threads "$threads" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18083 processes=("node=$!") ;;
    v8go)
      bin/v8go-ssr -bundle app/dist/v8/server.js -addr 127.0.0.1:18082 -isolates "$threads" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18082 processes=("go=$!") ;;
    stack-*)
      THREADS=$threads start_stack
      url=http://$EDGE processes=("edge=$edge_pid" "node=$renderer_pid") ;;
  esac
  wait_for "$1 ready" http_ok "$url/"
}

k6() {
  K6_NO_USAGE_REPORT=true bin/k6 run --quiet "$@" > /dev/null 2>&1 || true # thresholds may fail: the figures are the point
}

"$node" bench/render-loop.mjs --seconds 10 > "$out/ceiling.json"
echo "ceiling: $(cat "$out/ceiling.json")"
for c in "${contenders[@]}"; do
  if [ "$c" = v8go ] && [ ! -x bin/v8go-ssr ]; then
    echo "v8go: bin/v8go-ssr is not built (make bin/v8go-ssr): skipped"; continue
  fi
  start_contender "$c"
  mkdir -p "$out/$c-knee" "$out/$c-fixed"
  env_args=(-e "BASE_URL=$url")
  s=$steps
  if [ "$c" = stack-cached ]; then env_args+=(-e USE_CACHE=1); s=$cached_steps; fi
  auth=(); [ "$c" = stack-uncached ] && auth=(-H "Authorization: Bearer bench")
  bin/hey -z 5s -c 8 "${auth[@]}" "$url/" > /dev/null # warm-up: JIT everywhere
  if [ -z "${SKIP_KNEE:-}" ]; then
    echo "$c: knee (steps $s, ${step_seconds}s each)..."
    k6 "${env_args[@]}" -e "STEPS=$s" -e "STEP_SECONDS=$step_seconds" -e "KNEE_FILE=$out/$c-knee.json" -e "RESULTS_DIR=$out/$c-knee" loadtest/02-knee.js
  fi
  echo "$c: fixed rate $fixed_rate req/s..."
  "$node" bench/thread-cpu.mjs snapshot "${processes[@]}" > "$work/cpu-before.json"
  k6 "${env_args[@]}" -e "RATE=$fixed_rate" -e DURATION=30s -e "RESULTS_DIR=$out/$c-fixed" --out "csv=$out/$c-fixed.csv" loadtest/03-load.js
  "$node" bench/thread-cpu.mjs snapshot "${processes[@]}" > "$work/cpu-after.json"
  "$node" bench/thread-cpu.mjs diff "$work/cpu-before.json" "$work/cpu-after.json" \
    "$("$node" -p "require('./$out/$c-fixed/summary.json').requests")" > "$out/$c-cpu.json"
  stop_all
done

"$node" bench/table.mjs "$out" "$fixed_rate" "$threads" > "$out/table.md"
cat "$out/table.md"
if [ -x bin/venv-bench/bin/python ]; then
  bin/venv-bench/bin/python bench/plot.py "$out" && echo "plot: $out/latency.png"
fi
