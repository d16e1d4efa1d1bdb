#!/usr/bin/env bash
# Cache figures through the real edge, default (demo) config:
#  1. cache hits of / against a bare net/http handler writing the same bytes, same load;
#  2. thundering herd: 200 clients at once on one cold key, renders performed and p99.
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
