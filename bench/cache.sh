#!/usr/bin/env bash
# Cache figures through the real edge, default (demo) config:
#  1. cache hits of / against a bare net/http handler writing the same bytes, same load;
#  2. thundering herd: 200 clients at once on one cold key, renders performed and p99;
#  3. two edges and a shared cache (a real redis-server): L1 hits, L2 hits and misses side by
#     side, and renders per cold key over both edges with and without it.
#
#   bench/cache.sh [SECONDS] [CONCURRENCY]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
concurrency=${2:-8}
source scripts/stack.sh
start_stack

hit_url=http://$EDGE/
http_ok "$hit_url"                                        # stores /
bin/hey -z 3s -c "$concurrency" "$hit_url" > /dev/null    # warm-up
bin/hey -z "${seconds}s" -c "$concurrency" -o csv "$hit_url" > "$work/hits.csv"

(cd bench && go build -o "$work/bare" ./cmd/bare)
# hey asks for gzip (Go's transport does), so the bare server replays the gzip body too.
"$work/bare" -from "$hit_url" -accept-encoding gzip -addr 127.0.0.1:18081 2> "$work/bare.log" & pids+=($!)
wait_for "bare server" http_ok http://127.0.0.1:18081/
bin/hey -z 3s -c "$concurrency" http://127.0.0.1:18081/ > /dev/null
bin/hey -z "${seconds}s" -c "$concurrency" -o csv http://127.0.0.1:18081/ > "$work/bare.csv"

cold="http://$EDGE/products/$((RANDOM % 900 + 50))"
before=$(metric edge_render_duration_seconds_count 'route="GET /products/{id}"')
bin/hey -n 200 -c 200 -o csv "$cold" > "$work/herd.csv"
after=$(metric edge_render_duration_seconds_count 'route="GET /products/{id}"')
collapsed=$(metric edge_cache_collapsed_total)

hits=$(hey_summary "$work/hits.csv" "$seconds")
bare=$(hey_summary "$work/bare.csv" "$seconds")
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  cores: $(nproc)  $(grep -o 'replaying [0-9]* bytes' "$work/bare.log") of gzip"
echo "edge, cache hits of / (hey -z ${seconds}s -c $concurrency): $hits"
echo "bare net/http, same bytes:                 $bare"
"$node" -p "'edge hits / bare: ' + (JSON.parse(process.argv[1]).rps / JSON.parse(process.argv[2]).rps).toFixed(2) + 'x'" "$hits" "$bare"
echo "herd: 200 concurrent requests on cold $cold: renders $("$node" -p "$after - $before"), collapsed $collapsed, $(hey_summary "$work/herd.csv")"

# 3. Two edges and the shared cache (edge.shared_cache_address, a real redis-server on a unix
# socket): sequential requests, one per key, for L1 hits, L2 hits (the key rendered by the
# other edge, this one's own cache cold) and misses; then a herd of 200 on a cold key spread
# over both edges, with and without the shared cache: renders performed.
stop_all
redis_dir=$work/redis && mkdir -p "$redis_dir"
redis-server --port 0 --unixsocket "$redis_dir/redis.sock" --save "" --appendonly no --dir "$redis_dir" > "$work/redis.log" 2>&1 & pids+=($!)
wait_for "redis-server" test -S "$redis_dir/redis.sock"
EDGE_B=127.0.0.1:18090 ADMIN_B=127.0.0.1:19110
# start_edges SHARED: the renderer and two edges over it, with the shared cache if SHARED=1.
start_edges() {
  local shared=()
  [ "$1" = 1 ] && shared=("SSR_EDGE_SHARED_CACHE_ADDRESS=unix://$redis_dir/redis.sock")
  start_renderer
  for pair in "$EDGE $ADMIN" "$EDGE_B $ADMIN_B"; do
    set -- $pair
    env "${shared[@]}" SSR_RENDERER_GRPC_ADDRESS="unix://$work/renderer.sock" SSR_EDGE_LISTEN=$1 SSR_EDGE_ADMIN_LISTEN=$2 \
      SSR_EDGE_LOG_LEVEL=error bin/edge >> "$work/edge.log" 2>&1 & pids+=($!)
    wait_for "edge ready" http_ok "http://$2/readyz"
  done
}
# timed EDGE FIRST LAST: GET /products/FIRST..LAST on EDGE one after another; JSON with
# p50/p99 in ms and the Cache-Status of the last.
timed() {
  "$node" -e '
    const [edge, first, last] = process.argv.slice(1);
    (async () => {
      const ms = []; let status = "";
      for (let id = Number(first); id <= Number(last); id++) {
        const t = performance.now();
        const r = await fetch(`http://${edge}/products/${id}`); await r.arrayBuffer();
        ms.push(performance.now() - t); status = r.headers.get("cache-status");
      }
      ms.sort((a, b) => a - b);
      const at = (q) => +ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(2);
      console.log(JSON.stringify({ requests: ms.length, p50_ms: at(0.5), p99_ms: at(0.99), last: status }));
    })();' "$@"
}
renders() { echo $(( $(metric_at "http://$ADMIN/metrics" edge_render_duration_seconds_count 'route="GET /products/{id}"') + $(metric_at "http://$ADMIN_B/metrics" edge_render_duration_seconds_count 'route="GET /products/{id}"') )); }

start_edges 1
timed "$EDGE" 1 300 > /dev/null # warm-up: JIT, connections
misses=$(timed "$EDGE" 301 500)
l2=$(timed "$EDGE_B" 301 500)
l1=$(timed "$EDGE" 301 500)
echo "shared cache, one request per key, 200 keys (/products/301..500), sequential:"
echo "  miss (render):                    $misses"
echo "  L2 hit (other edge's render):     $l2"
echo "  L1 hit (this edge's own cache):   $l1"
herd() { # herd KEY: 100 concurrent requests on each edge at once for one cold key; prints renders
  local before; before=$(renders)
  bin/hey -n 100 -c 100 "http://$EDGE/products/$1" > /dev/null & local a=$!
  bin/hey -n 100 -c 100 "http://$EDGE_B/products/$1" > /dev/null; wait $a
  sleep 1 # renders past the soft deadline are counted when they end
  echo $(( $(renders) - before ))
}
echo "herd, 200 concurrent requests over 2 edges on a cold key: renders with the shared cache $(herd 901)"
stop_all
start_edges 0
echo "                                                           renders without it $(herd 902)"
