#!/usr/bin/env bash
# First figures: uncached renders of the demo's home page through the whole stack
# (hey, closed loop) next to renderToString of the same page in one thread.
# Not a benchmark suite (that is `make bench`, to come): a quick, reproducible look.
#
#   bench/figures.sh [SECONDS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
concurrency=${2:-8}
node=renderer/node_modules/.bin/node
work=$(mktemp -d)
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap stop EXIT

# The soft deadline is raised so that every request is a real server render: fallbacks
# would flatter the figures. The edge's metrics confirm it afterwards.
export SSR_RENDERER_GRPC_ADDRESS="unix://$work/renderer.sock" SSR_RENDERER_HTTP_LISTEN=127.0.0.1:0 \
  SSR_RENDERER_THREADS=${THREADS:-2} SSR_RENDERER_LOG_LEVEL=warn \
  SSR_EDGE_LISTEN=127.0.0.1:18080 SSR_EDGE_ADMIN_LISTEN=127.0.0.1:19100 SSR_EDGE_RENDER_TIMEOUT=2s SSR_EDGE_LOG_LEVEL=error
"$node" renderer/src/main.js > "$work/renderer.log" 2>&1 & pids+=($!)
until grep -q '"msg":"ready"' "$work/renderer.log"; do
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/renderer.log"; exit 1; }
  sleep 0.1
done
bin/edge > "$work/edge.log" 2>&1 & pids+=($!)
until "$node" -e "fetch('http://127.0.0.1:19100/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; do sleep 0.1; done

url=http://127.0.0.1:18080/
bin/hey -z 5s -c "$concurrency" "$url" > /dev/null   # warm-up: JIT of workers and edge
bin/hey -z "${seconds}s" -c "$concurrency" "$url" > "$work/hey.txt"
fallbacks=$("$node" -e "
  fetch('http://127.0.0.1:19100/metrics').then(r => r.text()).then(t => {
    let ssr = 0, other = 0;
    for (const l of t.split('\n')) if (l.startsWith('edge_requests_total{')) {
      const v = Number(l.split(' ').at(-1)); if (l.includes('outcome=\"ssr\"')) ssr += v; else other += v;
    }
    console.log(ssr + ' server-rendered, ' + other + ' other (fallbacks, errors)');
  })")
kill "${pids[@]}"; wait 2>/dev/null || true; pids=()

loop=$("$node" bench/render-loop.mjs --seconds 10)

rps=$(awk '/Requests\/sec/ {print $2}' "$work/hey.txt")
p50=$(awk '/ 50% in/ {printf "%.1f", $3*1000}' "$work/hey.txt")
p99=$(awk '/ 99% in/ {printf "%.1f", $3*1000}' "$work/hey.txt")
max=$(awk '/Slowest:/ {printf "%.1f", $2*1000}' "$work/hey.txt")
codes=$(awk '/Status code distribution/,0' "$work/hey.txt" | grep -E '^\s+\[' | tr -s ' ' | paste -sd, -)
ops=$("$node" -p "JSON.parse(process.argv[1]).ops_per_second" "$loop")

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $(nproc)  threads: ${THREADS:-2}  node: $("$node" --version)"
echo "stack, uncached GET / (hey -z ${seconds}s -c $concurrency): $rps req/s  p50 $p50 ms  p99 $p99 ms  max $max ms  status:$codes  ($fallbacks)"
echo "renderToString loop, one thread: $loop"
"$node" -p "'stack / one-thread renderToString: ' + ($rps / $ops).toFixed(2) + 'x'"
