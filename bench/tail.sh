#!/usr/bin/env bash
# make tail: where the uncached stack's slow requests spend their time. The stack as make
# bench starts it, warmed up; k6 at RATE req/s (default 105) for DURATION (30s) with every
# request's Server-Timing logged (loadtest/03-load.js, PHASES=1), every thread's run-queue
# delay sampled every SCHED_EVERY ms (10; bench/schedstat.mjs) and the renderer's log kept;
# then bench/tail.mjs's report. Writes bench/results/tail-<timestamp>/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
out=bench/results/tail-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
rate=${RATE:-105}
THREADS=${THREADS:-$(($(nproc) + 1))} start_stack
bin/hey -z 5s -c 8 -H "Authorization: Bearer bench" "http://$EDGE/" > /dev/null
# RENICE="WorkerThread=10 node-V8Worker=5": lower the OS priority of the renderer's threads
# with that name (an experiment: threads started later keep the default).
for spec in ${RENICE:-}; do
  for task in /proc/$renderer_pid/task/*; do
    [ "$(cat "$task/comm")" = "${spec%=*}" ] && renice -n "${spec#*=}" -p "${task##*/}" > /dev/null
  done
done
"$node" bench/schedstat.mjs "edge=$edge_pid" "node=$renderer_pid" --every "${SCHED_EVERY:-10}" > "$out/schedstat.jsonl" & sampler=$!
K6_NO_USAGE_REPORT=true bin/k6 run --quiet -e "BASE_URL=http://$EDGE" -e "RATE=$rate" -e "DURATION=${DURATION:-30s}" \
  -e PHASES=1 -e "RESULTS_DIR=$out" --log-format=raw --log-output="file=$out/phases.log" loadtest/03-load.js > /dev/null 2>&1 || true
kill -TERM "$sampler"; wait "$sampler" || true
cp "$work/renderer.log" "$out/renderer.log"
"$node" bench/tail.mjs "$out" | tee "$out/tail.md"
