// The "just run Node" contender: fastify + Piscina rendering the demo page in worker
// threads, on the same pinned Node, packages (the renderer's), threads and bundle as the
// stack. No gRPC hop, no cache: what a Node shop would write.
//
// With --main-thread, no pool: fastify renders on its own thread, the same code as the
// workers' (render.mjs), which is how React Router and Next.js serve. A render that waits
// (a Suspense boundary on slow data) then costs the event loop nothing while it waits, and
// every render takes the one thread's CPU in turn.
//
// With --db, it does the data work a Node shop would: GET / reads its listing from the shop's
// SQLite database (node:sqlite, on the main thread, where a fastify handler runs) and hands
// the props to the worker, as the Go shop hands them to the renderer.
//
// With --compress (make bench's compressed mode), it compresses as a fastify user would:
// @fastify/compress registered with its defaults (below).
//
// GET /products/{id}/reviews streams, as the edge's route does: React's renderToPipeableStream
// in the worker, each of its flushes moved to this thread over a port of the task's own and
// written to the reply as it comes. (With --compress, @fastify/compress's zlib stream would hold
// those flushes back: make bench streams in identity only.)
//
//   renderer/node_modules/.bin/node bench/node-baseline/server.mjs [--port 18083] [--threads 2 | --main-thread]
//     [--db shop.db] [--compress] [--bundle app/dist/server/server.js] [--manifest app/dist/client/manifest.json]
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { MessageChannel } from 'node:worker_threads';
import { loadApp } from './render.mjs';

const { values: opts } = parseArgs({
  options: {
    port: { type: 'string', default: '18083' },
    threads: { type: 'string', default: '2' },
    bundle: { type: 'string', default: 'app/dist/server/server.js' },
    manifest: { type: 'string', default: 'app/dist/client/manifest.json' },
    db: { type: 'string' },
    compress: { type: 'boolean', default: false },
    'main-thread': { type: 'boolean', default: false },
  },
});
// The renderer's lockfile pins fastify and piscina: use exactly those.
const require = createRequire(new URL('../../renderer/package.json', import.meta.url));
const fastify = require('fastify');
const { Piscina } = require('piscina');

/** @import { StreamMessage } from './render.mjs' */

const files = { bundle: resolve(opts.bundle), manifest: resolve(opts.manifest) };
const mainThread = opts['main-thread'];
const threads = mainThread ? 0 : Number(opts.threads);
const pool = mainThread ? undefined : new Piscina({
  filename: new URL('./worker.mjs', import.meta.url).href,
  minThreads: threads,
  maxThreads: threads,
  idleTimeout: Infinity,
  workerData: files,
});
const app = mainThread ? await loadApp(files) : undefined;
/** @type {(task: {url: string, props?: Record<string, unknown>}) => Promise<{status: number, html: string}>} */
const render = app ? app.render : (task) => pool.run(task);

const server = fastify();
if (opts.compress) {
  // @fastify/compress 9.2.0's defaults, which a user gets from `app.register(compress)`:
  // encodings zstd, br, gzip, deflate in that order of preference (zstd where node:zlib has
  // it, as Node 26's does), so a browser's `gzip, deflate, br, zstd` gets zstd; zstd at
  // node:zlib's default level (3), brotli at quality 4, gzip and deflate at zlib's default
  // level (6); bodies under 1 KiB are left alone; bodies up to `syncThreshold` (64 KiB
  // divided by 8 for every core past the first, at least 4 KiB: 8 KiB on 2 cores) are
  // compressed synchronously on the main thread, larger ones (the pages here, 140-180 KB)
  // are streamed through libuv's thread pool.
  await server.register(require('@fastify/compress'));
}
server.get('/healthz', async () => ({ status: 'ok' }));
const listing = opts.db === undefined ? undefined : openListing(opts.db);
server.get('/*', async (req, reply) => {
  const props = listing && new URL(req.url, 'http://x').pathname === '/' ? listing(req.query) : undefined;
  const { status, html } = await render({ url: req.url, props });
  // Returning the reply tells fastify the handler sent it; without it, an async handler that
  // resolves to undefined before an asynchronous onSend hook (@fastify/compress's stream) has
  // finished gets its reply sent again, empty.
  return reply.code(status).type('text/html; charset=utf-8').send(html);
});
server.get('/products/:id/reviews', (req, reply) => {
  // No backpressure: what the socket does not take at once waits here, as grpc-js buffers it
  // in the renderer; a page is small.
  const body = new Readable({ read() {} });
  let started = false;
  /**
   * @param {StreamMessage} message
   * @returns {boolean} whether it was the last
   */
  const write = ({ bytes, status, end }) => {
    if (status !== undefined) {
      started = true;
      reply.code(status).type('text/html; charset=utf-8').send(body);
    }
    body.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    if (end) body.push(null);
    return end;
  };
  /** @param {unknown} err */
  const fail = (err) => {
    if (started) body.destroy(/** @type {Error} */ (err));
    else reply.send(err);
  };
  const task = { url: req.url, params: /** @type {Record<string, string>} */ (req.params) };
  if (app) {
    app.stream(task, write).catch(fail);
    return;
  }
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (message) => write(message) && port1.close());
  pool.run({ ...task, port: port2 }, { name: 'stream', transferList: [port2] }).catch((err) => {
    port1.close();
    fail(err);
  });
});
const address = await server.listen({ host: '127.0.0.1', port: Number(opts.port) });
// An exit, not death by signal, so that --cpu-prof (BASELINE_NODE_FLAGS) writes its profile.
process.on('SIGTERM', () => process.exit(0));
console.log(JSON.stringify({ msg: 'listening', address, threads, mainThread, compress: opts.compress }));

/**
 * The listing page's props from the shop's database (shop/catalog), as the Go shop builds them.
 * @param {string} path
 */
function openListing(path) {
  const { DatabaseSync } = require('node:sqlite');
  const db = new DatabaseSync(path, { readOnly: true });
  const pageSize = 100;
  const pageCount = /** @type {{n: number}} */ (db.prepare('SELECT count(*) AS n FROM products').get()).n / pageSize;
  const select = db.prepare(`SELECT id, sku, name, brand, description, price_cents, list_price_cents, currency, stock,
    ships_in_days, rating, review_count, tags, color FROM products WHERE id BETWEEN ? AND ? ORDER BY id`);
  /** @param {Record<string, string>} query */
  return (query) => {
    const n = Number(query.page);
    const page = Number.isInteger(n) && n >= 1 && n <= pageCount && String(n) === query.page ? n : 1;
    const first = 1 + (page - 1) * pageSize;
    const products = select.all(first, first + pageSize - 1).map((r) => ({
      id: r.id, sku: r.sku, name: r.name, brand: r.brand, description: r.description, priceCents: r.price_cents,
      listPriceCents: r.list_price_cents, currency: r.currency, stock: r.stock, shipsInDays: r.ships_in_days,
      rating: r.rating, reviewCount: r.review_count, tags: JSON.parse(String(r.tags)), color: r.color,
    }));
    return { page, pageCount, products };
  };
}
