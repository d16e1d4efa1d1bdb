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
  SSR_RENDERER_THREADS=${THREADS:-2} \
  SSR_EDGE_LISTEN=127.0.0.1:18080 SSR_EDGE_ADMIN_LISTEN=127.0.0.1:19100 SSR_EDGE_RENDER_TIMEOUT=2s SSR_EDGE_LOG_LEVEL=error
"$node" renderer/src/main.js > "$work/renderer.log" 2>&1 & pids+=($!)
# wait_for DESCRIPTION COMMAND...: retry for up to 60 s.
wait_for() {
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "figures: $what did not happen within 60 s" >&2; cat "$work"/*.log >&2; exit 1
}
wait_for "renderer ready" grep -q '"msg":"ready"' "$work/renderer.log"
bin/edge > "$work/edge.log" 2>&1 & pids+=($!)
wait_for "edge ready" "$node" -e "fetch('http://127.0.0.1:19100/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

url=http://127.0.0.1:18080/
bin/hey -z 5s -c "$concurrency" "$url" > /dev/null   # warm-up: JIT of workers and edge
# hey 0.1.5's text summary misprints percentiles: take its per-request CSV instead.
bin/hey -z "${seconds}s" -c "$concurrency" -o csv "$url" > "$work/hey.csv"
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

stack=$("$node" -e "
  const rows = require('fs').readFileSync(process.argv[1], 'utf8').trim().split('\n').slice(1).map(l => l.split(','));
  const ms = rows.map(r => Number(r[0]) * 1000).sort((a, b) => a - b);
  const at = q => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(1);
  const codes = {}; for (const r of rows) codes[r[6]] = (codes[r[6]] ?? 0) + 1;
  console.log(JSON.stringify({ rps: Math.round(rows.length / $seconds), p50_ms: +at(0.5), p99_ms: +at(0.99), max_ms: +ms.at(-1).toFixed(1), status: codes }));
" "$work/hey.csv")

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $(nproc)  threads: ${THREADS:-2}  node: $("$node" --version)"
echo "stack, uncached GET / (hey -z ${seconds}s -c $concurrency): $stack  edge counted: $fallbacks"
echo "renderToString loop, one thread: $loop"
"$node" -p "'stack / one-thread renderToString: ' + (JSON.parse(process.argv[1]).rps / JSON.parse(process.argv[2]).ops_per_second).toFixed(2) + 'x'" "$stack" "$loop"
