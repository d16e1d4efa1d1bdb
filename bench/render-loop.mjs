// How fast can one thread render the demo's home page? The ceiling any server built on
// these workers can reach, per core: renderToString of the same element in a loop.
//
//   node bench/render-loop.mjs [--bundle app/dist/server/server.js] [--seconds 10] [--page home --url /]
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    bundle: { type: 'string', default: 'app/dist/server/server.js' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '300' },
    page: { type: 'string', default: 'home' },
    url: { type: 'string', default: '/' },
  },
});

const app = await import(pathToFileURL(resolve(opts.bundle)).href);
const page = app.pages[opts.page];
if (!page) throw new Error(`no page ${opts.page} in ${opts.bundle}`);
const url = new URL(opts.url, 'http://x');
const query = Object.fromEntries(url.searchParams);
const { props } = page.load ? await page.load({ url: opts.url, params: {}, query, variants: {}, props: {} }) : { props: {} };
const element = () => app.createElement(page.component, props);

for (let i = 0; i < Number(opts.warmup); i++) app.renderToString(element());

const durations = [];
const end = performance.now() + Number(opts.seconds) * 1000;
let bytes = 0;
while (performance.now() < end) {
  const t0 = performance.now();
  bytes = app.renderToString(element()).length;
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
