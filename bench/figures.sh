#!/usr/bin/env bash
# First figures: uncached renders of the demo's home page through the whole stack
# (hey, closed loop) next to a worker's render (renderPage) of the same page in one thread.
# Not a benchmark suite (that is `make bench`, to come): a quick, reproducible look.
#
#   bench/figures.sh [SECONDS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
concurrency=${2:-8}
source scripts/stack.sh

# Uncached, every request a real render; the edge's metrics confirm it afterwards.
SSR_CONFIG=$(uncached_config) start_stack

url=http://$EDGE/
bin/hey -z 5s -c "$concurrency" "$url" > /dev/null   # warm-up: JIT of workers and edge
bin/hey -z "${seconds}s" -c "$concurrency" -o csv "$url" > "$work/hey.csv"
ssr=$(metric edge_requests_total 'outcome="ssr"')
all=$(metric edge_requests_total)
stop_all

stack=$(hey_summary "$work/hey.csv" "$seconds")
loop=$("$node" bench/render-loop.mjs --seconds 10)

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $(nproc)  threads: ${THREADS:-2}  node: $("$node" --version)"
echo "stack, uncached GET / (hey -z ${seconds}s -c $concurrency): $stack  edge counted: $ssr of $all server-rendered"
echo "renderPage loop, one thread: $loop"
"$node" -p "'stack / one-thread renderPage: ' + (JSON.parse(process.argv[1]).rps / JSON.parse(process.argv[2]).ops_per_second).toFixed(2) + 'x'" "$stack" "$loop"
