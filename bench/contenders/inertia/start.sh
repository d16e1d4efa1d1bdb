#!/usr/bin/env bash
# Inertia's SSR server, as its docs run it in production: node on the SSR build (npm run build
# first). It listens on 127.0.0.1:${INERTIA_SSR_PORT:-13714}, one process (createServer's
# cluster option is off), which exec makes this script's PID. The Go front (inertia-front,
# built by `go build` here) posts its pages to it.
set -euo pipefail
cd "$(dirname "$0")"
# React and the other externalised dependencies pick their production builds from NODE_ENV.
export NODE_ENV=production
exec "${NODE:-node}" dist/ssr/ssr.js
