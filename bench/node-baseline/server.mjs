// The "just run Node" contender: fastify + Piscina rendering the demo page in worker
// threads, on the same pinned Node, packages (the renderer's), threads and bundle as the
// stack. No gRPC hop, no cache: what a Node shop would write.
//
//   renderer/node_modules/.bin/node bench/node-baseline/server.mjs [--port 18083] [--threads 2]
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    port: { type: 'string', default: '18083' },
    threads: { type: 'string', default: '2' },
    bundle: { type: 'string', default: 'app/dist/server/server.js' },
  },
});
// The renderer's lockfile pins fastify and piscina: use exactly those.
const require = createRequire(new URL('../../renderer/package.json', import.meta.url));
const fastify = require('fastify');
const { Piscina } = require('piscina');

const threads = Number(opts.threads);
const pool = new Piscina({
  filename: new URL('./worker.mjs', import.meta.url).href,
  minThreads: threads,
  maxThreads: threads,
  idleTimeout: Infinity,
  workerData: { bundle: resolve(opts.bundle) },
});

const app = fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
app.get('/*', async (req, reply) => {
  const { status, html } = await pool.run({ url: req.url });
  reply.code(status).type('text/html; charset=utf-8').send(html);
});
const address = await app.listen({ host: '127.0.0.1', port: Number(opts.port) });
console.log(JSON.stringify({ msg: 'listening', address, threads }));
