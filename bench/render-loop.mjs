// How fast can one thread render the demo's home page? The ceiling any server built on
// these workers can reach, per core: a worker's whole render (renderPage: load(), the page,
// its head, the props' JSON), in a loop, with no transport and no pool.
//
//   node bench/render-loop.mjs [--bundle app/dist/server/server.js] [--seconds 10] [--page home --url /]
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { renderPage } from '../renderer/src/worker/render-page.js';

const { values: opts } = parseArgs({
  options: {
    bundle: { type: 'string', default: 'app/dist/server/server.js' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '300' },
    page: { type: 'string', default: 'home' },
    url: { type: 'string', default: '/' },
  },
});

const bundle = await import(pathToFileURL(resolve(opts.bundle)).href);
const task = { page: opts.page, url: opts.url, params: {}, variants: {} };

for (let i = 0; i < Number(opts.warmup); i++) await renderPage(bundle, task);

const durations = [];
const end = performance.now() + Number(opts.seconds) * 1000;
let bytes = 0;
while (performance.now() < end) {
  const t0 = performance.now();
  bytes = (await renderPage(bundle, task)).html.length;
  durations.push(performance.now() - t0);
}
durations.sort((a, b) => a - b);
const at = (q) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))];
const seconds = durations.reduce((a, b) => a + b, 0) / 1000;
console.log(JSON.stringify({
  node: process.version,
  page: opts.page,
  html_chars: bytes,
  renders: durations.length,
  ops_per_second: Math.round(durations.length / seconds),
  p50_ms: +at(0.5).toFixed(2),
  p99_ms: +at(0.99).toFixed(2),
  max_ms: +durations.at(-1).toFixed(2),
}));
