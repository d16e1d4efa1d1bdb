#!/usr/bin/env bash
# make bench: the same demo page, the same machine, one run; contenders one after another
# under the same k6 arrival-rate settings:
#   ceiling         renderToString in a loop in one thread (× cores = the physical limit)
#   node-baseline   fastify + Piscina rendering directly (same Node, packages, threads)
#   v8go            in-process V8 in Go, a pool of isolates (if bin/v8go-ssr is built)
#   stack-uncached  edge + gRPC + renderer, cache bypassed
#   stack-cached    edge + gRPC + renderer, cache on (hits)
# and the same listing with its props from the shop's SQLite database, each contender doing
# the data work its architecture would:
#   node-baseline-db  the fastify handler queries node:sqlite and hands the props to the worker
#   v8go-db           Go queries the database and passes the props into the isolate
#   shop-uncached     the demo shop: a Go loader queries and marshals, the props cross the hop
# For each server: the knee (stepped arrival rates, SLO p99 ≤ 150 ms and ≥ 99 % rendered;
# SKIP_KNEE=1 skips it), KNEE_ROUNDS times (default 3), the contenders taking turns within
# each round so that the machine's drifting noise falls on all of them, the table giving the
# median; and a fixed rate (FIXED_RATE, default 200 req/s, 30 s) with p50/p90/p99/p99.9/max
# and the CPU milliseconds per request of each process and thread group (bench/thread-cpu.mjs:
# the edge, Node's main thread, render workers, V8 helper threads).
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
knee_rounds=${KNEE_ROUNDS:-3}
contenders=(${CONTENDERS:-node-baseline v8go stack-uncached stack-cached node-baseline-db v8go-db shop-uncached})
bin/shop -seed -db "$work/shop.db" # the catalog the -db contenders and the shop read

start_contender() {
  case $1 in
    node-baseline|node-baseline-db)
      db=(); [ "$1" = node-baseline-db ] && db=(--db "$work/shop.db")
      "$node" bench/node-baseline/server.mjs --port 18083 --threads "$threads" "${db[@]}" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18083 processes=("node=$!") ;;
    v8go|v8go-db)
      db=(); [ "$1" = v8go-db ] && db=(-db "$work/shop.db")
      bin/v8go-ssr -bundle app/dist/v8/server.js -addr 127.0.0.1:18082 -isolates "$threads" "${db[@]}" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18082 processes=("go=$!") ;;
    shop-uncached)
      THREADS=$threads start_shop
      url=http://$EDGE processes=("edge=$shop_pid" "node=$renderer_pid") ;;
    stack-*)
      THREADS=$threads start_stack
      url=http://$EDGE processes=("edge=$edge_pid" "node=$renderer_pid") ;;
  esac
  wait_for "$1 ready" http_ok "$url/"
}

k6() {
  K6_NO_USAGE_REPORT=true bin/k6 run --quiet "$@" > /dev/null 2>&1 || true # thresholds may fail: the figures are the point
}

# start C: starts contender C, warmed up (JIT everywhere), and sets its k6 arguments; fails
# (1) when C cannot run here.
start() {
  case $1 in v8go*) [ -x bin/v8go-ssr ] || return 1 ;; esac
  start_contender "$1"
  env_args=(-e "BASE_URL=$url")
  knee_steps=$steps
  if [ "$1" = stack-cached ]; then env_args+=(-e USE_CACHE=1); knee_steps=$cached_steps; fi
  auth=(); case $1 in *-uncached) auth=(-H "Authorization: Bearer bench") ;; esac
  bin/hey -z 5s -c 8 "${auth[@]}" "$url/" > /dev/null
}

"$node" bench/render-loop.mjs --seconds 10 > "$out/ceiling.json"
echo "ceiling: $(cat "$out/ceiling.json")"
[ -x bin/v8go-ssr ] || echo "v8go: bin/v8go-ssr is not built (make bin/v8go-ssr): skipped"
if [ -z "${SKIP_KNEE:-}" ]; then
  for round in $(seq "$knee_rounds"); do
    for c in "${contenders[@]}"; do
      start "$c" || continue
      echo "$c: knee, round $round of $knee_rounds (steps $knee_steps, ${step_seconds}s each)..."
      mkdir -p "$out/$c-knee-$round"
      k6 "${env_args[@]}" -e "STEPS=$knee_steps" -e "STEP_SECONDS=$step_seconds" \
        -e "KNEE_FILE=$out/$c-knee-$round.json" -e "RESULTS_DIR=$out/$c-knee-$round" loadtest/02-knee.js
      stop_all
    done
  done
fi
for c in "${contenders[@]}"; do
  start "$c" || continue
  echo "$c: fixed rate $fixed_rate req/s..."
  mkdir -p "$out/$c-fixed"
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
