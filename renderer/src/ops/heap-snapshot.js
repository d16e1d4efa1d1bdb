// Heap snapshots of one worker, the main thread's end of the exchange: it asks
// over the worker's control port (Piscina owns parentPort) and the worker
// writes the file between tasks (worker/heap-snapshot-writer.js). Asked for by
// POST /debug/heap-snapshot (serve/debug-server.js) and by the pool itself for
// a worker retiring near its heap cap (heap_snapshot_near_limit).
import { mkdir } from 'node:fs/promises';

/** @import { MessagePort, Worker } from 'node:worker_threads' */
/** @import { SnapshotReply, SnapshotRequest } from '../threads/messages.js' */
/** @import { WorkerState } from '../pool/types.js' */

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
 * Has the pool's worker `state` write a heap snapshot into `dir`, taking no
 * task meanwhile (its `snapshotting`); `dispatch` gives it tasks again after.
 * @param {WorkerState} state
 * @param {string} dir
 * @param {() => void} dispatch
 * @returns {Promise<string>}
 */
export async function snapshotWorker(state, dir, dispatch) {
  state.snapshotting = true;
  try {
    return await requestHeapSnapshot(state, dir);
  } finally {
    state.snapshotting = false;
    dispatch();
  }
}

/**
 * snapshotWorker for POST /debug/heap-snapshot: worker `id` must be warm, not
 * retiring, and not writing one already.
 * @param {WorkerState | undefined} state
 * @param {number} id
 * @param {string} dir
 * @param {() => void} dispatch
 * @returns {Promise<string>}
 */
export async function snapshotWarmWorker(state, id, dir, dispatch) {
  if (!state) throw new SnapshotError(404, `no warm worker ${id} (see /debug/workers)`);
  if (state.snapshotting) throw new SnapshotError(409, `worker ${id} is already writing a heap snapshot`);
  if (state.state !== 'ready') throw new SnapshotError(409, `worker ${id} is retiring`);
  return snapshotWorker(state, dir, dispatch);
}
