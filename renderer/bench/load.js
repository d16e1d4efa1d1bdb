#!/usr/bin/env node
// Sustained open-model load on the renderer alone (no edge), for the issue 5
// note: a fixed arrival rate mixing normal pages with the leaky page, recycling
// on or off. Starts src/main.js as a child process on the fixture bundle.
//
//   node bench/load.js --duration 120 --share 0.7 --leak 0.05 --recycle on
//
// First a short closed-loop burst measures capacity (renders/s of the same
// mix), then the run offers `share` x that rate (or --rate N, to compare two
// runs at one rate). Prints one JSON summary.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderClient } from '../test/helpers.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '120' },
    share: { type: 'string', default: '0.7' },
    leak: { type: 'string', default: '0.05' },
    recycle: { type: 'string', default: 'on' },
    threads: { type: 'string', default: '2' },
    rate: { type: 'string' },
    'capacity-seconds': { type: 'string', default: '8' },
  },
});
const durationS = Number(args.duration);
const leakShare = Number(args.leak);
const recycle = args.recycle === 'on';

const dir = mkdtempSync(join(tmpdir(), 'ssr-bench-'));
const env = {
  PATH: process.env.PATH ?? '',
  SSR_RENDERER_GRPC_ADDRESS: `unix://${join(dir, 'r.sock')}`,
  SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
  SSR_RENDERER_BUNDLE: fileURLToPath(new URL('../test/fixtures/dist/server.js', import.meta.url)),
  SSR_RENDERER_THREADS: args.threads,
  SSR_RENDERER_LOG_LEVEL: 'info',
  SSR_RENDERER_MAX_RENDERS: recycle ? '5000' : '0',
  SSR_RENDERER_RECYCLE_HEAP_RATIO: recycle ? '0.8' : '0',
  SSR_RENDERER_MAX_EXTERNAL_MB: recycle ? '256' : '0',
};
const child = spawn(process.execPath, [fileURLToPath(new URL('../src/main.js', import.meta.url))], { env, stdio: ['ignore', 'pipe', 'inherit'] });
/** @type {Array<Record<string, any>>} */
const logs = [];
const ready = new Promise((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`renderer exited ${code}`)));
  createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) }).on('line', (line) => {
    const entry = JSON.parse(line);
    logs.push(entry);
    if (entry.msg === 'ready') resolve(undefined);
  });
});
await ready;
const httpAddress = logs.find((l) => l.msg === 'listening' && l.listener === 'http')?.address;
const client = renderClient(env.SSR_RENDERER_GRPC_ADDRESS);

/** @returns {{page: string, url: string, params: Record<string, string>}} */
function normalRequest() {
  if (Math.random() < 0.5) return { page: 'home', url: '/', params: {} };
  const id = String(1 + Math.floor(Math.random() * 1000));
  return { page: 'product', url: `/products/${id}`, params: { id } };
}

/**
 * @param {{page: string, url: string, params: Record<string, string>}} req
 * @returns {Promise<{ms: number, code: string | null}>}
 */
function call(req) {
  const began = performance.now();
  return new Promise((resolve) => {
    client.Render(req, { deadline: Date.now() + 2000 }, (/** @type {any} */ err) => {
      resolve({ ms: performance.now() - began, code: err ? (err.metadata?.get('ssr-error')?.[0] ?? String(err.code)) : null });
    });
  });
}

/** The mix: `leak` share of the leaky page, the rest home and product. */
const mixedRequest = () => (Math.random() < leakShare ? { page: 'leaks', url: '/', params: {} } : normalRequest());

// Capacity: closed loop, 4 callers per thread, the same mix.
let done = 0;
const capUntil = performance.now() + Number(args['capacity-seconds']) * 1000;
await Promise.all(Array.from({ length: 4 * Number(args.threads) }, async () => {
  while (performance.now() < capUntil) {
    await call(mixedRequest());
    done++;
  }
}));
const capacity = done / Number(args['capacity-seconds']);
const rate = args.rate ? Number(args.rate) : Math.round(capacity * Number(args.share));

// Open model: requests start on schedule whatever the answers do.
/** @type {Array<{page: string, ms: number, code: string | null}>} */
const results = [];
/** @type {Promise<void>[]} */
const pending = [];
const began = performance.now();
let sent = 0;
const total = Math.round(rate * durationS);
await new Promise((resolve) => {
  const tick = () => {
    const due = Math.min(total, Math.floor(((performance.now() - began) / 1000) * rate));
    while (sent < due) {
      sent++;
      const req = mixedRequest();
      pending.push(call(req).then((r) => { results.push({ page: req.page, ...r }); }));
    }
    if (sent >= total) resolve(undefined);
    else setTimeout(tick, 1);
  };
  tick();
});
await Promise.all(pending);
const elapsedS = (performance.now() - began) / 1000;
const metrics = await (await fetch(`http://${httpAddress}/metrics`)).text();
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
client.close();
rmSync(dir, { recursive: true, force: true });

/** @param {string} name */
const metricLines = (name) => metrics.split('\n').filter((l) => l.startsWith(name));
/** @param {number[]} sorted @param {number} q */
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const normal = results.filter((r) => r.page !== 'leaks');
const okMs = normal.filter((r) => r.code === null).map((r) => r.ms).sort((a, b) => a - b);
/** @type {Record<string, number>} */
const failures = {};
for (const r of results) if (r.code) failures[`${r.page}:${r.code}`] = (failures[`${r.page}:${r.code}`] ?? 0) + 1;
// GC pause p99 from the histogram (upper bucket bound), all kinds together.
/** @type {Map<number, number>} */
const gcBuckets = new Map();
for (const line of metricLines('renderer_gc_pause_seconds_bucket')) {
  const le = /le="([^"]+)"/.exec(line)?.[1];
  if (le && le !== '+Inf') gcBuckets.set(Number(le), (gcBuckets.get(Number(le)) ?? 0) + Number(line.split(' ').at(-1)));
}
const gcCount = metricLines('renderer_gc_pause_seconds_count').reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
const gcP99 = [...gcBuckets].sort((a, b) => a[0] - b[0]).find(([, n]) => n >= 0.99 * gcCount)?.[0];
const gcMax = Math.max(...metricLines('renderer_gc_pause_max_seconds').map((l) => Number(l.split(' ').at(-1))));
const fmt = (/** @type {number | undefined} */ n) => (n === undefined ? null : Math.round(n * 10) / 10);
console.log(JSON.stringify({
  recycle,
  threads: Number(args.threads),
  capacityRps: Math.round(capacity),
  offeredRps: rate,
  achievedRps: Math.round(results.length / elapsedS),
  requests: results.length,
  normalMs: { p50: fmt(quantile(okMs, 0.5)), p99: fmt(quantile(okMs, 0.99)), max: fmt(okMs.at(-1)) },
  failures,
  failedNormal: normal.filter((r) => r.code).length,
  retirements: metricLines('renderer_worker_retirements_total{').map((l) => l.replace('renderer_worker_retirements_total', '')),
  exits: metricLines('renderer_worker_exits_total{').map((l) => l.replace('renderer_worker_exits_total', '')),
  gcPauseMs: { p99BucketUpperBound: gcP99 === undefined ? null : gcP99 * 1000, max: fmt(gcMax * 1000), count: gcCount },
}, null, 2));
