#!/usr/bin/env bash
# The fallbacks of a burst right after start: the renderer and the demo shop started afresh,
# then PREWARM (a path, if set) at 2 clients for PREWARM_N (300) requests, then 50 clients at once for
# 3,000 requests on the uncached reviews page (Authorization), hey closed loop; prints how
# many pages fell back. SSR_RENDERER_* settings reach the renderer (e.g.
# SSR_RENDERER_WARMUP_ROUNDS=30).
#   bench/cold-burst.sh           PREWARM=/products/1 bench/cold-burst.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
start_renderer
bin/shop -seed -db "$work/shop.db" > /dev/null 2>&1
GOMAXPROCS=$EDGE_GOMAXPROCS bin/shop -listen "$EDGE" -admin-listen "$ADMIN" -db "$work/shop.db" -renderer "unix://$work/renderer.sock" > "$work/shop.log" 2>&1 & pids+=($!)
wait_for "shop ready" http_ok "http://$ADMIN/readyz"
if [ -n "${PREWARM:-}" ]; then bin/hey -c 2 -n ${PREWARM_N:-300} -H "Authorization: Bearer x" "http://$EDGE$PREWARM" > /dev/null; fi
bin/hey -c 50 -n 3000 -H "Authorization: Bearer x" "http://$EDGE/products/1/reviews" > /dev/null
echo "prewarm=${PREWARM:-none}: $(grep -c 'client-side-render fallback' "$work/shop.log") of 3000 pages fell back"
