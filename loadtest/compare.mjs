// Prints two loadtest result folders side by side, with the change in each figure:
//   node loadtest/compare.mjs loadtest/results/load-A loadtest/results/load-B
import { readFileSync } from 'node:fs';

const [a, b] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: node loadtest/compare.mjs RESULTS_DIR_A RESULTS_DIR_B');
  process.exit(2);
}
const read = (dir) => JSON.parse(readFileSync(`${dir}/figures.json`, 'utf8'));
const [fa, fb] = [read(a), read(b)];
const keys = ['requests', 'rps', 'p50_ms', 'p90_ms', 'p95_ms', 'p99_ms', 'p999_ms', 'max_ms', 'failed_rate', 'server_errors',
  'ssr_rate', 'fallbacks', 'dropped_iterations', 'edge_cpu_s_per_1000', 'renderer_cpu_s_per_1000', 'renderer_gc_pause_p99_ms'];
const fmt = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v ?? 'n/a'));
console.log(`${'figure'.padEnd(26)}${a.split('/').at(-1).padStart(30)}${b.split('/').at(-1).padStart(30)}   change`);
for (const k of keys) {
  const [x, y] = [fa[k], fb[k]];
  const change = typeof x === 'number' && typeof y === 'number' && x !== 0 ? `${(((y - x) / x) * 100).toFixed(1)} %` : '';
  console.log(`${k.padEnd(26)}${fmt(x).padStart(30)}${fmt(y).padStart(30)}   ${change}`);
}
