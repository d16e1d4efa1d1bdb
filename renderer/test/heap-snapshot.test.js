// Both ends of the heap-snapshot exchange over a control port, in one thread:
// the file is written and its path returned; a directory that cannot be
// created, a write that fails and a worker that exits first are errors with a
// reason (500 on the debug listener).
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { SnapshotError, requestHeapSnapshot } from '../src/ops/heap-snapshot.js';
import { answerHeapSnapshots } from '../src/worker/heap-snapshot-writer.js';
import { tempDir } from './helpers.js';

/** A control channel answered in this thread, and a stand-in for its worker. */
function target(/** @type {import('node:test').TestContext} */ t) {
  const { port1, port2 } = new MessageChannel();
  t.after(() => port1.close());
  answerHeapSnapshots(port1, 7);
  const worker = /** @type {import('node:worker_threads').Worker} */ (/** @type {unknown} */ (new EventEmitter()));
  return { id: 7, worker, control: port2 };
}

test('writes <thread id>-<time>.heapsnapshot into a directory it creates', async (t) => {
  const dir = join(tempDir(t), 'snapshots', 'nested');
  const path = await requestHeapSnapshot(target(t), dir);
  assert.match(path, /\/7-\d{4}-\d\d-\d\dT[\d-]+Z\.heapsnapshot$/);
  assert.ok(statSync(path).size > 1024);
});

test('a directory it cannot create, a write that fails, a worker that exits first', async (t) => {
  const file = join(tempDir(t), 'not-a-dir');
  writeFileSync(file, '');
  await assert.rejects(requestHeapSnapshot(target(t), join(file, 'x')), (err) => err instanceof SnapshotError
    && err.status === 500 && /cannot create .*not-a-dir\/x: ENOTDIR/.test(err.message));

  // The worker's end answers a failed write with its reason.
  const { port1, port2 } = new MessageChannel();
  t.after(() => port1.close());
  answerHeapSnapshots(port1, 7);
  port2.postMessage({ type: 'heap-snapshot', dir: join(file, 'x'), id: 1 });
  const [reply] = await once(port2, 'message');
  port2.close();
  assert.equal(reply.id, 1);
  assert.equal(reply.ok, false);
  assert.match(reply.message, /ENOTDIR/);

  const gone = target(t);
  gone.control.close(); // nobody answers
  const pending = requestHeapSnapshot(gone, tempDir(t));
  setImmediate(() => gone.worker.emit('exit', 1));
  await assert.rejects(pending, (err) => err instanceof SnapshotError && err.status === 500 && /exited/.test(err.message));
});
