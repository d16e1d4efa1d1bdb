#!/usr/bin/env bash
# Starts the renderer, waits until every worker has loaded the bundle, then starts the demo
# shop (its catalog in bin/shop.db, created on first run).
# Ctrl-C (or either process exiting) stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

node=renderer/node_modules/.bin/node
ready_url="http://127.0.0.1:${RENDERER_HTTP_PORT:-9101}/readyz"

pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT
trap 'exit 130' INT TERM

"$node" $("$node" -p "require('./renderer/node-flags.json').join(' ')") renderer/src/main.js & pids+=($!)

for _ in $(seq 1 300); do
  if "$node" -e "fetch('$ready_url').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then
    break
  fi
  kill -0 "${pids[0]}" 2>/dev/null || { echo "renderer exited during start-up" >&2; exit 1; }
  sleep 0.2
done

bin/shop -db bin/shop.db & pids+=($!)
echo
echo "sidecar-ssr is serving the demo shop on http://localhost:8080  (Ctrl-C stops)"
echo
wait -n "${pids[@]}"
