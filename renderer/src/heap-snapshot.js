// Heap snapshots of one worker, both ends of the exchange: the main thread
// asks over the worker's control port (Piscina owns parentPort) and the worker
// writes the file between tasks. Asked for by POST /debug/heap-snapshot
// (debug-server.js) and by the pool itself for a worker retiring near its heap
// cap (heap_snapshot_near_limit).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

/** @import { MessagePort, Worker } from 'node:worker_threads' */

/**
 * A request on a worker's control port.
 * @typedef {{type: 'heap-snapshot', dir: string, id: number}} SnapshotRequest
 * @typedef {{id: number, ok: true, path: string} | {id: number, ok: false, message: string}} SnapshotReply
 */

/** A heap snapshot request that cannot be served; `status` is the HTTP one. */
export class SnapshotError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.name = 'SnapshotError';
    this.status = status;
  }
}

let lastRequestId = 0;

/**
 * Has a worker write a heap snapshot into `dir` (created when missing).
 * Resolves with the file's path; rejects with a SnapshotError when the worker
 * fails to write it or exits first. The worker takes no task meanwhile: that
 * is the caller's to ensure.
 * @param {{id: number, worker: Worker, control: MessagePort}} target
 * @param {string} dir
 * @returns {Promise<string>}
 */
export async function requestHeapSnapshot({ id, worker, control }, dir) {
  const requestId = ++lastRequestId;
  /** @type {PromiseWithResolvers<string>} */
  const { promise, resolve, reject } = Promise.withResolvers();
  // The worker may exit while the directory is made, before anything awaits this.
  promise.catch(() => {});
  /** @param {SnapshotReply} reply */
  const onReply = (reply) => {
    if (reply?.id !== requestId) return;
    if (reply.ok) resolve(reply.path);
    else reject(new SnapshotError(500, `worker ${id}: ${reply.message}`));
  };
  const onExit = () => reject(new SnapshotError(500, `worker ${id} exited before writing its snapshot`));
  control.on('message', onReply);
  worker.once('exit', onExit);
  try {
    await mkdir(dir, { recursive: true }).catch((/** @type {Error} */ err) => {
      throw new SnapshotError(500, `cannot create ${dir}: ${err.message}`);
    });
    /** @type {SnapshotRequest} */
    const request = { type: 'heap-snapshot', dir, id: requestId };
    control.postMessage(request);
    return await promise;
  } finally {
    control.off('message', onReply);
    worker.off('exit', onExit);
    // Listening ref'd the port; an idle pool must not keep the process up.
    control.unref();
  }
}

/**
 * The worker's end: answers snapshot requests arriving on `port` with
 * `<threadId>-<timestamp>.heapsnapshot` written into the asked directory.
 * @param {MessagePort} port
 * @param {number} threadId
 */
export function answerHeapSnapshots(port, threadId) {
  port.on('message', (/** @type {SnapshotRequest} */ request) => {
    if (request?.type !== 'heap-snapshot') return;
    /** @type {SnapshotReply} */
    let reply;
    try {
      const path = join(request.dir, `${threadId}-${new Date().toISOString().replace(/[:.]/g, '-')}.heapsnapshot`);
      writeHeapSnapshot(path);
      reply = { id: request.id, ok: true, path };
    } catch (err) {
      reply = { id: request.id, ok: false, message: /** @type {Error} */ (err).message };
    }
    port.postMessage(reply);
  });
}
