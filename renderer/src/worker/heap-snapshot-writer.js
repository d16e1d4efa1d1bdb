// A worker's end of the heap-snapshot exchange (ops/heap-snapshot.js asks):
// requests arrive on the worker's control port (Piscina owns parentPort) and
// the file is written between tasks.
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

/** @import { MessagePort } from 'node:worker_threads' */
/** @import { SnapshotReply, SnapshotRequest } from '../threads/messages.js' */

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
