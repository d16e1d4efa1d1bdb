#!/usr/bin/env bash
# make bench-islands (and the end of make bench): what a Go template's islands cost, from
# edge/e2e's BenchmarkIslands against the real renderer: the template alone, its 10 islands
# all cached, rendered in one call, and the same 10 components as one page; the median of
# ISLANDS_COUNT (5) runs of ISLANDS_BENCHTIME (400x) each, and the ratios (islands-table.mjs);
# then BenchmarkOneIsland: a template's throughput with one uncached island under 50 clients.
#   bench/islands.sh [DIR]   writes DIR/islands.txt (the raw output) and prints the table
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
dir=${1:-$(mktemp -d)}
(cd edge && go test ./e2e -run '^$' -bench Islands -benchtime "${ISLANDS_BENCHTIME:-400x}" -count "${ISLANDS_COUNT:-5}") > "$dir/islands.txt"
# And one per-visitor island under 50 clients at once (BenchmarkOneIsland), against the
# template alone: ONE_ISLAND_BENCHTIME requests (4000x), ISLANDS_COUNT runs.
(cd edge && go test ./e2e -run '^$' -bench OneIsland -benchtime "${ONE_ISLAND_BENCHTIME:-4000x}" -count "${ISLANDS_COUNT:-5}") >> "$dir/islands.txt"
"$node" bench/islands-table.mjs < "$dir/islands.txt"
