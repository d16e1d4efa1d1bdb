#!/usr/bin/env bash
# make loadtest SCENARIO=<name> [RATE=..] [DURATION=..] [PAGE_PATH=..]
#   pareto: [TARGET=stack|shop|next|rr|inertia] [CONNECTIONS=1,10,..] [STEP_SECONDS=8] [REVIEWS_DELAY_MS=200]
#   slow-clients: [SLOW_CLIENTS=50] [SLOW_MS=5000] [SETTLE_SECONDS=5]
#   hostile-mix: [SETTLE_SECONDS=5] (the demo shop with -csp, attackers from lib/hostile.mjs)
# Starts the stack (built bundles, production-like config, no debug), waits for readiness,
# runs one k6 scenario, stops the stack, and writes loadtest/results/<scenario>-<timestamp>/:
# summary.json and k6-summary.json (k6), report.html (k6's dashboard), figures.json and
# summary.md (this script: adds CPU per 1000 requests for edge and renderer, GC pauses).
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${SCENARIO:-smoke}
script=$(ls loadtest/[0-9][0-9]-"$scenario".js 2>/dev/null) ||
  { echo "loadtest: no scenario '$scenario'; have: $(ls loadtest/[0-9][0-9]-*.js | sed 's#.*/[0-9][0-9]-##; s#\.js##' | paste -sd' ')" >&2; exit 2; }
source scripts/stack.sh
dir=loadtest/results/$scenario-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$dir"

case $scenario in
  soak-leak)
    # The leaky page lives in the test fixture bundle, routed next to the demo's pages.
    export SSR_RENDERER_BUNDLE=renderer/test/fixtures/dist/server.js SSR_CONFIG="$work/ssr.yaml"
    cat > "$SSR_CONFIG" <<'YAML'
edge:
  routes:
    - {pattern: "GET /{$}", page: home, cache: {ttl: 60s, stale_while_revalidate: 60s, stale_if_error: 10m, query: [page]}}
    - {pattern: "GET /products/{id}", page: product, cache: {ttl: 5m, stale_while_revalidate: 5m, stale_if_error: 1h, query: []}}
    - {pattern: "GET /leaks", page: leaks}
YAML
    ;;
  pareto)
    target=${TARGET:-stack}
    export SSR_DEMO_REVIEWS_DELAY_MS=${REVIEWS_DELAY_MS:-200}
    case $target in
      stack) ;;
      # The shop's streamed reviews page, its reviews a deferred value from its Go loader after
      # the delay, uncached (the load tool sends Authorization); the same page of the
      # frameworks a Go team would otherwise run (bench/contenders/, make loadtest builds
      # them), its reviews fetched from the shop's API after the delay. The Inertia-style one
      # has no streaming and no wait: its product page.
      shop|next|rr) PAGE_PATH=${PAGE_PATH:-/products/1/reviews} ;;
      inertia) PAGE_PATH=${PAGE_PATH:-/products/1} ;;
      *) echo "loadtest: pareto has no target '$target' (stack, shop, next, rr, inertia)" >&2; exit 2 ;;
    esac
    if [ "$target" = stack ]; then
      # The fixture bundle's pareto page (load() awaits ?ms=, then renders 10 items) and the demo's streamed
      # reviews page (in the fixture bundle too), neither cached: every request renders. The soft
      # deadline is past the health bound (500 ms), so that a slow render is timed as what it
      # took rather than cut short into a fallback.
      export SSR_RENDERER_BUNDLE=renderer/test/fixtures/dist/server.js SSR_CONFIG="$work/ssr.yaml"
      cat > "$SSR_CONFIG" <<'YAML'
edge:
  render_timeout: 1s
  # The page's own load() waits in the renderer, and the edge cannot tell that wait from
  # rendering: its slot is held for the whole call, so the cap must cover the clients.
  render_slots: 1024
  routes:
    - {pattern: "GET /pareto", page: pareto}
    - {pattern: "GET /products/{id}/reviews", page: product-reviews, stream: true}
YAML
    fi
    ;;
  slow-clients)
    # The slow pages' reviews arrive after SLOW_MS; their responses are held open for the whole
    # wait (stream_timeout past it) and their renders may run to the end (hard_timeout). The
    # ordinary pages keep the default soft deadline, past which they fall back: what is measured.
    slow_ms=${SLOW_MS:-5000}
    export SSR_DEMO_REVIEWS_DELAY_MS=$slow_ms SSR_CONFIG="$work/ssr.yaml"
    cat > "$SSR_CONFIG" <<YAML
edge:
  stream_timeout: $((slow_ms + 1000))ms
  hard_timeout: $((slow_ms + 2000))ms
YAML
    ;;
esac
# The processes whose CPU the report gives (Go, Node), by PID.
cpu() { "$node" bench/thread-cpu.mjs snapshot "p=$1" | "$node" -p 'JSON.parse(require("node:fs").readFileSync(0, "utf8")).p.total / 1000'; }
cpu_labels='["edge", "renderer"]'
case ${target:-stack} in
  stack)
    if [ "$scenario" = hostile-mix ]; then
      start_shop -csp -render-timeout 150ms
      edge_pid=$shop_pid
    else
      start_stack
    fi
    base_url=http://$EDGE go_pid=$edge_pid node_pid=$renderer_pid ;;
  shop)
    start_shop -reviews-delay "${SSR_DEMO_REVIEWS_DELAY_MS}ms"
    base_url=http://$EDGE go_pid=$shop_pid node_pid=$renderer_pid cpu_labels='["the shop", "renderer"]' ;;
  *)
    start_framework "$target"
    base_url=$url go_pid=${processes[0]#*=} node_pid=${processes[1]#*=}
    cpu_labels="[\"$([ "$target" = inertia ] && echo 'Go handlers' || echo "the shop's JSON API")\", \"$target's Node server\"]" ;;
esac
edge_cpu_before=$(cpu "$go_pid")
renderer_cpu_before=$(cpu "$node_pid")

k6_env=(-e "BASE_URL=$base_url" -e "RESULTS_DIR=$dir")
[ -n "${RATE:-}" ] && k6_env+=(-e "RATE=$RATE")
[ -n "${DURATION:-}" ] && k6_env+=(-e "DURATION=$DURATION")
[ -n "${PAGE_PATH:-}" ] && k6_env+=(-e "PAGE_PATH=$PAGE_PATH")
for v in CONNECTIONS STEP_SECONDS SLOW_CLIENTS SLOW_MS SETTLE_SECONDS; do
  if [ -n "${!v:-}" ]; then k6_env+=(-e "$v=${!v}"); fi
done
K6_WEB_DASHBOARD=true K6_WEB_DASHBOARD_PORT=-1 K6_WEB_DASHBOARD_EXPORT="$dir/report.html" K6_NO_USAGE_REPORT=true \
  bin/k6 run --quiet "${k6_env[@]}" "$script" > "$dir/k6.log" 2>&1 & k6_pid=$!

extra='{}'
if [ "$scenario" = hostile-mix ]; then
  # The attackers start SETTLE_SECONDS before the second phase and last to its end; the shop's
  # resident memory is sampled each second meanwhile (its pod limit: 384 Mi).
  phase_s=${DURATION:-30s}; phase_s=${phase_s%s}
  settle_s=${SETTLE_SECONDS:-5}
  ( sleep $((5 + phase_s)); "$node" loadtest/lib/hostile.mjs "$EDGE" "$ADMIN" $((settle_s + phase_s)) > "$dir/hostile.json" ) & attackers_pid=$!
  ( while kill -0 "$k6_pid" 2>/dev/null; do ps -o rss= -p "$edge_pid" >> "$dir/rss-kb.txt" || true; sleep 1; done ) & sampler_pid=$!
fi
if [ "$scenario" = chaos ]; then
  sleep 10
  kill -9 "$renderer_pid"
  killed_at=$(date +%s%3N)
  sleep 5
  start_renderer
  node_pid=$renderer_pid
  restarted_at=$(date +%s%3N)
  extra="{\"renderer_killed_epoch_ms\": $killed_at, \"renderer_restarted_epoch_ms\": $restarted_at}"
  renderer_cpu_before=0 # a new process: its counter starts at zero
fi
k6_status=0
wait "$k6_pid" || k6_status=$?
cat "$dir/k6.log"
if [ "$scenario" = hostile-mix ]; then
  wait "$attackers_pid" "$sampler_pid"
  echo "the shop's refusals and take-backs:"
  fetch_text "http://$ADMIN/metrics" | grep -E '^edge_(connections_closed_total|encoders_refused_total|encoders_reclaimed_total|cache_evictions_total)' || echo "  (none: a shop before issue 47)"
  extra="{\"attackers\": $(cat "$dir/hostile.json"), \"max_rss_mb\": $(sort -n "$dir/rss-kb.txt" | tail -1 | awk '{printf "%.1f", $1/1024}')}"
  echo "attackers: $(cat "$dir/hostile.json")"
  echo "the shop's largest resident memory: $(sort -n "$dir/rss-kb.txt" | tail -1 | awk '{printf "%.1f MB", $1/1024}') (its pod limit: 384 Mi)"
fi

edge_cpu=$("$node" -p "$(cpu "$go_pid") - $edge_cpu_before")
renderer_cpu=$("$node" -p "$(cpu "$node_pid") - $renderer_cpu_before")
renderer_metrics=$([ -n "${RENDERER_HTTP:-}" ] && fetch_text "http://$RENDERER_HTTP/metrics" || true)
extra=$("$node" -p 'JSON.stringify({ ...JSON.parse(process.argv[1]), cpu_of: JSON.parse(process.argv[2]), target: process.argv[3] })' "$extra" "$cpu_labels" "${target:-stack}")
if [ "$scenario" = cache-mix ]; then
  # What the cache had for the run's page requests (edge_cache_requests_total, all routes).
  fetch_text "http://$ADMIN/metrics" | "$node" -e "
    const counts = {};
    for (const line of require('fs').readFileSync(0, 'utf8').split('\n')) {
      const m = /^edge_cache_requests_total\{.*result=\"([^\"]+)\".*\} (\S+)$/.exec(line);
      if (m) counts[m[1]] = (counts[m[1]] ?? 0) + Number(m[2]);
      if (line.startsWith('edge_cache_evictions_total ')) counts.evictions = Number(line.split(' ')[1]);
    }
    const evictions = counts.evictions;
    delete counts.evictions;
    const all = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log('cache: ' + JSON.stringify(counts) + ', hit ratio ' + ((counts.hit ?? 0) / all).toFixed(4) + ', evictions ' + evictions);
  "
fi
stop_all

"$node" loadtest/report.mjs "$dir" "$scenario" "$edge_cpu" "$renderer_cpu" "$extra" <<< "$renderer_metrics"
echo "loadtest: results in $dir (k6 exit $k6_status)"
exit "$k6_status"
