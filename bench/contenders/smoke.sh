#!/usr/bin/env bash
# make test-loadtest: each framework contender (make bench's next-*, rr-*, inertia-*) started
# once from its production build, and each of its pages answered 200 with the demo's markup,
# server-rendered where the load tool looks for it, so that the contenders never rot between
# bench runs. [CONTENDERS="next rr inertia"]
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/stack.sh

# expect NAME PATH STATUS NEEDLE...: GET PATH answers STATUS and its body holds every NEEDLE.
expect() {
  local name=$1 path=$2 status=$3; shift 3
  "$node" -e '
    const [url, status, ...needles] = process.argv.slice(1);
    fetch(url).then(async (r) => {
      const body = await r.text();
      const missing = needles.filter((n) => !body.includes(n));
      if (r.status !== Number(status) || missing.length > 0) {
        console.error(`${url}: ${r.status} (want ${status}), missing ${JSON.stringify(missing)}\n${body.slice(0, 2000)}`);
        process.exit(1);
      }
    }, (err) => { console.error(`${url}: ${err.message}`); process.exit(1); });' "$url$path" "$status" "$@" ||
    { echo "smoke: $name failed; its logs:" >&2; tail -n 40 "$work"/*.log >&2; exit 1; }
  echo "smoke: $name $path: $status"
}

for name in ${CONTENDERS:-next rr inertia}; do
  start_framework "$name"
  expect "$name" / 200 '<div id="root"><' '<h1>All products</h1>' 'Sidecar Shop: all products</title>'
  expect "$name" '/?page=2' 200 '<div id="root"><' 'Sidecar Shop: all products (page 2)'
  expect "$name" /products/1 200 '<div id="root"><' 'Foldable Copper Headphones | Sidecar Shop</title>' 'data-product-id="1"'
  expect "$name" /products/999999 404
  case $name in
    # Streamed: the reviews' markup is in the response once its Suspense boundary resolves.
    next|rr) expect "$name" /products/1/reviews 200 '<div id="root"><' 'data-product-id="1"' 'data-testid="reviews"' 'Dennis' ;;
  esac
  stop_all
done
