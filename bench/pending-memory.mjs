// What one render waiting for data keeps in a worker's heap: N renders of the demo's
// streamed reviews page held at their Go-deferred reviews (sent, never settled), the
// heap measured after a full GC before and after. The estimate of a page the workers have
// not yet measured, and max_pending_per_worker's auto default, rest on it
// (renderer/src/pool/pending-memory.js PENDING_RENDER_GUESS_BYTES).
// Usage: node --expose-gc bench/pending-memory.mjs [--renders 500] [--bundle app/dist/server/server.js]
import { MessageChannel } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { preparePage } from '../renderer/src/worker/render-page.js';
import { streamPage } from '../renderer/src/worker/stream.js';

const { values: opts } = parseArgs({ options: { renders: { type: 'string', default: '500' }, bundle: { type: 'string', default: 'app/dist/server/server.js' } } });
const gc = /** @type {(() => void) | undefined} */ (globalThis.gc);
if (!gc) throw new Error('run with node --expose-gc');
const app = await import(pathToFileURL(resolve(opts.bundle)).href);
const n = Number(opts.renders);

const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** One render held at its pending reviews: resolves at its shell. */
async function hold(id) {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', () => {});
  const task = { page: 'product-reviews', url: `/products/${id}/reviews`, params: { id: String(id) }, variants: {}, deferred: [{ name: 'reviews' }] };
  const prepared = await preparePage(app, task);
  const shell = new Promise((ready) => port1.once('message', ready));
  const done = streamPage(app, prepared, port2, (head) => ({ head, status: 200, headers: [], cache: prepared.cache, page: prepared.page, timing: {} }), { maxBytes: Infinity });
  await shell;
  return { port1, port2, done };
}

for (let i = 0; i < 50; i++) await hold(i % 100 + 1); // warm the JIT and React's caches
await new Promise((r) => setTimeout(r, 50));
const before = heapAfterGc();
const held = [];
for (let i = 0; i < n; i++) held.push(await hold(i % 100 + 1));
await new Promise((r) => setTimeout(r, 50));
const after = heapAfterGc();
const perRender = (after - before) / n;
console.log(JSON.stringify({ renders: n, heapBeforeBytes: before, heapAfterBytes: after, bytesPerPendingRender: Math.round(perRender) }));
for (const h of held) { h.port1.close(); h.port2.close(); }
process.exit(0);
