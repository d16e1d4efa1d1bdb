#!/usr/bin/env bash
# The production server (after `npm run build`): `next start`, in this process (exec), so
# that this script's PID is the one that serves. Env: PORT, API_URL; NODE (default: node).
set -euo pipefail
cd "$(dirname "$0")"
: "${PORT:?PORT is required}"
: "${API_URL:?API_URL is required}"
export API_URL NODE_ENV=production NEXT_TELEMETRY_DISABLED=1
exec "${NODE:-node}" node_modules/next/dist/bin/next start -p "$PORT" -H 127.0.0.1
