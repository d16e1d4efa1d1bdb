#!/usr/bin/env bash
# make bench: the same demo page, the same machine, one run; contenders one after another
# under the same k6 arrival-rate settings:
#   ceiling         a worker's render (renderPage) in a loop in one thread (× cores = the physical limit)
#   node-baseline   fastify + Piscina rendering directly (same Node, packages, threads)
#   v8go            in-process V8 in Go, a pool of isolates (if bin/v8go-ssr is built)
#   stack-uncached  edge + gRPC + renderer, cache bypassed
#   stack-traced-uncached  the same with tracing on in both processes, every request traced,
#                   spans sent to bench/otlp-sink.mjs (not a default run)
#   stack-cached    edge + gRPC + renderer, cache on (hits)
# and the same listing with its props from the shop's SQLite database, each contender doing
# the data work its architecture would:
#   node-baseline-db  the fastify handler queries node:sqlite and hands the props to the worker
#   v8go-db           Go queries the database and passes the props into the isolate
#   shop-uncached     the demo shop: a Go loader queries and marshals, the props cross the hop
# and the page that streams, /products/1/reviews (its reviews in a Suspense boundary), its
# boundary resolving at once (SSR_DEMO_REVIEWS_DELAY_MS=0: what streaming costs in CPU), not
# default runs:
#   node-baseline-stream  fastify + Piscina: renderToPipeableStream in the worker, each flush
#                   moved to the main thread over a MessagePort and written to the reply
#   stack-stream    edge + gRPC (RenderStream) + renderer, cache bypassed
#   node-baseline-unstreamed, stack-unstreamed  the product page, /products/1, rendered whole
#                   (renderToString): what the same page costs without streaming
# and with the boundary resolving after 300 ms, for the time to first byte and for what a
# render that waits for data costs:
#   node-baseline-stream-300, stack-stream-300  while a render holds its worker until its
#                   last boundary (concurrentTasksPerWorker: 1), each request holds one for
#                   the 300 ms and the knee is near threads / 0.3 s; judged on
#                   p99 ≤ 150 ms + 300 ms
#   node-mainthread-stream-300  bare Node rendering on its main thread (server.mjs
#                   --main-thread: fastify + renderToPipeableStream, no worker pool, how React
#                   Router and Next.js serve): a render that waits holds no thread, so this is
#                   the knee a waiting render should not lower. (node-mainthread, -db,
#                   -stream and -unstreamed run too, on their pages.)
#   The -300 knees are stepped by SLOW_STEPS: finely from 2 req/s (the knee of a worker held
#   for 300 ms is a few req/s), then on STREAM_STEPS' grid from 100, so that a knee there
#   compares with the same page resolving at once on the same steps.
# and the shop's streamed page with its reviews a deferred value from Go, uncached:
#   shop-reviews    /products/1/reviews, the reviews arriving after the shop's -reviews-delay
#                   (300 ms), stepped and judged as the -300 runs
#   shop-reviews-0  the same with -reviews-delay 0: the page resolving at once (STREAM_STEPS,
#                   p99 ≤ 150 ms)
# and the same page partially prerendered, with the visitor's cart line beside the reviews
# (make bench-prerender; not default runs), its reviews at once as shop-reviews-0's:
#   shop-prerendered  /products/1/reviews with a visitor's cookies, no Authorization: the
#                   stored shell at once, the holes resumed per request (the page whole,
#                   uncached, is shop-reviews-0)
#   shop-product-cached  the shop's /products/1, cached: a hit served whole, the time to
#                   first byte the prerendered page's shell is held to
#   Both at 70 % of shop-prerendered's knee (product_steps), shop-reviews-0 at 70 % of its
#   own when shop-reviews does not run.
# and what a Go team would otherwise put beside its Go API (bench/contenders/, built by make
# bench; not default runs: make bench-frameworks), each on the same pages with the same
# components, its data from the shop's JSON API (the Inertia-style one's from its Go handlers):
#   shop-product    the shop's product page, /products/1, uncached: the stack's row for the
#                   frameworks' product pages
#   next-listing, next-product, next-reviews  Next.js (app router, next start): the listing,
#                   the product page, the reviews page streamed (its reviews a 300 ms fetch)
#   rr-listing, rr-product, rr-reviews  React Router in framework mode (react-router-serve)
#   inertia-listing, inertia-product  Go handlers posting the page object to an Inertia SSR
#                   server (no streaming: no reviews page)
#   The listings run at the shop-uncached group's fixed rate, the product pages at
#   shop-product's, the reviews pages stepped and judged as shop-reviews and at its rate; the
#   knees of the listings are stepped by FRAMEWORK_STEPS (25, 50, 75, then STEPS), of the
#   product pages by PRODUCT_STEPS (25, 50, 75, then STREAM_STEPS' grid to 2,000).
# Two modes. Identity: no Accept-Encoding (k6's default), pages go out uncompressed.
# NAME+compressed: every request sends a browser's `Accept-Encoding: gzip, deflate, br, zstd`
# and the contender compresses as its users would: node-baseline with @fastify/compress at
# its defaults (server.mjs --compress), the edge and the shop as they always do (live zstd >
# brotli 1 > gzip 1); v8go does not compress and has no compressed mode. CONTENDERS lists the
# runs; by default node-baseline-db, shop-uncached, node-baseline and stack-uncached in both
# modes, the others in identity.
# For each run: the knee (stepped arrival rates, every 25 req/s from 100, STEP_SECONDS 10
# each; SLO p99 ≤ 150 ms, ≥ 99 % rendered, ≤ 1 % dropped; k6 stops after the first failing
# step; SKIP_KNEE=1 skips it), KNEE_ROUNDS times (default 3), the runs taking turns within
# each round so that the machine's drifting noise falls on all of them, the table giving the
# median; then one fixed rate for all runs of a mode, so that the rows compare, for FIXED_DURATION
# (30s), with p50/p90/p99/p99.9/max, bytes per response and the CPU milliseconds per request
# of each process and thread group (bench/thread-cpu.mjs: the edge, Node's main thread, render
# workers, V8 helper threads, libuv threads), its total also as a ratio to bare Node's in the
# same mode on the same page. The fixed rate of a page and mode: FIXED_RATE if set, else 70 %
# of the median knee in that mode of the product on that page (shop-uncached for the
# props-from-Go rows, stack-uncached for the demo page, stack-stream for the streamed and
# unstreamed product page), rounded to 5 req/s (compressed without that knee: identity's),
# else 150 req/s (no such knee: SKIP_KNEE, not among the runs, or 0). The 300 ms boundary's
# group: SLOW_FIXED_RATE if set, else 70 % of stack-stream-300's median knee rounded to 1
# req/s, else 70 % of threads / 0.3 s; the shop's reviews group (shop-reviews, shop-reviews-0)
# likewise from shop-reviews's knee. The streaming runs also report the time to first byte
# (k6's http_req_waiting, p50/p99), and the stack's and the shop's the shell's time at low load (the median
# of the edge's Server-Timing shell;dur over 21 requests one at a time, before the fixed
# rate); their edge sends no 103 Early Hints, which k6 would count as the first byte.
# About 60 min with the defaults on 2 cores (a knee run ~1-2.5 min, a fixed run ~50 s);
# about 27 with KNEE_ROUNDS=1.
# Last, unless SKIP_ISLANDS is set, what a Go template's islands cost (bench/islands.sh).
# Writes bench/results/<timestamp>/: table.md, latency.png, and every k6 summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
out=bench/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
threads=${THREADS:-$(($(nproc) + 1))} # the renderer's own default: cores + 1
steps=${STEPS:-$(seq -s, 100 25 800)}
cached_steps=${CACHED_STEPS:-500,1000,1500,2000,2500,3000,4000}
stream_steps=${STREAM_STEPS:-$(seq -s, 100 50 2000)}
slow_reviews_ms=300 # the -300 runs: the reviews arrive after it
slow_steps=${SLOW_STEPS:-2,4,6,8,10,15,20,30,40,50,75,$stream_steps}
framework_steps=${FRAMEWORK_STEPS:-25,50,75,$steps}
# The product page is small (17 KB): its knees pass 800 req/s.
product_steps=${PRODUCT_STEPS:-25,50,75,$stream_steps}
step_seconds=${STEP_SECONDS:-10}
knee_rounds=${KNEE_ROUNDS:-3}
fixed_duration=${FIXED_DURATION:-30s}
default_fixed_rate=150 # without a knee of stack-uncached: about 70 % of its knee on 2 cores
# Without a knee of stack-stream-300: 70 % of what the workers allow when each request holds
# one for the boundary's wait.
default_slow_fixed_rate=$((700 * threads / slow_reviews_ms))
browser_accept_encoding='gzip, deflate, br, zstd' # loadtest/lib/common.js, ENCODING=browser
# The load tool's, for hey's warm-up: a framework may stream nothing to what it takes for a bot.
browser_user_agent=$(sed -n "s/^export const BROWSER_USER_AGENT = '\(.*\)';$/\1/p" loadtest/lib/common.js)
runs=(${CONTENDERS:-node-baseline-db node-baseline-db+compressed v8go-db shop-uncached shop-uncached+compressed node-baseline node-baseline+compressed v8go stack-uncached stack-uncached+compressed stack-cached})
bin/shop -seed -db "$work/shop.db" # the catalog the -db contenders and the shop read

# start_contender NAME COMPRESS: starts contender NAME (without its mode); COMPRESS is 1 in
# compressed mode.
start_contender() {
  case $1 in
    node-baseline*|node-mainthread*)
      args=(--threads "$threads"); case $1 in node-mainthread*) args=(--main-thread) ;; esac
      case $1 in *-db) args+=(--db "$work/shop.db") ;; esac
      [ "$2" = 1 ] && args+=(--compress)
      "$node" ${BASELINE_NODE_FLAGS:-} bench/node-baseline/server.mjs --port 18083 "${args[@]}" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18083 processes=("node=$!") ;;
    v8go|v8go-db)
      db=(); [ "$1" = v8go-db ] && db=(-db "$work/shop.db")
      bin/v8go-ssr -bundle app/dist/v8/server.js -addr 127.0.0.1:18082 -isolates "$threads" "${db[@]}" > "$work/$1.log" 2>&1 & pids+=($!)
      url=http://127.0.0.1:18082 processes=("go=$!") ;;
    next-*|rr-*|inertia-*) start_framework "${1%%-*}" ;;
    shop-*)
      # The shop's reviews come from its own Go loader, not from the renderer's environment.
      THREADS=$threads start_shop -reviews-delay "${SSR_DEMO_REVIEWS_DELAY_MS}ms"
      url=http://$EDGE processes=("edge=$shop_pid" "node=$renderer_pid") ;;
    stack-traced-uncached)
      "$node" bench/otlp-sink.mjs --port 14317 > "$work/otlp-sink.log" 2>&1 & pids+=($!)
      SSR_EDGE_OTLP_ENDPOINT=http://127.0.0.1:14317 SSR_RENDERER_OTLP_ENDPOINT=http://127.0.0.1:14317 THREADS=$threads start_stack
      url=http://$EDGE processes=("edge=$edge_pid" "node=$renderer_pid") ;;
    stack-*)
      THREADS=$threads start_stack
      url=http://$EDGE processes=("edge=$edge_pid" "node=$renderer_pid") ;;
  esac
  wait_for "$1 ready" http_ok "$url/"
}

# worker_starts: the renderer's CPU seconds spent starting workers so far, for a
# run of this stack; empty for the others.
worker_starts() {
  case $r in stack-*|shop-*) metric_at "http://$RENDERER_HTTP/metrics" renderer_worker_start_cpu_seconds_sum ;; esac
}

k6() {
  K6_NO_USAGE_REPORT=true bin/k6 run --quiet "$@" > /dev/null 2>&1 || true # thresholds may fail: the figures are the point
}

# start RUN: starts the run's contender (RUN is NAME or NAME+compressed), warmed up (JIT
# everywhere) on the run's page with the run's headers, and sets its k6 arguments, $page_path,
# $auth and $accept (the run's headers, for hey and curl); fails (1) when RUN cannot run here.
start() {
  local name=${1%+compressed} compress=0
  case $1 in
    *+compressed) compress=1 ;;
    *+*) echo "$1: unknown mode (want NAME or NAME+compressed)" >&2; return 1 ;;
  esac
  case $name in
    v8go*) [ -x bin/v8go-ssr ] || return 1
      if [ "$compress" = 1 ]; then echo "$1: v8go does not compress: no compressed mode" >&2; return 1; fi ;;
  esac
  # The page; for the streaming runs the reviews' delay in the renderer's (or bare Node's)
  # workers, which other runs' pages do not read, and no 103 Early Hints, which k6 would time
  # as the first byte.
  page_path=/ knee_steps=$steps slo=150 reviews_delay=300 early_hints=true warm_clients=8
  case $name in
    *-stream|*-stream-300|*-unstreamed)
      if [ "$compress" = 1 ]; then echo "$1: @fastify/compress would hold the flushes back: no compressed mode" >&2; return 1; fi
      page_path=/products/1 knee_steps=$stream_steps early_hints=false
      case $name in
        *-stream) page_path+=/reviews reviews_delay=0 ;;
        # Warmed by fewer clients than workers: a queue of 300 ms renders left behind would
        # make the first step's requests wait past the soft deadline (the stack's first
        # round on 2026-11-26 failed its 2 req/s step so).
        *-stream-300) page_path+=/reviews reviews_delay=$slow_reviews_ms knee_steps=$slow_steps slo=$((150 + slow_reviews_ms)) warm_clients=$((threads - 1)) ;;
      esac ;;
    *-listing) knee_steps=$framework_steps ;;
    *-product) page_path=/products/1 knee_steps=$product_steps ;;
    shop-prerendered) page_path=/products/1/reviews reviews_delay=0 knee_steps=$product_steps early_hints=false ;;
    shop-product-cached) page_path=/products/1 knee_steps=$cached_steps early_hints=false ;;
    shop-reviews|shop-reviews-0|*-reviews)
      if [ "$compress" = 1 ]; then echo "$1: identity only, as the other streaming runs" >&2; return 1; fi
      page_path=/products/1/reviews early_hints=false
      case $name in
        shop-reviews-0) reviews_delay=0 knee_steps=$stream_steps ;;
        *) reviews_delay=$slow_reviews_ms knee_steps=$slow_steps slo=$((150 + slow_reviews_ms)) warm_clients=$((threads - 1)) ;;
      esac ;;
  esac
  SSR_DEMO_REVIEWS_DELAY_MS=$reviews_delay SSR_EDGE_EARLY_HINTS=$early_hints start_contender "$name" "$compress"
  env_args=(-e "BASE_URL=$url" -e "PAGE_PATH=$page_path" -e "SLO_P99_MS=$slo")
  if [ "$name" = stack-cached ]; then env_args+=(-e USE_CACHE=1); knee_steps=$cached_steps; fi
  # A visitor with a cart: its line is this page's hole (shop/cart.go).
  visitor=(); case $name in shop-prerendered|shop-product-cached)
    env_args+=(-e USE_CACHE=1 -e "COOKIE=user=bench; cart_1=2") visitor=(-H "Cookie: user=bench; cart_1=2") ;; esac
  auth=(); case $name in *-uncached|stack-stream*|stack-unstreamed|shop-reviews*|shop-product) auth=(-H "Authorization: Bearer bench") ;; esac
  accept=(); hey_accept=(-disable-compression) # hey would ask for gzip
  if [ "$compress" = 1 ]; then
    env_args+=(-e ENCODING=browser)
    accept=(-H "Accept-Encoding: $browser_accept_encoding") hey_accept=("${accept[@]}")
  fi
  bin/hey -z 5s -c "$warm_clients" -H "User-Agent: $browser_user_agent" "${auth[@]}" "${visitor[@]}" "${hey_accept[@]}" "$url$page_path" > /dev/null
}

# shell_ms URL: the median of the edge's Server-Timing shell;dur over 21 requests of URL, one
# at a time (a fallback has none), as JSON.
shell_ms() {
  for _ in $(seq 21); do
    curl -s -o /dev/null -D - "${auth[@]}" "$1" | grep -o 'shell;dur=[0-9.]*' | cut -d= -f2 || true
  done | "$node" -e '
    const ms = require("node:fs").readFileSync(0, "utf8").split("\n").filter((l) => l !== "").map(Number).sort((a, b) => a - b);
    console.log(JSON.stringify({ requests: ms.length, p50_ms: ms[Math.floor(ms.length / 2)] }));'
}

"$node" bench/render-loop.mjs --seconds 10 > "$out/ceiling.json"
echo "ceiling: $(cat "$out/ceiling.json")"
# The shop's loader alone (its query and the props' JSON), for the table's "Go process less
# its loader": the median ns/op of 5 runs of each, in ms.
case " ${runs[*]} " in *" shop-uncached"*)
  (cd shop && go test -run '^$' -bench ListingProps -benchtime 200x -count 5 ./catalog/) | "$node" -e '
    const lines = require("fs").readFileSync(0, "utf8").split("\n");
    const median = (name) => {
      const xs = lines.filter((l) => l.startsWith(`BenchmarkListingProps/${name}`)).map((l) => Number(/ (\d+(?:\.\d+)?) ns\/op/.exec(l)[1])).sort((a, b) => a - b);
      return +(xs[(xs.length - 1) >> 1] / 1e6).toFixed(3);
    };
    console.log(JSON.stringify({ query_ms: median("query"), marshal_ms: median("marshal") }));' > "$out/loader.json"
  echo "the shop's loader: $(cat "$out/loader.json")" ;;
esac
[ -x bin/v8go-ssr ] || echo "v8go: bin/v8go-ssr is not built (make bin/v8go-ssr): skipped"
if [ -z "${SKIP_KNEE:-}" ]; then
  for round in $(seq "$knee_rounds"); do
    for r in "${runs[@]}"; do
      start "$r" || continue
      echo "$r: knee, round $round of $knee_rounds (steps $knee_steps, ${step_seconds}s each, up to the first failing one)..."
      mkdir -p "$out/$r-knee-$round"
      k6 "${env_args[@]}" -e "STEPS=$knee_steps" -e "STEP_SECONDS=$step_seconds" -e STOP_AT_FAIL=1 \
        -e "KNEE_FILE=$out/$r-knee-$round.json" -e "RESULTS_DIR=$out/$r-knee-$round" loadtest/02-knee.js
      echo "$r: knee $("$node" -p "require('./$out/$r-knee-$round.json').rps" 2>/dev/null || echo '(none)') req/s"
      stop_all
    done
  done
fi

# One fixed rate per page and mode for every run in it, so that the rows compare: 70 % of the
# product's knee on that page in that mode (a compressed knee is lower: the load generator
# decompresses on the same cores); fixed-rate.json says where each came from.
"$node" -e '
  const fs = require("node:fs");
  const [dir, given, fallback, slowGiven, slowFallback] = process.argv.slice(1);
  const kneeOf = (run) => {
    const knees = fs.readdirSync(dir).filter((f) => f.startsWith(`${run}-knee-`) && /-knee-\d+\.json$/.test(f))
      .map((f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8")).rps).sort((a, b) => a - b);
    const n = knees.length;
    return n === 0 ? 0 : n % 2 ? knees[(n - 1) / 2] : (knees[n / 2 - 1] + knees[n / 2]) / 2;
  };
  const rateFor = (run, round = 5, set = given, otherwise = fallback) => {
    const knee = kneeOf(run);
    return set ? { rate: Number(set), source: "FIXED_RATE" }
      : knee > 0 ? { rate: Math.max(round, Math.round((0.7 * knee) / round) * round), source: "knee", run, knee, round }
      : { rate: Number(otherwise), source: "default", run };
  };
  const rates = {};
  for (const [page, product] of [["page", "stack-uncached"], ["db", "shop-uncached"], ["product", "shop-product"]]) {
    rates[page] = rateFor(product);
    const compressed = `${product}+compressed`;
    rates[`${page}+compressed`] = kneeOf(compressed) > 0 || given ? rateFor(compressed) : rates[page];
  }
  rates.stream = rateFor("stack-stream");
  // Knees of a few req/s: rounded to 1.
  rates["stream-300"] = rateFor("stack-stream-300", 1, slowGiven, slowFallback);
  // Both shop reviews runs at the rate of the slow one, so that their tails compare; without
  // it, at 70 % of the page at once (beside the prerendered page: each at 70 % of its own).
  rates.deferred = kneeOf("shop-reviews") > 0 || slowGiven || !(kneeOf("shop-reviews-0") > 0)
    ? rateFor("shop-reviews", 1, slowGiven, slowFallback) : rateFor("shop-reviews-0");
  rates.prerender = rateFor("shop-prerendered");
  fs.writeFileSync(`${dir}/fixed-rate.json`, JSON.stringify(rates));
' "$out" "${FIXED_RATE:-}" "$default_fixed_rate" "${SLOW_FIXED_RATE:-}" "$default_slow_fixed_rate"
for r in "${runs[@]}"; do
  start "$r" || continue
  group=page; case ${r%+compressed} in *-db|shop-uncached|*-listing) group=db ;; *-product) group=product ;; *-stream|*-unstreamed) group=stream ;; *-stream-300) group=stream-300 ;; shop-reviews*|*-reviews) group=deferred ;; shop-prerendered|shop-product-cached) group=prerender ;; esac
  case $r in *+compressed) group+=+compressed ;; esac
  fixed_rate=$("$node" -p "require('./$out/fixed-rate.json')['$group'].rate")
  echo "$r: fixed rate $fixed_rate req/s for $fixed_duration..."
  mkdir -p "$out/$r-fixed"
  # What the run's client gets: the page's Content-Encoding and its size on the wire.
  curl -s -o /dev/null "${auth[@]}" "${visitor[@]}" "${accept[@]}" "$url$page_path" \
    -w '{"content_encoding": "%header{content-encoding}", "body_bytes": %{size_download}}' > "$out/$r-encoding.json"
  case $r in stack-stream|stack-stream-300|shop-reviews|shop-reviews-0) shell_ms "$url$page_path" > "$out/$r-shell.json" ;; esac
  starts_before=$(worker_starts)
  "$node" bench/thread-cpu.mjs snapshot "${processes[@]}" > "$work/cpu-before.json"
  k6 "${env_args[@]}" -e "RATE=$fixed_rate" -e "DURATION=$fixed_duration" -e "RESULTS_DIR=$out/$r-fixed" --out "csv=$out/$r-fixed.csv" loadtest/03-load.js
  "$node" bench/thread-cpu.mjs snapshot "${processes[@]}" > "$work/cpu-after.json"
  requests=$("$node" -p "require('./$out/$r-fixed/summary.json').requests")
  "$node" bench/thread-cpu.mjs diff "$work/cpu-before.json" "$work/cpu-after.json" "$requests" > "$out/$r-cpu.json"
  if [ -n "$starts_before" ]; then
    # What the workers' starts cost during the run, and what recycling costs a render at
    # max_renders: a worker's mean start (the renderer's whole life) over max_renders.
    "$node" --input-type=module -e "
      import { parseConfig } from './renderer/src/config.js';
      const [before, sum, count, requests] = process.argv.slice(1).map(Number);
      const startMs = (sum / count) * 1000, maxRenders = parseConfig('', { env: process.env }).maxRenders;
      console.log(JSON.stringify({ ms_per_request: +(((sum - before) * 1000) / requests).toFixed(3), start_ms: +startMs.toFixed(1),
        max_renders: maxRenders, at_max_renders_ms: maxRenders > 0 ? +(startMs / maxRenders).toFixed(4) : 0 }));" \
      "$starts_before" "$(worker_starts)" "$(metric_at "http://$RENDERER_HTTP/metrics" renderer_worker_start_cpu_seconds_count)" "$requests" > "$out/$r-starts.json"
  fi
  stop_all
done

"$node" bench/table.mjs "$out" "$threads" > "$out/table.md"
if [ -z "${SKIP_ISLANDS:-}" ]; then
  echo "islands: edge/e2e BenchmarkIslands..."
  { echo; bench/islands.sh "$out"; } >> "$out/table.md"
fi
cat "$out/table.md"
if [ -x bin/venv-bench/bin/python ]; then
  bin/venv-bench/bin/python bench/plot.py "$out" && echo "plot: $out/latency.png"
fi
