#!/usr/bin/env bash
# The production server, as the framework's template starts it (npm start: react-router-serve),
# without npm in between so that this script's PID becomes the serving process's.
# Env: PORT (default 18085), API_URL (the shop, read by the loaders), NODE (default node).
set -euo pipefail
cd "$(dirname "$0")"
export PORT="${PORT:-18085}" HOST="${HOST:-127.0.0.1}" NODE_ENV=production
if [[ ! -f build/server/index.js ]]; then
  echo "start.sh: no build here: run npm ci && npm run build in $(pwd)" >&2
  exit 1
fi
exec "${NODE:-node}" node_modules/@react-router/serve/bin.cjs ./build/server/index.js
