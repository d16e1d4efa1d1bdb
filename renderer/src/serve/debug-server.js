// The debug listener: loopback only by convention
// (127.0.0.1:9102), off unless `debug_listen` is set. Worker stats, and heap
// snapshots of one worker written to `heap_snapshot_dir`.
import Fastify from 'fastify';
import { SnapshotError } from '../ops/heap-snapshot.js';

/** @import { Logger } from 'pino' */
/** @import { RenderPool } from '../pool/pool.js' */

/**
 * @typedef {object} DebugDeps
 * @property {Pick<RenderPool, 'workers' | 'stats' | 'heapSnapshot'>} pool
 * @property {string} heapSnapshotDir empty: snapshots are off (404)
 * @property {Logger} [logger]
 */

/**
 * `GET /debug/workers`: JSON, one entry per live worker (id, state
 * warming/ready/retiring, renders, heap used/limit, external memory, last GC
 * pauses) and the pool's stats. `POST /debug/heap-snapshot?worker=N`: that
 * worker writes `<id>-<timestamp>.heapsnapshot` into heapSnapshotDir; 201
 * with the path, 404 when snapshots are off or there is no such warm worker,
 * 409 when it is retiring or already writing one.
 * @param {DebugDeps} deps
 */
export function build({ pool, heapSnapshotDir, logger }) {
  const app = Fastify({ loggerInstance: logger?.child({ listener: 'debug' }, { level: 'warn' }) });

  app.get('/debug/workers', async () => ({ stats: pool.stats(), workers: pool.workers() }));

  app.post('/debug/heap-snapshot', async (request, reply) => {
    if (heapSnapshotDir === '') {
      reply.code(404);
      return { error: 'heap snapshots are off: set renderer.heap_snapshot_dir to a writable volume with a size limit' };
    }
    const raw = /** @type {{worker?: string}} */ (request.query).worker;
    const id = Number(raw);
    if (raw === undefined || !Number.isSafeInteger(id)) {
      reply.code(400);
      return { error: 'want ?worker=<id> (ids: GET /debug/workers)' };
    }
    try {
      const began = performance.now();
      const path = await pool.heapSnapshot(id, heapSnapshotDir);
      logger?.info({ workerId: id, path, tookMs: Math.round(performance.now() - began) }, 'heap snapshot written');
      reply.code(201);
      return { worker: id, path };
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      reply.code(err.status);
      return { error: err.message };
    }
  });

  return app;
}
