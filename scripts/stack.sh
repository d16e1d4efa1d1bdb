# Shared by bench/ and loadtest/: start and stop the stack (production-like: built bundles,
# no debug), read metrics, summarize a hey CSV. Source it from the repository root; it sets
# $node, $work and an EXIT trap.

node=renderer/node_modules/.bin/node
work=$(mktemp -d)
pids=()
stop_all() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT

EDGE=127.0.0.1:18080
ADMIN=127.0.0.1:19100
# The admin token of the edges and shops started here (profiles, purges): no address is
# trusted without it.
export SSR_EDGE_ADMIN_TOKEN=bench-admin-token SSR_ADMIN_TOKEN=bench-admin-token

# wait_for DESCRIPTION COMMAND...: retry for up to 60 s.
wait_for() {
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  echo "bench: $what did not happen within 60 s" >&2; cat "$work"/*.log >&2; exit 1
}

fetch_text() { "$node" -e "fetch(process.argv[1]).then(r => r.text()).then(t => process.stdout.write(t))" "$1"; }

http_ok() { "$node" -e "fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" "$1"; }

# uncached_config: writes a config whose only route, the home page, is not cached and whose
# soft deadline is raised, so that every request is a real server render (fallbacks would
# flatter the figures); prints its path, for SSR_CONFIG.
uncached_config() {
  cat > "$work/uncached.yaml" <<'YAML'
edge:
  render_timeout: 2s
  routes:
    - {pattern: "GET /{$}", page: home}
YAML
  echo "$work/uncached.yaml"
}

# start_renderer: the renderer (2 threads unless THREADS is set) on $work/renderer.sock, with
# extra SSR_* settings from the environment and extra node flags from RENDERER_NODE_FLAGS
# (e.g. --cpu-prof); sets $renderer_pid and $RENDERER_HTTP.
start_renderer() {
  : > "$work/renderer.log"
  SSR_RENDERER_GRPC_ADDRESS="unix://$work/renderer.sock" SSR_RENDERER_HTTP_LISTEN=127.0.0.1:0 \
    SSR_RENDERER_THREADS=${THREADS:-2} "$node" $("$node" -p "require('./renderer/node-flags.json').join(' ')") ${RENDERER_NODE_FLAGS:-} renderer/src/main.js >> "$work/renderer.log" 2>&1 & renderer_pid=$!
  pids+=($renderer_pid)
  wait_for "renderer ready" grep -q '"msg":"ready"' "$work/renderer.log"
  RENDERER_HTTP=$(grep -o '"listener":"http","address":"[^"]*"' "$work/renderer.log" | head -1 | sed 's/.*"address":"\(.*\)"/\1/')
}

# The Go processes (the edge, the shop) run with one P, as deploy/k8s runs the edge
# (GOMAXPROCS from its CPU request, 1 core): EDGE_GOMAXPROCS to change.
export EDGE_GOMAXPROCS=${EDGE_GOMAXPROCS:-1}

# start_stack: start_renderer, then the edge (EDGE_BIN, bin/edge by default) on $EDGE (admin
# on $ADMIN); sets $edge_pid.
start_stack() {
  start_renderer
  GOMAXPROCS=$EDGE_GOMAXPROCS SSR_RENDERER_GRPC_ADDRESS="unix://$work/renderer.sock" SSR_EDGE_LISTEN=$EDGE SSR_EDGE_ADMIN_LISTEN=$ADMIN \
    SSR_EDGE_LOG_LEVEL=error "${EDGE_BIN:-bin/edge}" > "$work/edge.log" 2>&1 & edge_pid=$!
  pids+=($edge_pid)
  wait_for "edge ready" http_ok "http://$ADMIN/readyz"
}

# start_shop [FLAG...]: start_renderer, then the demo shop (SHOP_BIN, bin/shop by default: Go
# loaders over SQLite at $work/shop.db) on $EDGE (admin on $ADMIN), its soft deadline raised
# like uncached_config's, with the shop's FLAGs (e.g. -reviews-delay 0); sets $shop_pid.
start_shop() {
  start_renderer
  bin/shop -seed -db "$work/shop.db"
  GOMAXPROCS=$EDGE_GOMAXPROCS "${SHOP_BIN:-bin/shop}" -listen "$EDGE" -admin-listen "$ADMIN" -db "$work/shop.db" -renderer "unix://$work/renderer.sock" \
    -render-timeout 2s "$@" > "$work/shop.log" 2>&1 & shop_pid=$!
  pids+=($shop_pid)
  wait_for "shop ready" http_ok "http://$ADMIN/readyz"
}

# The frameworks a Go team would otherwise put beside its Go API (bench/contenders/: Next.js,
# React Router, an Inertia-style SSR server), rendering the demo's pages on $FRAMEWORK.
FRAMEWORK=127.0.0.1:18084
API=127.0.0.1:18087
INERTIA_SSR=127.0.0.1:13714

# start_api: the demo shop serving its catalog as JSON on $API (/api/...), the reviews after
# SSR_DEMO_REVIEWS_DELAY_MS (300), with one P as start_shop's; no renderer: none of its own
# pages is asked for. Sets $api_pid.
start_api() {
  bin/shop -seed -db "$work/shop.db"
  GOMAXPROCS=$EDGE_GOMAXPROCS bin/shop -listen "$API" -admin-listen 127.0.0.1:19187 -db "$work/shop.db" \
    -renderer "unix://$work/no-renderer.sock" -reviews-delay "${SSR_DEMO_REVIEWS_DELAY_MS:-300}ms" > "$work/api.log" 2>&1 & api_pid=$!
  pids+=($api_pid)
  wait_for "the shop's API" http_ok "http://$API/api/products/1"
}

# start_framework NAME: the contender NAME (next, rr, inertia), built by make bench, on
# $FRAMEWORK: next and rr over start_api, the Inertia-style one as its Go handlers (reading the
# shop's database themselves) posting to its SSR server. Sets $url and $processes (LABEL=PID,
# for bench/thread-cpu.mjs: "node" the framework's Node server, "api" the shop's Go API, "go"
# the Inertia-style Go handlers).
start_framework() {
  local dir=bench/contenders/$1 pid
  case $1 in
    next|rr)
      start_api
      NODE=$PWD/$node PORT=${FRAMEWORK##*:} API_URL=http://$API "$dir/start.sh" > "$work/$1.log" 2>&1 & pid=$!
      pids+=($pid)
      processes=("api=$api_pid" "node=$pid") ;;
    inertia)
      bin/shop -seed -db "$work/shop.db"
      NODE=$PWD/$node INERTIA_SSR_PORT=${INERTIA_SSR##*:} "$dir/start.sh" > "$work/inertia-ssr.log" 2>&1 & pid=$!
      pids+=($pid)
      GOMAXPROCS=$EDGE_GOMAXPROCS bin/inertia-front -listen "$FRAMEWORK" -db "$work/shop.db" -ssr "http://$INERTIA_SSR" > "$work/inertia.log" 2>&1 &
      pids+=($!)
      processes=("go=$!" "node=$pid") ;;
    *) echo "start_framework: no contender '$1' (have next, rr, inertia)" >&2; return 1 ;;
  esac
  url=http://$FRAMEWORK
  wait_for "$1 ready" http_ok "$url/products/1"
}

# metric NAME [LABEL-SUBSTRING...]: the sum of the edge's samples of NAME that match.
metric() { metric_at "http://$ADMIN/metrics" "$@"; }

# metric_at URL NAME [LABEL-SUBSTRING...]: the same, from any Prometheus endpoint.
metric_at() {
  "$node" -e "
    const [url, name, ...labels] = process.argv.slice(1);
    fetch(url).then(r => r.text()).then(t => {
      let sum = 0;
      for (const l of t.split('\n')) {
        if (!(l.startsWith(name + '{') || l.startsWith(name + ' '))) continue;
        if (labels.every(x => l.includes(x))) sum += Number(l.split(' ').at(-1));
      }
      console.log(sum);
    })" "$@"
}

# hey_summary CSV SECONDS: JSON with rps, p50/p90/p99/max in ms and status counts.
# (hey 0.1.5's text summary misprints its percentiles; its per-request CSV is exact.)
hey_summary() {
  "$node" -e "
    const rows = require('fs').readFileSync(process.argv[1], 'utf8').trim().split('\n').slice(1).map(l => l.split(','));
    const ms = rows.map(r => Number(r[0]) * 1000).sort((a, b) => a - b);
    const at = q => +ms[Math.min(ms.length - 1, Math.floor(q * ms.length))].toFixed(1);
    const status = {}; for (const r of rows) status[r[6]] = (status[r[6]] ?? 0) + 1;
    const seconds = Number(process.argv[2]);
    console.log(JSON.stringify({ requests: rows.length, rps: seconds ? Math.round(rows.length / seconds) : undefined,
      p50_ms: at(0.5), p90_ms: at(0.9), p99_ms: at(0.99), max_ms: +ms.at(-1).toFixed(1), status }));
  " "$1" "${2:-0}"
}
